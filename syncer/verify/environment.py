"""Git and gpg for verification, in the one git environment (``syncer.gitenv``).

Nothing of the user's or the machine's git configuration applies (see ``syncer.gitenv``), and every
setting that changes how signatures are checked is pinned as a command-line level setting (which wins
over the repository's own config too). No transport is allowed and lazy fetches are off, so what git
reports is what the object store holds. The keyring is a fresh ``GNUPGHOME`` holding only the
policy's OpenPGP keys, and the SSH allowed-signers file is written from the policy's SSH signers,
both in the private folder, which is removed when the context ends.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Collection, Sequence
from pathlib import Path
from types import TracebackType

from syncer.config import KeyKind, TrustPolicy
from syncer.errors import ConfigError, SourceError
from syncer.gitenv import NO_PROTOCOLS, GitEnvOptions, PrivateGit

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
        self._private: PrivateGit | None = None
        self._options = GitEnvOptions()
        self._git = "git"

    def __enter__(self) -> PinnedGit:
        private = PrivateGit(prefix="syncer-verify-").__enter__()
        self._private = private
        try:
            self._prepare(private.root)
        except BaseException:
            private.__exit__(None, None, None)
            self._private = None
            raise
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._private is not None:
            self._private.__exit__(exc_type, exc, tb)
            self._private = None

    def _prepare(self, root: Path) -> None:
        search_path = os.environ.get("PATH") or _DEFAULT_PATH
        git, gpg, ssh_keygen = (_tool(n, search_path) for n in ("git", "gpg", "ssh-keygen"))
        gnupg = root / "gnupg"
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
        settings = {
            "gpg.program": gpg,
            "gpg.openpgp.program": gpg,
            "gpg.ssh.program": ssh_keygen,
            "gpg.x509.program": str(empty),
            "gpg.ssh.allowedSignersFile": str(allowed),
            "gpg.ssh.revocationFile": str(empty),
            "gpg.minTrustLevel": "undefined",
            "log.showSignature": "false",
            "core.quotePath": "false",
        }
        self._options = GitEnvOptions(
            protocols=NO_PROTOCOLS,
            lazy_fetch=False,
            config=tuple(settings.items()),
            variables=(("PATH", search_path), ("GNUPGHOME", str(gnupg))),
        )
        self._git = git
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
        done = self._call([self._git, *args], stdin=stdin, repo=self.repo)
        if done.returncode not in accept:
            message = done.stderr.decode(errors="replace").strip().splitlines()
            raise SourceError(
                f"git {args[0]} in {self.repo} failed (exit {done.returncode}): "
                f"{message[-1] if message else 'no message'}"
            )
        return done

    def _call(
        self, argv: list[str], *, stdin: bytes | None = None, repo: Path | None = None
    ) -> subprocess.CompletedProcess[bytes]:
        if self._private is None:
            raise RuntimeError("PinnedGit is used outside its context")
        return self._private.run(argv, options=self._options, repo=repo, stdin=stdin, timeout=self.timeout)
