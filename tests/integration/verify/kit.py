"""Real keys and real git repositories for the verification and source tests.

Every git, gpg and ssh-keygen call here runs with its own pinned configuration (no user or system git
config), so the tests do not depend on the machine and a test that plants a hostile configuration in
the environment does not change how the fixtures are made.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

IDENTITY = {
    "GIT_AUTHOR_NAME": "Fleet Author",
    "GIT_AUTHOR_EMAIL": "author@example.org",
    "GIT_COMMITTER_NAME": "Fleet Author",
    "GIT_COMMITTER_EMAIL": "author@example.org",
}
# A moment inside the 1-day validity of the expired key (which is created on 2020-01-01).
EXPIRED_KEY_BIRTH = "20200101T000000"
EXPIRED_KEY_SIGNING = "20200101T001000"


def run(
    argv: list[str], *, env: Mapping[str, str], cwd: Path | None = None, stdin: bytes | None = None
) -> str:
    done = subprocess.run(
        argv, cwd=cwd, env=dict(env), input=stdin, capture_output=True, check=False, timeout=120
    )
    if done.returncode != 0:
        raise AssertionError(f"{argv} failed ({done.returncode}): {done.stderr.decode(errors='replace')}")
    return done.stdout.decode()


def base_env(scratch: Path) -> dict[str, str]:
    """A clean environment: PATH and locale from the machine, everything git reads pinned."""
    empty = scratch / "empty-gitconfig"
    if not empty.exists():
        scratch.mkdir(parents=True, exist_ok=True)
        empty.write_text("")
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(scratch),
        "LC_ALL": "C",
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": str(empty),
        "GIT_CONFIG_SYSTEM": str(empty),
        **IDENTITY,
    }


@dataclass(frozen=True)
class OpenPgpKey:
    name: str
    fingerprint: str
    home: Path
    public: str
    signing_program: str = ""

    def policy_key(self) -> str:
        return self.public


@dataclass(frozen=True)
class SshKey:
    name: str
    private: Path
    public_line: str
    fingerprint: str


class Keys:
    """Makes OpenPGP keys in one signing keyring (``home``) and SSH key pairs beside it."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.home = root / "gnupg"
        self.home.mkdir(parents=True, mode=0o700)
        self.env = {**base_env(root), "GNUPGHOME": str(self.home)}

    def gpg(self, *args: str, stdin: bytes | None = None) -> str:
        return run(["gpg", "--batch", "--no-tty", "--passphrase", "", *args], env=self.env, stdin=stdin)

    def openpgp(self, name: str, email: str, *, expire: str = "never", faked_time: str = "") -> OpenPgpKey:
        fake = [f"--faked-system-time={faked_time}"] if faked_time else []
        self.gpg(*fake, "--quick-gen-key", f"{name} <{email}>", "ed25519", "sign", expire)
        listing = self.gpg("--with-colons", "--list-keys", email)
        fingerprint = next(line.split(":")[9] for line in listing.splitlines() if line.startswith("fpr:"))
        program = ""
        if faked_time:
            script = self.root / f"gpg-at-{EXPIRED_KEY_SIGNING}"
            script.write_text(f'#!/bin/sh\nexec gpg --faked-system-time={EXPIRED_KEY_SIGNING} "$@"\n')
            script.chmod(0o755)
            program = str(script)
        public = self.gpg("--armor", "--export", fingerprint)
        return OpenPgpKey(name, fingerprint, self.home, public, program)

    def revocation(self, key: OpenPgpKey) -> str:
        """The revocation certificate gpg made with the key, ready to import (armored)."""
        text = (self.home / "openpgp-revocs.d" / f"{key.fingerprint}.rev").read_text()
        return text.replace(":-----BEGIN PGP PUBLIC KEY BLOCK-----", "-----BEGIN PGP PUBLIC KEY BLOCK-----")

    def ssh(self, name: str) -> SshKey:
        private = self.root / f"ssh-{name}"
        run(
            ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", f"{name}@example.org", "-f", str(private)],
            env=self.env,
        )
        public_line = Path(f"{private}.pub").read_text().strip()
        listing = run(["ssh-keygen", "-l", "-f", f"{private}.pub"], env=self.env)
        return SshKey(name, private, public_line, listing.split()[1])

    def close(self) -> None:
        if shutil.which("gpgconf"):
            subprocess.run(["gpgconf", "--kill", "all"], env=self.env, capture_output=True, check=False)

    def __enter__(self) -> Keys:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


class GitRepo:
    """A working repository for tests, committing with a fixed identity and optional signatures."""

    def __init__(self, path: Path, *, branch: str = "main") -> None:
        self.path = path
        self.env = base_env(path.parent / f".{path.name}-home")
        path.mkdir(parents=True, exist_ok=True)
        self.git("init", "-q", "-b", branch)

    def git(self, *args: str, env: Mapping[str, str] | None = None) -> str:
        return run(["git", *args], env={**self.env, **(env or {})}, cwd=self.path).strip()

    def write(self, files: Mapping[str, str]) -> None:
        for name, text in files.items():
            target = self.path / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text)
        self.git("add", "-A")

    def commit(
        self, message: str, files: Mapping[str, str] | None = None, *, sign: OpenPgpKey | SshKey | None = None
    ) -> str:
        self.write(files or {f"notes/{message.replace(' ', '-')}.txt": message + "\n"})
        self.git(
            *_signing(sign),
            "commit",
            "-q",
            "--allow-empty",
            "-m",
            message,
            *(["-S"] if sign else []),
            env=_sign_env(sign),
        )
        return self.git("rev-parse", "HEAD")

    def merge(
        self,
        branch: str,
        message: str,
        *,
        sign: OpenPgpKey | SshKey | None = None,
        files: Mapping[str, str] | None = None,
    ) -> str:
        """Merge ``branch`` (no fast-forward); ``files`` are extra edits made inside the merge commit."""
        self.git("merge", "-q", "--no-ff", "--no-commit", branch)
        if files:
            self.write(files)
        self.git(
            *_signing(sign), "commit", "-q", "-m", message, *(["-S"] if sign else []), env=_sign_env(sign)
        )
        return self.git("rev-parse", "HEAD")


def _signing(sign: OpenPgpKey | SshKey | None) -> list[str]:
    if isinstance(sign, OpenPgpKey):
        program = ["-c", f"gpg.program={sign.signing_program}"] if sign.signing_program else []
        return ["-c", "gpg.format=openpgp", "-c", f"user.signingkey={sign.fingerprint}", *program]
    if isinstance(sign, SshKey):
        return ["-c", "gpg.format=ssh", "-c", f"user.signingkey={sign.private}"]
    return []


def _sign_env(sign: OpenPgpKey | SshKey | None) -> dict[str, str]:
    return {"GNUPGHOME": str(sign.home)} if isinstance(sign, OpenPgpKey) else {}


def write_policy(
    path: Path, *, signers: list[dict[str, object]], keys: list[str], mode: str = "head"
) -> Path:
    """A trust policy file with the given signers and armored OpenPGP keys (inline)."""
    data: dict[str, object] = {
        "mode": mode,
        "signers": signers,
        "openpgpKeys": [{"armored": k} for k in keys],
    }
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def bare_remote(path: Path) -> Path:
    """An empty bare repository to push to, as a remote."""
    run(["git", "init", "-q", "--bare", "-b", "main", str(path)], env=base_env(path.parent / ".bare-home"))
    return path


def plant_hostile_git_config(
    tmp: Path, monkeypatch: pytest.MonkeyPatch, fake_fingerprint: str, permissive_line: str
) -> None:
    """A global and a system git config (and the repository's own) that would make any commit look
    good: a gpg.program that always reports a good signature, and an allowed-signers file that
    trusts a stranger's SSH key as 'ops'."""
    fake = tmp / "always-good-gpg"
    fake.write_text(
        "#!/bin/sh\n"
        "cat >/dev/null\n"
        "echo '[GNUPG:] NEWSIG'\n"
        f"echo '[GNUPG:] GOODSIG {fake_fingerprint[-16:]} Release Signer <release@example.org>'\n"
        f"echo '[GNUPG:] VALIDSIG {fake_fingerprint} 2024-01-01 1704067200 0 4 0 22 8 00 "
        f"{fake_fingerprint}'\n"
        "echo '[GNUPG:] TRUST_ULTIMATE 0 pgp'\n"
        "exit 0\n"
    )
    fake.chmod(0o755)
    allowed = tmp / "permissive_allowed_signers"
    allowed.write_text(permissive_line + "\n")
    hostile = (
        f'[gpg]\n\tprogram = {fake}\n[gpg "openpgp"]\n\tprogram = {fake}\n'
        f'[gpg "ssh"]\n\tallowedSignersFile = {allowed}\n'
    )
    home = tmp / "hostile-home"
    home.mkdir()
    (home / ".gitconfig").write_text(hostile)
    (tmp / "hostile-system").write_text(hostile)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(home / ".gitconfig"))
    monkeypatch.setenv("GIT_CONFIG_SYSTEM", str(tmp / "hostile-system"))
    monkeypatch.delenv("GIT_CONFIG_NOSYSTEM", raising=False)
    monkeypatch.setenv("GIT_CONFIG_COUNT", "1")
    monkeypatch.setenv("GIT_CONFIG_KEY_0", "gpg.program")
    monkeypatch.setenv("GIT_CONFIG_VALUE_0", str(fake))


def plain_git(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """git as a user would run it, with the (hostile) environment of the test process."""
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=False)
