"""The one environment every git process of syncer runs in. [I/O]

Owns: the private folder a git process runs from (an empty working directory, an empty ``HOME`` and
``XDG_CONFIG_HOME``, an empty template folder), the variables it gets and the settings pinned for it,
and running it under a deadline. Nothing of the caller reaches git: no system or global
configuration (``GIT_CONFIG_NOSYSTEM``, ``GIT_CONFIG_SYSTEM`` and ``GIT_CONFIG_GLOBAL`` are
``/dev/null``), no ``GIT_*`` variable of the process (config parameters, object directories, traces,
replace refs), none of the caller's other variables but ``PATH``, the temporary folder and proxy and
CA settings, and no repository of the caller's working directory: a command that needs no repository
runs in the empty folder, and ``GIT_CEILING_DIRECTORIES`` keeps git from looking above it.
Replace refs, grafts and hooks are off, the transports are an allow-list, and pinned settings reach
git as ``GIT_CONFIG_*`` variables of the one process (never argv, so a secret header stays out of
process listings).

Must not: hold credentials, know what a command is for (polls, signatures), or read git's output.
Callers (``syncer.source``, ``syncer.verify``) add what their command needs and judge the answer.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from syncer.errors import SourceError

NETWORK_PROTOCOLS = "file:git:ssh:http:https"
"""The transports a source may use (``GIT_ALLOW_PROTOCOL``); ``ext::`` and ``fd::`` never."""
NO_PROTOCOLS = "none"
"""For commands that must not reach any other repository (verification)."""

# The caller's variables a git process may see: where programs are, where temporary files go, and
# how to reach the network (proxies, CA bundles). Everything else is set here or left out.
_PASSED = frozenset(
    {
        "PATH",
        "TMPDIR",
        "http_proxy",
        "https_proxy",
        "all_proxy",
        "no_proxy",
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "ALL_PROXY",
        "NO_PROXY",
        "SSL_CERT_FILE",
        "SSL_CERT_DIR",
    }
)
_DEFAULT_PATH = "/usr/local/bin:/usr/bin:/bin"


@dataclass(frozen=True)
class GitEnvOptions:
    """What one git process may do besides the pinned defaults: the transports it may use,
    whether it may fetch missing objects of a partial clone on demand, settings pinned as
    ``GIT_CONFIG_*`` (after the defaults, so they win) and variables of its own (``GIT_SSH_COMMAND``,
    ``GNUPGHOME``)."""

    protocols: str = NETWORK_PROTOCOLS
    lazy_fetch: bool = True
    config: tuple[tuple[str, str], ...] = ()
    variables: tuple[tuple[str, str], ...] = ()


class PrivateGit:
    """A private folder to run git processes from; use as a context manager (removed at its end).

    ``cwd`` is an empty working directory for commands that need no repository, ``home`` an empty
    ``HOME`` (and ``XDG_CONFIG_HOME`` below it); ``root`` holds them and may hold more of the
    caller's own (a keyring, an allowed-signers file)."""

    def __init__(self, prefix: str = "syncer-git-") -> None:
        self._prefix = prefix
        self._root: Path | None = None

    @property
    def root(self) -> Path:
        if self._root is None:
            raise RuntimeError("PrivateGit is used outside its context")
        return self._root

    @property
    def cwd(self) -> Path:
        return self.root / "cwd"

    @property
    def home(self) -> Path:
        return self.root / "home"

    def __enter__(self) -> PrivateGit:
        root = Path(tempfile.mkdtemp(prefix=self._prefix)).resolve()
        self._root = root
        for folder in ("cwd", "home", "home/.config", "templates"):
            (root / folder).mkdir(mode=0o700)
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._root is not None:
            shutil.rmtree(self._root, ignore_errors=True)
            self._root = None

    def environment(
        self, options: GitEnvOptions = GitEnvOptions(), repo: Path | None = None
    ) -> dict[str, str]:
        """The whole environment of one git process run in ``repo`` (the empty folder when None):
        git looks for a repository there and nowhere above it."""
        ceilings = [str(self.root), *([str(repo.resolve().parent)] if repo is not None else [])]
        env = {k: v for k, v in os.environ.items() if k in _PASSED}
        env.setdefault("PATH", _DEFAULT_PATH)
        config = [("core.hooksPath", os.devnull), ("core.fsmonitor", "false"), *options.config]
        env.update(
            {
                "HOME": str(self.home),
                "XDG_CONFIG_HOME": str(self.home / ".config"),
                "GIT_CONFIG_NOSYSTEM": "1",
                "GIT_CONFIG_SYSTEM": os.devnull,
                "GIT_CONFIG_GLOBAL": os.devnull,
                "GIT_CEILING_DIRECTORIES": os.pathsep.join(ceilings),
                "GIT_TEMPLATE_DIR": str(self.root / "templates"),
                "GIT_TERMINAL_PROMPT": "0",
                "GIT_ASKPASS": "",
                "SSH_ASKPASS": "",
                "GIT_NO_REPLACE_OBJECTS": "1",
                "GIT_GRAFT_FILE": os.devnull,
                "GIT_ALLOW_PROTOCOL": options.protocols,
                "GIT_CONFIG_COUNT": str(len(config)),
                "LC_ALL": "C",
                "LANGUAGE": "C",
                "TZ": "UTC",
            }
        )
        if not options.lazy_fetch:
            env["GIT_NO_LAZY_FETCH"] = "1"
        for index, (key, value) in enumerate(config):
            env[f"GIT_CONFIG_KEY_{index}"] = key
            env[f"GIT_CONFIG_VALUE_{index}"] = value
        env.update(options.variables)
        return env

    def run(
        self,
        argv: Sequence[str],
        *,
        options: GitEnvOptions = GitEnvOptions(),
        repo: Path | None = None,
        stdin: bytes | None = None,
        timeout: float,
        action: str = "",
    ) -> subprocess.CompletedProcess[bytes]:
        """``argv`` (git, or a program git's settings name, such as gpg) run in ``repo`` (the private
        empty folder when None) under ``environment(options)``, with its output captured. Its exit
        status is the caller's to judge. A deadline passed or a program that cannot be started is a
        ``SourceError`` saying what was being done (``action``, by default the program's name)."""
        program = Path(argv[0]).name
        action = action or program
        try:
            return subprocess.run(
                list(argv),
                cwd=repo or self.cwd,
                env=self.environment(options, repo),
                input=stdin,
                stdin=None if stdin is not None else subprocess.DEVNULL,
                capture_output=True,
                timeout=timeout,
                check=False,
            )
        except subprocess.TimeoutExpired:
            raise SourceError(f"{action} failed: no answer within {timeout:g}s") from None
        except OSError as exc:
            raise SourceError(f"{action} failed: cannot run {program}: {exc.strerror or exc}") from None
