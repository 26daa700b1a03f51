"""A pinned environment to run git and gpg in for verification.

Nothing of the user's or the machine's git configuration applies: ``GIT_CONFIG_NOSYSTEM``, empty
global and system config files, a private ``HOME``, and ``-c`` overrides (which win over the
repository's own config too) for every setting that changes how signatures are checked. Replace refs,
grafts and lazy fetches are off, so what git reports is what the object store holds. The keyring
is a fresh ``GNUPGHOME`` holding only the policy's OpenPGP keys, and the SSH allowed-signers file is
written from the policy's SSH signers. The folder is removed when the context ends.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Collection, Sequence
from pathlib import Path
from types import TracebackType

from syncer.config import KeyKind, TrustPolicy
from syncer.errors import ConfigError, SourceError

_DEFAULT_PATH = "/usr/local/bin:/usr/bin:/bin"


def _tool(name: str, path: str) -> str:
    found = shutil.which(name, path=path)
    if found is None:
        raise ConfigError(f"verification needs {name!r}, which is not installed (searched PATH)")
    return found


class PinnedGit:
    """Runs git in ``repo`` under the pinned environment; use as a context manager."""

    def __init__(self, repo: Path, policy: TrustPolicy, *, timeout: float) -> None:
        self.repo = repo
        self.policy = policy
        self.timeout = timeout
        self.fingerprints: frozenset[str] = frozenset()
        self._root: Path | None = None
        self._env: dict[str, str] = {}
        self._overrides: list[str] = []

    def __enter__(self) -> PinnedGit:
        root = Path(tempfile.mkdtemp(prefix="syncer-verify-"))
        self._root = root
        try:
            self._prepare(root)
        except BaseException:
            shutil.rmtree(root, ignore_errors=True)
            raise
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._root is not None:
            shutil.rmtree(self._root, ignore_errors=True)
            self._root = None

    def _prepare(self, root: Path) -> None:
        search_path = os.environ.get("PATH") or _DEFAULT_PATH
        git, gpg, ssh_keygen = (_tool(n, search_path) for n in ("git", "gpg", "ssh-keygen"))
        home, gnupg = root / "home", root / "gnupg"
        home.mkdir()
        gnupg.mkdir(mode=0o700)
        (gnupg / "gpg.conf").write_text("no-autostart\nno-auto-key-retrieve\n", encoding="ascii")
        empty = root / "empty"
        empty.write_text("", encoding="ascii")
        allowed = root / "allowed_signers"
        allowed.write_text(
            "".join(
                f'{s.name} namespaces="git" {s.ssh_key}\n'
                for s in self.policy.signers
                if s.kind is KeyKind.SSH
            ),
            encoding="ascii",
        )
        self._env = {
            "PATH": search_path,
            "HOME": str(home),
            "GNUPGHOME": str(gnupg),
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": str(empty),
            "GIT_CONFIG_SYSTEM": str(empty),
            "GIT_TERMINAL_PROMPT": "0",
            "GIT_NO_REPLACE_OBJECTS": "1",
            "GIT_GRAFT_FILE": str(empty),
            "GIT_NO_LAZY_FETCH": "1",
            "GIT_ALLOW_PROTOCOL": "none",
            "LC_ALL": "C",
            "LANG": "C",
            "TZ": "UTC",
        }
        settings = {
            "gpg.program": gpg,
            "gpg.openpgp.program": gpg,
            "gpg.ssh.program": ssh_keygen,
            "gpg.x509.program": str(empty),
            "gpg.ssh.allowedSignersFile": str(allowed),
            "gpg.ssh.revocationFile": str(empty),
            "gpg.minTrustLevel": "undefined",
            "log.showSignature": "false",
            "core.fsmonitor": "false",
            "core.quotePath": "false",
            "core.hooksPath": str(empty),
        }
        self._overrides = [git]
        for key, value in settings.items():
            self._overrides += ["-c", f"{key}={value}"]
        self.fingerprints = self._import_keys(gpg)

    def _import_keys(self, gpg: str) -> frozenset[str]:
        for index, armored in enumerate(self.policy.openpgp_keys):
            done = self._call([gpg, "--batch", "--no-tty", "--import"], stdin=armored.encode())
            if done.returncode != 0:
                raise ConfigError(f"{self.policy.origin}: openpgpKeys[{index}]: gpg could not import the key")
        listing = self._call([gpg, "--batch", "--no-tty", "--with-colons", "--list-keys"]).stdout.decode()
        fingerprints: set[str] = set()
        want_primary = False
        for line in listing.splitlines():
            fields = line.split(":")
            if fields[0] in {"pub", "sub"}:
                want_primary = fields[0] == "pub"
            elif fields[0] == "fpr" and want_primary and len(fields) > 9:
                fingerprints.add(fields[9].upper())
                want_primary = False
        for signer in self.policy.signers:
            if signer.kind is KeyKind.OPENPGP and signer.fingerprint not in fingerprints:
                raise ConfigError(
                    f"{self.policy.origin}: signer {signer.name!r}: no key among openpgpKeys has the "
                    f"fingerprint {signer.fingerprint}"
                )
        return frozenset(fingerprints)

    def git(
        self, args: Sequence[str], *, accept: Collection[int] = (0,), stdin: bytes | None = None
    ) -> subprocess.CompletedProcess[bytes]:
        """``git <args>`` in the repository; an exit status outside ``accept`` is a ``SourceError``,
        whatever git printed before it failed."""
        done = self._call([*self._overrides, "-C", str(self.repo), *args], stdin=stdin)
        if done.returncode not in accept:
            message = done.stderr.decode(errors="replace").strip().splitlines()
            raise SourceError(
                f"git {args[0]} in {self.repo} failed (exit {done.returncode}): "
                f"{message[-1] if message else 'no message'}"
            )
        return done

    def _call(self, argv: list[str], *, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
        try:
            return subprocess.run(
                argv, input=stdin, capture_output=True, env=self._env, timeout=self.timeout, check=False
            )
        except subprocess.TimeoutExpired as exc:
            raise SourceError(f"{Path(argv[0]).name} did not finish within {self.timeout:g}s") from exc
