"""Running git for the source: credentials from files, deadlines, redaction.

Every git process runs in the one environment of ``syncer.gitenv`` (nothing of the caller's
configuration, folder or ``GIT_*`` variables). Secrets reach git only through the environment of the
one git process that needs them (``GIT_SSH_COMMAND`` for the key file, ``GIT_CONFIG_*`` for the HTTPS
header), never through argv, and every message built from git's output goes through ``redact`` first.
Git's exit status is part of every answer: a non-zero exit is a ``SourceError``, whatever git printed
before failing.
"""

from __future__ import annotations

import base64
import os
import re
import shlex
from collections.abc import Collection, Sequence
from pathlib import Path
from urllib.parse import unquote, urlsplit

from syncer.config import GitCredentials
from syncer.config.loading import read_agent_file
from syncer.errors import ConfigError, RefusedObjects, SourceError
from syncer.gitenv import GitEnvOptions, PrivateGit

_URL_USERINFO = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)[^\s/?#]*@")
_URL_QUERY = re.compile(r"(?P<url>[A-Za-z][A-Za-z0-9+.-]*://[^\s?#]*)[?#][^\s'\"]*")
# Well-known access token shapes (GitHub, GitLab), wherever they appear (a path, a header).
_TOKENS = re.compile(
    r"\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}|glpat-[A-Za-z0-9_-]{16,})"
)
_STDERR_LINES = 6
# What git says when its fsck checks of received objects (transfer.fsckObjects) refuse one:
# "error: object <id>: <msg-id>: <message>", then "fatal: fsck error in packed object".
_FSCK_OBJECT = re.compile(r"^error: object ([0-9a-f]{40,64}): (\w+): (.*)$", re.MULTILINE)
_FSCK_FAILED = re.compile(r"fsck error in pack(?:ed)? objects?")


def redact(text: str, secrets: Sequence[str] = ()) -> str:
    """``text`` without the given secrets, without credentials or query strings of URLs, and without
    well-known access token shapes."""
    for secret in sorted((s for s in secrets if s), key=len, reverse=True):
        text = text.replace(secret, "***")
    text = _URL_USERINFO.sub(r"\g<scheme>***@", text)
    text = _URL_QUERY.sub(r"\g<url>?***", text)
    return _TOKENS.sub("***", text)


def url_secrets(url: str) -> tuple[str, ...]:
    """The parts of ``url`` that may be secret: its user info (raw and decoded, whole and the
    password alone) and its query string. ``user:pa@ss@host`` takes everything up to the last ``@``."""
    scheme, sep, rest = url.partition("://")
    if not sep or not scheme:
        return ()
    found: list[str] = []
    if "@" in rest:
        userinfo = rest.rsplit("@", 1)[0]
        password = userinfo.partition(":")[2]
        found += [userinfo, unquote(userinfo), password, unquote(password)]
    try:
        query = urlsplit(url).query
    except ValueError:
        query = ""
    if query:
        found += [query, unquote(query)]
    return tuple(s for s in found if len(s) >= 3)


def check_argument(value: str, what: str) -> str:
    """``value`` when it cannot be taken for an option by git; a ``SourceError`` otherwise."""
    if not value.strip():
        raise SourceError(f"the {what} is empty")
    if value.lstrip().startswith("-"):
        raise SourceError(
            f"the {what} {redact(value)!r} starts with '-': refusing it (it would be an option)"
        )
    if any(ch in value for ch in "\0\r\n"):
        raise SourceError(f"the {what} holds a control character")
    return value


class GitRunner:
    """Runs git commands with the source's credentials and a deadline; failures become ``SourceError``.

    ``local`` sources (a path or ``file://``) never fetch lazily: a repository on this machine is
    cloned whole, so nothing of it (a promisor remote of its own) is ever asked for objects later.
    """

    def __init__(self, credentials: GitCredentials, *, timeout: float, url: str, local: bool = False) -> None:
        self._credentials = credentials
        self._timeout = timeout
        self._url = url
        self._local = local

    @property
    def safe_url(self) -> str:
        return redact(self._url, url_secrets(self._url))

    def run(self, args: Sequence[str], *, cwd: Path | None, action: str) -> str:
        """stdout of ``git <args>``; ``action`` says what was being done, for the error message."""
        return self.run_status(args, cwd=cwd, action=action)[1]

    def run_status(
        self,
        args: Sequence[str],
        *,
        cwd: Path | None,
        action: str,
        accept: Collection[int] = (0,),
        lazy: bool = True,
    ) -> tuple[int, str]:
        """The exit status and stdout of ``git <args>``; a status outside ``accept`` is a ``SourceError``.
        With ``lazy`` off, git may not fetch missing objects of a partial clone on demand."""
        options, secrets = self._options(lazy=lazy)
        secrets = (*secrets, *url_secrets(self._url))
        what = redact(f"{action} ({self._url})", secrets)
        with PrivateGit() as private:
            done = private.run(["git", *args], options=options, repo=cwd, timeout=self._timeout, action=what)
        if done.returncode not in accept:
            _refuse_objects(done.stderr.decode(errors="replace"))
            detail = redact(_tail(done.stderr), secrets)
            raise SourceError(redact(f"{action} ({self._url}) failed: {detail}", secrets)) from None
        return done.returncode, done.stdout.decode(errors="surrogateescape")

    def _options(self, *, lazy: bool = True) -> tuple[GitEnvOptions, tuple[str, ...]]:
        creds = self._credentials
        connect = max(1, round(self._timeout))
        # -F: no ssh_config of the user or the machine (a ProxyCommand or Match exec starts programs).
        ssh = ["ssh", "-F", os.devnull, "-o", "BatchMode=yes", "-o", f"ConnectTimeout={connect}"]
        if creds.ssh_key_file is not None:
            ssh += ["-i", str(creds.ssh_key_file), "-o", "IdentitiesOnly=yes"]
        if creds.known_hosts_file is not None:
            ssh += ["-o", f"UserKnownHostsFile={creds.known_hosts_file}", "-o", "StrictHostKeyChecking=yes"]
        config = [
            ("http.lowSpeedLimit", "1000"),
            ("http.lowSpeedTime", str(connect)),
            ("transfer.fsckObjects", "true"),
        ]
        secrets: tuple[str, ...] = ()
        if creds.token_file is not None:
            token = _read_token(creds.token_file)
            basic = base64.b64encode(f"{creds.token_user}:{token}".encode()).decode()
            config.append(("http.extraHeader", f"Authorization: Basic {basic}"))
            secrets = (token, basic)
        options = GitEnvOptions(
            lazy_fetch=lazy and not self._local,
            config=tuple(config),
            variables=(("GIT_SSH_COMMAND", shlex.join(ssh)),),
        )
        return options, secrets


def _refuse_objects(stderr: str) -> None:
    """A ``RefusedObjects`` when git failed because its fsck checks refused received objects."""
    if not _FSCK_FAILED.search(stderr):
        return
    found = [f"object {m[1]}: {m[2]}: {m[3].strip()}" for m in _FSCK_OBJECT.finditer(stderr)]
    raise RefusedObjects("; ".join(found[:_STDERR_LINES]) or "git's fsck checks refused a received object")


def _read_token(path: Path) -> str:
    """The token of ``path``, read through the strict reader at every use (a FIFO, a device or a
    file too large put there after start is refused at once, never waited on)."""
    try:
        token = read_agent_file(path).decode("utf-8").strip()
    except ConfigError as err:
        raise SourceError(f"cannot read the token file: {err}") from None
    except UnicodeDecodeError:
        raise SourceError(f"cannot read the token file {path}: not UTF-8 text") from None
    if not token or any(ch in token for ch in "\r\n"):
        raise SourceError(f"the token file {path} must hold one non-empty line")
    return token


def _tail(stderr: bytes) -> str:
    text = stderr.decode(errors="replace").strip()
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return " | ".join(lines[-_STDERR_LINES:]) or "no message from git"
