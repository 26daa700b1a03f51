"""Running git for the source: a pinned environment, credentials from files, deadlines, redaction.

Secrets reach git only through the environment of the one git process that needs them
(``GIT_SSH_COMMAND`` for the key file, ``GIT_CONFIG_*`` for the HTTPS header), never through argv,
and every message built from git's output goes through ``redact`` first.
"""

from __future__ import annotations

import base64
import re
import shlex
from collections.abc import Sequence
from pathlib import Path

from git import Git
from git.exc import GitCommandError

from syncer.config import GitCredentials
from syncer.errors import SourceError

_URL_USERINFO = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)[^/@\s]+@")
_STDERR_LINES = 6


def redact(text: str, secrets: Sequence[str] = ()) -> str:
    """``text`` without the given secrets and without credentials embedded in URLs."""
    for secret in secrets:
        if secret:
            text = text.replace(secret, "***")
    return _URL_USERINFO.sub(r"\g<scheme>***@", text)


class GitRunner:
    """Runs git commands with the source's credentials and a deadline; failures become ``SourceError``."""

    def __init__(self, credentials: GitCredentials, *, timeout: float, url: str) -> None:
        self._credentials = credentials
        self._timeout = timeout
        self._url = url

    @property
    def safe_url(self) -> str:
        return redact(self._url)

    def run(self, args: Sequence[str], *, cwd: Path | None, action: str) -> str:
        """stdout of ``git <args>``; ``action`` says what was being done, for the error message."""
        env, secrets = self._environment()
        try:
            output = Git(cwd).execute(
                ["git", *args],
                env=env,
                kill_after_timeout=self._timeout,
                strip_newline_in_stdout=False,
            )
        except GitCommandError as exc:
            detail = redact(_tail(exc.stderr), secrets)
            if "did not complete in" in detail or "timed out" in detail:
                detail = f"no answer within {self._timeout:g}s"
            message = redact(f"{action} ({self._url}) failed: {detail}", secrets)
            raise SourceError(message) from _redacted_cause(exc, secrets)
        return str(output)

    def _environment(self) -> tuple[dict[str, str], tuple[str, ...]]:
        creds = self._credentials
        connect = max(1, round(self._timeout))
        ssh = ["ssh", "-o", "BatchMode=yes", "-o", f"ConnectTimeout={connect}"]
        if creds.ssh_key_file is not None:
            ssh += ["-i", str(creds.ssh_key_file), "-o", "IdentitiesOnly=yes"]
        if creds.known_hosts_file is not None:
            ssh += ["-o", f"UserKnownHostsFile={creds.known_hosts_file}", "-o", "StrictHostKeyChecking=yes"]
        config = [("http.lowSpeedLimit", "1000"), ("http.lowSpeedTime", str(connect))]
        secrets: tuple[str, ...] = ()
        if creds.token_file is not None:
            token = _read_token(creds.token_file)
            basic = base64.b64encode(f"{creds.token_user}:{token}".encode()).decode()
            config.append(("http.extraHeader", f"Authorization: Basic {basic}"))
            secrets = (token, basic)
        env = {
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": "/dev/null",
            "GIT_TERMINAL_PROMPT": "0",
            "GIT_ASKPASS": "",
            "SSH_ASKPASS": "",
            "GIT_SSH_COMMAND": shlex.join(ssh),
            "GIT_TRACE_REDACT": "1",
            "GIT_CURL_VERBOSE": "0",
            "GIT_TRACE_CURL": "0",
            "GIT_TRACE_PACKET": "0",
            "GIT_TRACE": "0",
            "GIT_CONFIG_PARAMETERS": "",
            "GIT_CONFIG_COUNT": str(len(config)),
        }
        for index, (key, value) in enumerate(config):
            env[f"GIT_CONFIG_KEY_{index}"] = key
            env[f"GIT_CONFIG_VALUE_{index}"] = value
        return env, secrets


def _read_token(path: Path) -> str:
    try:
        token = path.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError) as exc:
        raise SourceError(f"cannot read the token file {path}: {type(exc).__name__}") from None
    if not token or any(ch in token for ch in "\r\n"):
        raise SourceError(f"the token file {path} must hold one non-empty line")
    return token


def _tail(stderr: object) -> str:
    text = stderr.decode(errors="replace") if isinstance(stderr, bytes) else str(stderr or "")
    text = text.strip().removeprefix("stderr:").strip().strip("'")
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return " | ".join(lines[-_STDERR_LINES:]) or "no message from git"


def _redacted_cause(exc: GitCommandError, secrets: Sequence[str]) -> SourceError:
    """The cause kept for tracebacks, as text with the secrets removed (git's error holds argv and stderr)."""
    return SourceError(redact(str(exc), secrets))
