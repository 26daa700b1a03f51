"""Pure parsers of what git and gpg report about a commit signature.

Git's exit code is never taken as the answer: these functions read GnuPG's machine-readable status
lines (``git verify-commit --raw``) and git's ``%G?``/``%GF``/``%GS`` placeholders for SSH signatures,
and turn them into a ``SignatureCheck`` whose fingerprint the verifier matches against the policy.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

_STATUS_PREFIX = "[GNUPG:] "
_NO_PUBKEY_RC = "9"


class SignatureKind(StrEnum):
    NONE = "none"
    OPENPGP = "openpgp"
    SSH = "ssh"
    X509 = "x509"


class SignatureOutcome(StrEnum):
    GOOD = "good"
    BAD = "bad"
    UNKNOWN_KEY = "unknown-key"
    EXPIRED_KEY = "expired-key"
    REVOKED_KEY = "revoked-key"
    ERROR = "error"


@dataclass(frozen=True)
class SignatureCheck:
    """What the signature check said: the outcome, the key's fingerprint (primary key for OpenPGP,
    ``SHA256:...`` for SSH), the identity (user id or principal) and a human-readable detail."""

    outcome: SignatureOutcome
    fingerprint: str = ""
    identity: str = ""
    detail: str = ""


SIGNATURE_HEADERS = {"sha1": b"gpgsig", "sha256": b"gpgsig-sha256"}


def signature_headers(raw_commit: bytes) -> tuple[str, ...]:
    """The names of the signature headers of a raw commit object, in order (``gpgsig``,
    ``gpgsig-sha256``); continuation lines of a header are not counted again."""
    header, _, _ = raw_commit.partition(b"\n\n")
    names = []
    for line in header.split(b"\n"):
        name = line.split(b" ", 1)[0]
        if name in SIGNATURE_HEADERS.values():
            names.append(name.decode())
    return tuple(names)


def signature_header_problem(raw_commit: bytes, object_format: str) -> str:
    """Why the commit's signature headers cannot be judged (``""`` when they can): more than one
    signature header, or a header of the other hash algorithm. Git checks only the header of the
    repository's algorithm and leaves the others out of what is signed, so any other header would
    let the same signature be wrapped into commits with new ids."""
    names = signature_headers(raw_commit)
    own = SIGNATURE_HEADERS.get(object_format, b"gpgsig").decode()
    if len(names) > 1:
        return (
            f"the commit carries {len(names)} signature headers ({', '.join(names)}); exactly one is accepted"
        )
    if names and names[0] != own:
        return (
            f"the commit carries a {names[0]} signature header, which a {object_format} repository "
            "does not check"
        )
    return ""


def signature_kind(raw_commit: bytes) -> SignatureKind:
    """The kind of signature in a raw commit object (``git cat-file commit``), from its header."""
    header, _, _ = raw_commit.partition(b"\n\n")
    lines = header.split(b"\n")
    for index, line in enumerate(lines):
        if line.startswith((b"gpgsig ", b"gpgsig-sha256 ")):
            first = line.split(b" ", 1)[1].strip()
            if not first and index + 1 < len(lines):
                first = lines[index + 1].strip()
            if first.startswith(b"-----BEGIN PGP SIGNATURE-----"):
                return SignatureKind.OPENPGP
            if first.startswith(b"-----BEGIN SSH SIGNATURE-----"):
                return SignatureKind.SSH
            return SignatureKind.X509
    return SignatureKind.NONE


def parse_gpg_status(text: str) -> SignatureCheck:
    """Judge GnuPG ``--status-fd`` output for exactly one signature.

    A good result needs both ``GOODSIG`` and ``VALIDSIG`` (whose last field is the primary key's
    fingerprint); ``EXPKEYSIG``/``REVKEYSIG`` are valid signatures by expired or revoked keys; more
    than one signature, or none at all, is an error.
    """
    lines = [
        line[len(_STATUS_PREFIX) :].split() for line in text.splitlines() if line.startswith(_STATUS_PREFIX)
    ]
    keywords = [fields[0] for fields in lines if fields]
    if keywords.count("NEWSIG") > 1:
        return SignatureCheck(SignatureOutcome.ERROR, detail="more than one signature on the commit")
    by_keyword = {fields[0]: fields[1:] for fields in lines if fields}
    valid = by_keyword.get("VALIDSIG", [])
    fingerprint = (valid[-1] if len(valid) >= 10 else valid[0] if valid else "").upper()
    for keyword, outcome in (
        ("GOODSIG", SignatureOutcome.GOOD),
        ("EXPKEYSIG", SignatureOutcome.EXPIRED_KEY),
        ("REVKEYSIG", SignatureOutcome.REVOKED_KEY),
    ):
        if keyword in by_keyword:
            identity = " ".join(by_keyword[keyword][1:])
            if not fingerprint:
                return SignatureCheck(
                    SignatureOutcome.ERROR, identity=identity, detail=f"{keyword} without VALIDSIG"
                )
            return SignatureCheck(outcome, fingerprint, identity, detail=keyword)
    return _failed_gpg_check(by_keyword)


def _failed_gpg_check(by_keyword: dict[str, list[str]]) -> SignatureCheck:
    """The check for status output with no valid signature: bad, expired, unknown key or error."""
    if "BADSIG" in by_keyword:
        key_id = (by_keyword["BADSIG"] or ["?"])[0]
        return SignatureCheck(SignatureOutcome.BAD, detail=f"bad signature from key {key_id}")
    if "EXPSIG" in by_keyword:
        return SignatureCheck(SignatureOutcome.BAD, detail="the signature itself has expired")
    if "ERRSIG" not in by_keyword:
        return SignatureCheck(SignatureOutcome.ERROR, detail="gpg reported no signature verdict")
    fields = by_keyword["ERRSIG"]
    key_id = fields[0] if fields else "?"
    issuer = fields[6].upper() if len(fields) > 6 and fields[6] != "-" else key_id
    if (len(fields) > 5 and fields[5] == _NO_PUBKEY_RC) or "NO_PUBKEY" in by_keyword:
        return SignatureCheck(SignatureOutcome.UNKNOWN_KEY, issuer, detail=f"no trusted OpenPGP key {issuer}")
    return SignatureCheck(
        SignatureOutcome.ERROR, issuer, detail=f"gpg could not check the signature of {issuer}"
    )


def parse_ssh_check(line: str) -> SignatureCheck:
    """Judge ``git log --format=%G?%x00%GF%x00%GS`` for an SSH-signed commit.

    ``G`` with a principal is a signature by a key of the allowed-signers file; ``U`` is a valid
    signature by a key that file does not hold; ``B`` a bad signature. Anything else is an error.
    """
    code, _, rest = line.strip("\n").partition("\x00")
    fingerprint, _, principal = rest.partition("\x00")
    code = code.strip()
    if code == "G" and principal:
        return SignatureCheck(SignatureOutcome.GOOD, fingerprint, principal, detail="good SSH signature")
    if code in {"G", "U"}:
        return SignatureCheck(
            SignatureOutcome.UNKNOWN_KEY, fingerprint, detail=f"no trusted SSH key {fingerprint}"
        )
    if code == "B":
        return SignatureCheck(SignatureOutcome.BAD, fingerprint, detail="bad SSH signature")
    if code == "R":
        return SignatureCheck(SignatureOutcome.REVOKED_KEY, fingerprint, detail="the SSH key is revoked")
    return SignatureCheck(
        SignatureOutcome.ERROR, fingerprint, detail=f"git could not check the SSH signature ({code!r})"
    )
