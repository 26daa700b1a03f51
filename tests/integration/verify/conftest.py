"""Keys made once per test session: trusted, untrusted, expired, revoked and path-scoped signers."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from tests.integration.verify.kit import EXPIRED_KEY_BIRTH, Keys, OpenPgpKey, SshKey


@dataclass(frozen=True)
class KeySet:
    keys: Keys
    release: OpenPgpKey
    stranger_pgp: OpenPgpKey
    expired: OpenPgpKey
    revoked: OpenPgpKey
    revocation: str
    ops_ssh: SshKey
    stranger_ssh: SshKey
    prod_ssh: SshKey


@pytest.fixture(scope="session")
def keyset(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KeySet]:
    keys = Keys(tmp_path_factory.mktemp("keys"))
    try:
        yield KeySet(
            keys=keys,
            release=keys.openpgp("Release Signer", "release@example.org"),
            stranger_pgp=keys.openpgp("Unlisted Signer", "unlisted@example.org"),
            expired=keys.openpgp(
                "Expired Signer", "expired@example.org", expire="1d", faked_time=EXPIRED_KEY_BIRTH
            ),
            revoked=(revoked := keys.openpgp("Revoked Signer", "revoked@example.org")),
            revocation=keys.revocation(revoked),
            ops_ssh=keys.ssh("ops"),
            stranger_ssh=keys.ssh("stranger"),
            prod_ssh=keys.ssh("prod-operators"),
        )
    finally:
        keys.close()
