"""Loading and validating the trust policy file."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest
import yaml

from syncer.config import KeyKind, VerifyMode, load_trust_policy, ssh_fingerprint
from syncer.errors import ConfigError

REPO_ROOT = Path(__file__).resolve().parents[3]
FPR = "0123456789ABCDEF0123456789ABCDEF01234567"
ARMORED = "-----BEGIN PGP PUBLIC KEY BLOCK-----\n\nmDMEZ\n-----END PGP PUBLIC KEY BLOCK-----\n"
SSH_BLOB = base64.b64encode(b"\x00\x00\x00\x0bssh-ed25519\x00\x00\x00\x20" + bytes(range(32))).decode()
SSH_LINE = f"ssh-ed25519 {SSH_BLOB} ops@example.org"


def write(tmp_path: Path, data: object) -> Path:
    path = tmp_path / "trust.yaml"
    path.write_text(yaml.safe_dump(data) if not isinstance(data, str) else data)
    return path


def test_shipped_default_policy_trusts_nobody() -> None:
    policy = load_trust_policy(REPO_ROOT / "policies" / "trust.yaml")
    assert (policy.mode, policy.allow_history_rewrite, policy.signers) == (VerifyMode.HEAD, False, ())


def test_full_policy(tmp_path: Path) -> None:
    (tmp_path / "keys").mkdir()
    (tmp_path / "keys" / "release.asc").write_text(ARMORED)
    data = {
        "mode": "strict",
        "allowHistoryRewrite": True,
        "openpgpKeys": ["keys/release.asc", {"armored": ARMORED}],
        "signers": [
            {"name": "release", "openpgp": " 0123 4567 89ab cdef 0123  4567 89AB CDEF 0123 4567"},
            {"name": "prod-ops", "ssh": SSH_LINE, "paths": ["clusters/prod-*/**"]},
        ],
    }
    policy = load_trust_policy(write(tmp_path, data))
    assert policy.mode is VerifyMode.STRICT
    assert policy.allow_history_rewrite
    assert len(policy.openpgp_keys) == 2
    release, prod = policy.signers
    assert (release.kind, release.fingerprint, release.paths, release.unrestricted) == (
        KeyKind.OPENPGP,
        FPR,
        ("**",),
        True,
    )
    assert (prod.kind, prod.ssh_key, prod.paths, prod.unrestricted) == (
        KeyKind.SSH,
        f"ssh-ed25519 {SSH_BLOB}",
        ("clusters/prod-*/**",),
        False,
    )
    assert policy.signer_for(KeyKind.OPENPGP, FPR.lower()) is release
    assert policy.signer_for(KeyKind.SSH, prod.fingerprint) is prod
    assert policy.signer_for(KeyKind.SSH, FPR) is None


def test_since_is_the_trusted_commit_checks_start_from(tmp_path: Path) -> None:
    commit = "0123456789abcdef0123456789abcdef01234567"
    assert load_trust_policy(write(tmp_path, {"since": commit})).since == commit
    assert load_trust_policy(write(tmp_path, {"mode": "strict"})).since == ""


def test_ssh_fingerprint_is_sha256_of_the_blob() -> None:
    import hashlib

    digest = base64.b64encode(hashlib.sha256(base64.b64decode(SSH_BLOB)).digest()).decode().rstrip("=")
    assert ssh_fingerprint(f"ssh-ed25519 {SSH_BLOB}") == f"SHA256:{digest}"


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        ({"mode": "lenient"}, "mode: must be one of head, strict, not 'lenient'"),
        ({"allowHistoryRewrite": "yes"}, "allowHistoryRewrite: must be true or false"),
        ({"trust": []}, "unknown key(s) trust"),
        ({"since": "main"}, "since: must be a full commit id (40 or 64 lower-case hex digits), not 'main'"),
        ({"since": "0123456789ABCDEF0123456789ABCDEF01234567"}, "since: must be a full commit id"),
        ({"signers": [{"name": "a"}]}, "signers[0]: give exactly one of openpgp or ssh"),
        ({"signers": [{"name": "a", "openpgp": FPR, "ssh": SSH_LINE}]}, "give exactly one of openpgp or ssh"),
        (
            {"signers": [{"name": "a", "openpgp": "89ABCDEF01234567"}], "openpgpKeys": [ARMORED]},
            "not a key id",
        ),
        ({"signers": [{"name": "a b", "ssh": SSH_LINE}]}, "signers[0].name: 'a b' must be letters"),
        ({"signers": [{"name": "a", "ssh": "ssh-dss AAAA"}]}, "unsupported SSH key type 'ssh-dss'"),
        ({"signers": [{"name": "a", "ssh": "ssh-ed25519 !!!"}]}, "not valid base64"),
        ({"signers": [{"name": "a", "ssh": "ssh-rsa " + SSH_BLOB}]}, "does not hold a ssh-rsa key"),
        (
            {"signers": [{"name": "a", "ssh": SSH_LINE, "paths": ["/abs/**"]}]},
            "must be relative to the repository root",
        ),
        ({"signers": [{"name": "a", "ssh": SSH_LINE, "paths": ["a/../b"]}]}, "must be relative"),
        ({"signers": [{"name": "a", "ssh": SSH_LINE, "paths": []}]}, "paths: must be a non-empty list"),
        (
            {
                "signers": [{"name": "a", "ssh": SSH_LINE}, {"name": "a", "openpgp": FPR}],
                "openpgpKeys": [ARMORED],
            },
            "same name 'a'",
        ),
        ({"signers": [{"name": "a", "ssh": SSH_LINE}, {"name": "b", "ssh": SSH_LINE}]}, "same key"),
        (
            {"signers": [{"name": "a", "openpgp": FPR}]},
            "OpenPGP signers are listed but no OpenPGP public key",
        ),
        ({"openpgpKeys": ["missing.asc"]}, "missing.asc: cannot read: No such file or directory"),
        ({"openpgpKeys": [{"armored": "-----BEGIN PGP PRIVATE KEY BLOCK-----"}]}, "holds a private key"),
        ({"openpgpKeys": [{"armored": "hello"}]}, "not an ASCII-armored OpenPGP public key block"),
        ("- just\n- a list\n", "the top level must be a mapping"),
        ("mode: [unclosed\n", "not valid YAML"),
    ],
)
def test_invalid_policies_name_the_file_and_the_problem(tmp_path: Path, data: object, problem: str) -> None:
    path = write(tmp_path, data)
    with pytest.raises(ConfigError) as raised:
        load_trust_policy(path)
    assert str(raised.value).startswith(f"{path}:")
    assert problem in str(raised.value)


def test_missing_policy_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read"):
        load_trust_policy(tmp_path / "absent.yaml")
