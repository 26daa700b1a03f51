"""Parsing what gpg and git report about signatures, and the signature kind of raw commits."""

from __future__ import annotations

import pytest

from syncer.verify.status import (
    SignatureKind,
    SignatureOutcome,
    parse_gpg_status,
    parse_ssh_check,
    signature_kind,
)

FPR = "F1D6C0A6C4DF25B8EE64131215948D1A6A5E2F75"
SUBKEY = "AAAAC0A6C4DF25B8EE64131215948D1A6A5E2F75"
VALIDSIG = f"[GNUPG:] VALIDSIG {SUBKEY} 2024-05-01 1714521600 0 4 0 22 8 00 {FPR}"


def status(*lines: str) -> str:
    return "\n".join(
        ["[GNUPG:] NEWSIG", "[GNUPG:] KEY_CONSIDERED x 0", *lines, "[GNUPG:] TRUST_UNDEFINED 0 pgp"]
    )


@pytest.mark.parametrize(
    ("text", "outcome", "fingerprint", "detail"),
    [
        (
            status("[GNUPG:] GOODSIG 15948D1A6A5E2F75 Release Signer <r@example.org>", VALIDSIG),
            SignatureOutcome.GOOD,
            FPR,
            "GOODSIG",
        ),
        (
            status("[GNUPG:] EXPKEYSIG 15948D1A6A5E2F75 Old <o@example.org>", VALIDSIG),
            SignatureOutcome.EXPIRED_KEY,
            FPR,
            "EXPKEYSIG",
        ),
        (
            status(
                "[GNUPG:] REVKEYSIG 15948D1A6A5E2F75 Old <o@example.org>", VALIDSIG, "[GNUPG:] KEYREVOKED"
            ),
            SignatureOutcome.REVOKED_KEY,
            FPR,
            "REVKEYSIG",
        ),
        (
            status("[GNUPG:] GOODSIG 15948D1A6A5E2F75 Release"),
            SignatureOutcome.ERROR,
            "",
            "GOODSIG without VALIDSIG",
        ),
        (
            status("[GNUPG:] BADSIG 15948D1A6A5E2F75 Release"),
            SignatureOutcome.BAD,
            "",
            "bad signature from key 15948D1A6A5E2F75",
        ),
        (
            status("[GNUPG:] EXPSIG 15948D1A6A5E2F75 Release", VALIDSIG),
            SignatureOutcome.BAD,
            "",
            "the signature itself has expired",
        ),
        (
            status(
                f"[GNUPG:] ERRSIG 15948D1A6A5E2F75 22 8 00 1714521600 9 {FPR}",
                "[GNUPG:] NO_PUBKEY 15948D1A6A5E2F75",
            ),
            SignatureOutcome.UNKNOWN_KEY,
            FPR,
            f"no trusted OpenPGP key {FPR}",
        ),
        (
            status("[GNUPG:] ERRSIG 15948D1A6A5E2F75 22 8 00 1714521600 9 -"),
            SignatureOutcome.UNKNOWN_KEY,
            "15948D1A6A5E2F75",
            "no trusted OpenPGP key 15948D1A6A5E2F75",
        ),
        (
            status("[GNUPG:] ERRSIG 15948D1A6A5E2F75 99 8 00 1714521600 4"),
            SignatureOutcome.ERROR,
            "15948D1A6A5E2F75",
            "gpg could not check",
        ),
        (
            "gpg: Signature made ... Good signature (not a status line)",
            SignatureOutcome.ERROR,
            "",
            "no signature verdict",
        ),
        (
            status("[GNUPG:] GOODSIG 1 A", VALIDSIG) + "\n" + status("[GNUPG:] GOODSIG 1 A", VALIDSIG),
            SignatureOutcome.ERROR,
            "",
            "more than one signature",
        ),
    ],
)
def test_gpg_status(text: str, outcome: SignatureOutcome, fingerprint: str, detail: str) -> None:
    check = parse_gpg_status(text)
    assert (check.outcome, check.fingerprint) == (outcome, fingerprint)
    assert detail in check.detail


def test_gpg_status_keeps_the_user_id() -> None:
    check = parse_gpg_status(
        status("[GNUPG:] GOODSIG 15948D1A6A5E2F75 Release Signer <r@example.org>", VALIDSIG)
    )
    assert check.identity == "Release Signer <r@example.org>"


@pytest.mark.parametrize(
    ("line", "outcome", "identity"),
    [
        ("G\x00SHA256:abc\x00ops\n", SignatureOutcome.GOOD, "ops"),
        ("U\x00SHA256:abc\x00\n", SignatureOutcome.UNKNOWN_KEY, ""),
        ("G\x00SHA256:abc\x00\n", SignatureOutcome.UNKNOWN_KEY, ""),
        ("B\x00SHA256:abc\x00\n", SignatureOutcome.BAD, ""),
        ("R\x00SHA256:abc\x00ops\n", SignatureOutcome.REVOKED_KEY, ""),
        ("N\x00\x00\n", SignatureOutcome.ERROR, ""),
        ("", SignatureOutcome.ERROR, ""),
    ],
)
def test_ssh_check(line: str, outcome: SignatureOutcome, identity: str) -> None:
    check = parse_ssh_check(line)
    assert (check.outcome, check.identity) == (outcome, identity)
    if line.count("\x00") == 2 and "abc" in line:
        assert check.fingerprint == "SHA256:abc"


HEADER = (
    b"tree 4b825dc642cb6eb9a060e54bf8d69288fbee4904\n"
    b"author A <a@example.org> 1 +0000\ncommitter A <a@example.org> 1 +0000\n"
)


@pytest.mark.parametrize(
    ("raw", "kind"),
    [
        (HEADER + b"\nmessage\n", SignatureKind.NONE),
        (
            HEADER + b"gpgsig -----BEGIN PGP SIGNATURE-----\n \n abc\n -----END PGP SIGNATURE-----\n\nm\n",
            SignatureKind.OPENPGP,
        ),
        (
            HEADER + b"gpgsig -----BEGIN SSH SIGNATURE-----\n abc\n -----END SSH SIGNATURE-----\n\nm\n",
            SignatureKind.SSH,
        ),
        (HEADER + b"gpgsig-sha256 -----BEGIN SSH SIGNATURE-----\n abc\n\nm\n", SignatureKind.SSH),
        (HEADER + b"gpgsig -----BEGIN SIGNED MESSAGE-----\n abc\n\nm\n", SignatureKind.X509),
        (HEADER + b"\nbody mentioning\ngpgsig -----BEGIN PGP SIGNATURE-----\n", SignatureKind.NONE),
    ],
)
def test_signature_kind(raw: bytes, kind: SignatureKind) -> None:
    assert signature_kind(raw) is kind
