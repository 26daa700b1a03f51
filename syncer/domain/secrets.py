"""Which values are secret, and how they are shown: masked, with a short digest.

A value is secret when it is any value of a Secret's ``data``/``stringData``; a Redis password
directive in a RedisCluster's ``spec.redisConfig`` (``requirepass``, ``masterauth``, ``user`` ACL
lines, TLS key passphrases); a field named like a secret (``password``, ``token``, ``apiKey``, ...);
or a field the kind's CRD schema marks ``format: password``. Masked values read
``<masked sha256:1a2b3c4d>``: the first 8 hex digits of the value's SHA-256, so that a reviewer sees
that a value changed (or that two fields hold the same value) without seeing it. Messages that may
echo a value (server errors) are redacted with ``redact``.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from syncer.domain.applied import FieldPath, leaf_fields

MASK = "<masked>"
_SECRET_NAME = re.compile(r"(password|passwd|passphrase|token|secret|credentials?|privatekey|apikey)$", re.I)
REDIS_SECRET_DIRECTIVES = frozenset(
    {"requirepass", "masterauth", "user", "tls-key-file-pass", "tls-client-key-file-pass"}
)
_WILDCARD = "*"


@dataclass(frozen=True)
class SensitiveFields:
    """Fields marked sensitive by schemas, per kind: paths where ``*`` stands for any map key or
    list index (from ``format: password`` in a CRD's OpenAPI schema)."""

    by_kind: Mapping[str, tuple[FieldPath, ...]] = field(default_factory=dict)

    def marks(self, kind: str, path: FieldPath) -> bool:
        for pattern in self.by_kind.get(kind, ()):
            if len(pattern) == len(path) and all(
                p in (_WILDCARD, q) for p, q in zip(pattern, path, strict=True)
            ):
                return True
        return False


def is_secret(kind: str, path: FieldPath, sensitive: SensitiveFields = SensitiveFields()) -> bool:
    """Whether the field at ``path`` of an object of ``kind`` holds a secret."""
    if kind == "Secret" and path[:1] in (("data",), ("stringData",)) and len(path) > 1:
        return True
    if kind == "RedisCluster" and len(path) == 3 and path[:2] == ("spec", "redisConfig"):
        return path[2].lower() in REDIS_SECRET_DIRECTIVES
    if sensitive.marks(kind, path):
        return True
    return bool(path) and bool(_SECRET_NAME.search(path[-1].replace("-", "").replace("_", "")))


def digest(value: Any) -> str:
    """The mask of one secret value: ``<masked sha256:xxxxxxxx>``."""
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
    return f"<masked sha256:{hashlib.sha256(text.encode()).hexdigest()[:8]}>"


def masked(
    kind: str, path: FieldPath, value: Any, sensitive: SensitiveFields = SensitiveFields()
) -> tuple[Any, bool]:
    """``value`` with every secret at or below ``path`` masked, and whether anything was masked."""
    if value is None:
        return None, False
    if is_secret(kind, path, sensitive):
        return digest(value), True
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        hit = False
        for key, child in value.items():
            out[key], child_hit = masked(kind, (*path, str(key)), child, sensitive)
            hit = hit or child_hit
        return out, hit
    if isinstance(value, list):
        items = [masked(kind, (*path, str(i)), child, sensitive) for i, child in enumerate(value)]
        return [v for v, _ in items], any(h for _, h in items)
    return value, False


def masked_document(
    body: Mapping[str, Any] | None, sensitive: SensitiveFields = SensitiveFields()
) -> dict[str, Any] | None:
    """A whole object with its secrets masked (None stays None)."""
    if body is None:
        return None
    out, _ = masked(str(body.get("kind", "")), (), dict(body), sensitive)
    return dict(out)


def secret_values(
    bodies: Iterable[Mapping[str, Any]], sensitive: SensitiveFields = SensitiveFields()
) -> frozenset[str]:
    """Every secret string value of ``bodies`` (as text), to redact from messages."""
    found: set[str] = set()
    for body in bodies:
        kind = str(body.get("kind", ""))
        for path, value in leaf_fields(body).items():
            if value is not None and is_secret(kind, path, sensitive):
                text = value if isinstance(value, str) else json.dumps(value)
                if len(text) >= 3:
                    found.add(text)
    return frozenset(found)


def redact(text: str, values: Iterable[str]) -> str:
    """``text`` with each of ``values`` replaced by its mask (longest first)."""
    for value in sorted(values, key=len, reverse=True):
        if value in text:
            text = text.replace(value, digest(value))
    return text
