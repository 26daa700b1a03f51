"""The trust policy: which keys may sign the fleet repository, for which paths, and how strictly.

The policy is the agent's own file (``policies/trust.yaml`` by default), never a file of the repository
being verified. Loading validates everything that can be checked without running gpg; fingerprints of
the OpenPGP keys are matched against the key material when the verifier imports it.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
import struct
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

from syncer.config.loading import Fields, load_yaml_file
from syncer.config.two_person import TwoPersonRule, parse_two_person_rules
from syncer.errors import ConfigError

ALL_PATHS = "**"
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@+-]{0,127}$")
_OPENPGP_FINGERPRINT = re.compile(r"^(?:[0-9A-F]{40}|[0-9A-F]{64})$")
_COMMIT_ID = re.compile(r"^(?:[0-9a-f]{40}|[0-9a-f]{64})$")
_ARMOR_BEGIN = "-----BEGIN PGP PUBLIC KEY BLOCK-----"
SSH_KEY_TYPES = frozenset(
    {
        "ssh-ed25519",
        "ssh-rsa",
        "ecdsa-sha2-nistp256",
        "ecdsa-sha2-nistp384",
        "ecdsa-sha2-nistp521",
        "sk-ssh-ed25519@openssh.com",
        "sk-ecdsa-sha2-nistp256@openssh.com",
    }
)


class VerifyMode(StrEnum):
    """``head``: the tip commit must be trusted. ``strict``: every new commit, merges included."""

    HEAD = "head"
    STRICT = "strict"


class KeyKind(StrEnum):
    OPENPGP = "openpgp"
    SSH = "ssh"


@dataclass(frozen=True)
class Signer:
    """One trusted key and the paths its commits may touch.

    ``fingerprint`` is the upper-case hex fingerprint of the OpenPGP primary key, or ``SHA256:...`` of
    the SSH public key, as git and ssh-keygen report them. ``ssh_key`` is ``<type> <base64>`` for SSH.
    """

    name: str
    kind: KeyKind
    fingerprint: str
    paths: tuple[str, ...] = (ALL_PATHS,)
    ssh_key: str = ""

    @property
    def unrestricted(self) -> bool:
        return ALL_PATHS in self.paths


@dataclass(frozen=True)
class TrustPolicy:
    """Who is trusted to sign what; ``origin`` names the file it came from (for messages).

    ``since`` is the commit the checks start from when no verified base is known (a first sync, or
    a fleet whose recorded revisions do not verify): strict mode judges every commit after it, head
    mode every path changed since it. ``""``: the repository's root (the whole history).
    """

    mode: VerifyMode = VerifyMode.HEAD
    allow_history_rewrite: bool = False
    signers: tuple[Signer, ...] = ()
    openpgp_keys: tuple[str, ...] = field(default=(), repr=False)
    origin: str = "<inline>"
    two_person: tuple[TwoPersonRule, ...] = ()
    since: str = ""

    def signer_for(self, kind: KeyKind, fingerprint: str) -> Signer | None:
        """The signer holding this key, matched by fingerprint (OpenPGP fingerprints case-insensitively)."""
        wanted = fingerprint.upper() if kind is KeyKind.OPENPGP else fingerprint
        for signer in self.signers:
            if signer.kind is kind and signer.fingerprint == wanted:
                return signer
        return None


def load_trust_policy(path: Path) -> TrustPolicy:
    """Load and validate a trust policy file; key files are read relative to the policy's folder, each
    within the type and size rules of every file of the agent (``syncer.config.loading``)."""
    return _trust_policy(Fields.of(load_yaml_file(path)), base_dir=path.parent)


def parse_trust_policy(data: Mapping[str, Any], *, origin: str, base_dir: Path) -> TrustPolicy:
    """Validate an already-parsed policy mapping. Every problem is a ``ConfigError`` naming ``origin``."""
    return _trust_policy(Fields(data, origin=origin), base_dir=base_dir)


def _trust_policy(top: Fields, *, base_dir: Path) -> TrustPolicy:
    origin = top.origin
    top.reject_unknown({"mode", "allowHistoryRewrite", "signers", "openpgpKeys", "twoPersonRules", "since"})
    mode_text = top.string("mode", VerifyMode.HEAD.value)
    try:
        mode = VerifyMode(mode_text)
    except ValueError:
        raise top.error("mode", f"must be one of head, strict, not {mode_text!r}") from None
    signers = tuple(_signer(top.child("signers", i)) for i in range(len(top.items("signers"))))
    for label, values in (("name", [s.name for s in signers]), ("key", [s.fingerprint for s in signers])):
        twice = sorted({v for v in values if values.count(v) > 1})
        if twice:
            raise ConfigError(
                f"{top.located('signers')}: signers: two signers have the same {label} {twice[0]!r}"
            )
    keys = tuple(_armored_key(top, i, base_dir) for i in range(len(top.items("openpgpKeys"))))
    if any(s.kind is KeyKind.OPENPGP for s in signers) and not keys:
        raise top.error("openpgpKeys", "OpenPGP signers are listed but no OpenPGP public key is given")
    since = top.string("since", "")
    if since and not _COMMIT_ID.match(since):
        raise top.error("since", f"must be a full commit id (40 or 64 lower-case hex digits), not {since!r}")
    return TrustPolicy(
        mode=mode,
        allow_history_rewrite=top.boolean("allowHistoryRewrite", False),
        signers=signers,
        openpgp_keys=keys,
        origin=origin,
        two_person=parse_two_person_rules(top),
        since=since,
    )


def _signer(fields: Fields) -> Signer:
    fields.reject_unknown({"name", "openpgp", "ssh", "paths"})
    name = fields.string("name")
    if not _NAME.match(name):
        raise fields.error("name", f"{name!r} must be letters, digits and . _ @ + - (no spaces)")
    paths = tuple(_glob(fields, p) for p in fields.strings("paths", (ALL_PATHS,)))
    if fields.has("openpgp") == fields.has("ssh"):
        raise ConfigError(f"{fields.located()}: {fields.where}: give exactly one of openpgp or ssh")
    if fields.has("openpgp"):
        fingerprint = normalize_openpgp_fingerprint(fields.string("openpgp"))
        if not _OPENPGP_FINGERPRINT.match(fingerprint):
            raise fields.error("openpgp", "must be a full 40 (or 64) hex digit key fingerprint, not a key id")
        return Signer(name=name, kind=KeyKind.OPENPGP, fingerprint=fingerprint, paths=paths)
    try:
        key = parse_ssh_public_key(fields.string("ssh"))
    except ValueError as exc:
        raise fields.error("ssh", str(exc)) from None
    return Signer(name=name, kind=KeyKind.SSH, fingerprint=ssh_fingerprint(key), paths=paths, ssh_key=key)


def _glob(fields: Fields, pattern: str) -> str:
    parts = pattern.split("/")
    if pattern.startswith("/") or ".." in parts or "" in parts:
        raise fields.error("paths", f"{pattern!r} must be relative to the repository root, without // or ..")
    return pattern


def _armored_key(top: Fields, index: int, base_dir: Path) -> str:
    entry = top.items("openpgpKeys")[index]
    label = f"openpgpKeys[{index}]"
    if isinstance(entry, str):
        entry = {"armored": entry} if entry.lstrip().startswith(_ARMOR_BEGIN) else {"file": entry}
    if not isinstance(entry, Mapping):
        raise ConfigError(
            f"{top.located('openpgpKeys', index)}: {label}: must be a file path or an armored key"
        )
    fields, here = top.item("openpgpKeys", index, entry), top.located("openpgpKeys", index)
    fields.reject_unknown({"file", "armored"})
    if fields.has("file") == fields.has("armored"):
        raise ConfigError(f"{here}: {label}: give exactly one of file or armored")
    if fields.has("file"):
        key_path = base_dir / fields.string("file")
        try:
            text = fields.read_file("file", key_path).decode("ascii")
        except UnicodeDecodeError:
            raise fields.error("file", f"{key_path}: not ASCII: give an ASCII-armored public key") from None
    else:
        text = fields.string("armored")
    if "PRIVATE KEY" in text:
        raise ConfigError(f"{here}: {label}: holds a private key; give only public keys")
    if _ARMOR_BEGIN not in text:
        raise ConfigError(f"{here}: {label}: not an ASCII-armored OpenPGP public key block")
    return text.strip() + "\n"


def normalize_openpgp_fingerprint(text: str) -> str:
    """Upper-case hex without spaces or a ``0x`` prefix."""
    compact = "".join(text.split()).upper()
    return compact.removeprefix("0X")


def parse_ssh_public_key(line: str) -> str:
    """``<type> <base64>`` of an ``authorized_keys``-style line (the comment dropped), or ``ValueError``."""
    parts = line.split()
    if len(parts) < 2:
        raise ValueError("must be an SSH public key line: '<type> <base64> [comment]'")
    key_type, blob_text = parts[0], parts[1]
    if key_type not in SSH_KEY_TYPES:
        raise ValueError(f"unsupported SSH key type {key_type!r}")
    try:
        blob = base64.b64decode(blob_text, validate=True)
    except (binascii.Error, ValueError):
        raise ValueError("the key is not valid base64") from None
    if len(blob) < 4:
        raise ValueError("the key blob is truncated")
    (length,) = struct.unpack(">I", blob[:4])
    if blob[4 : 4 + length] != key_type.encode():
        raise ValueError(f"the key blob does not hold a {key_type} key")
    return f"{key_type} {blob_text}"


def ssh_fingerprint(public_key: str) -> str:
    """``SHA256:<unpadded base64>`` of a public key, the form ssh-keygen and git report."""
    blob = base64.b64decode(public_key.split()[1])
    digest = base64.b64encode(hashlib.sha256(blob).digest()).decode().rstrip("=")
    return f"SHA256:{digest}"
