"""Which values are secret, and how they are shown: masked, with a short digest.

A value is secret when it is any value of a Secret's ``data``/``stringData``; a Redis password
directive in a RedisCluster's ``spec.redisConfig`` (``requirepass``, ``masterauth``, ``user`` ACL
lines, TLS key passphrases); a field named like a secret (``password``, ``token``, ``apiKey``, ...);
or a field the kind's CRD schema marks ``format: password`` (the OpenAPI format that tells tools to
hide a value; ``sensitive_fields`` reads them from CRD documents). Masked values read
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

from syncer.domain.applied import FieldPath

MASK = "<masked>"
_SECRET_NAME = re.compile(r"(password|passwd|passphrase|token|secret|credentials?|privatekey|apikey)$", re.I)
REDIS_SECRET_DIRECTIVES = frozenset(
    {"requirepass", "masterauth", "user", "tls-key-file-pass", "tls-client-key-file-pass"}
)
WILDCARD = "*"


@dataclass(frozen=True)
class SensitiveFields:
    """Fields marked sensitive by schemas, per kind: paths where ``*`` stands for any map key or
    list index (from ``format: password`` in a CRD's OpenAPI schema)."""

    by_kind: Mapping[str, tuple[FieldPath, ...]] = field(default_factory=dict)

    def marks(self, kind: str, path: FieldPath) -> bool:
        for pattern in self.by_kind.get(kind, ()):
            if len(pattern) == len(path) and all(
                p in (WILDCARD, q) for p, q in zip(pattern, path, strict=True)
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


def _secret_texts(kind: str, path: FieldPath, value: Any, sensitive: SensitiveFields) -> Iterable[str]:
    if value is None:
        return
    if path and is_secret(kind, path, sensitive):
        text = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
        if len(text) >= 3:
            yield text
    elif isinstance(value, Mapping):
        for key, child in value.items():
            yield from _secret_texts(kind, (*path, str(key)), child, sensitive)
    elif isinstance(value, list):
        for index, child in enumerate(value):
            yield from _secret_texts(kind, (*path, str(index)), child, sensitive)


def secret_values(
    bodies: Iterable[Mapping[str, Any]], sensitive: SensitiveFields = SensitiveFields()
) -> frozenset[str]:
    """Every secret value of ``bodies`` (as text; mappings and lists walked into, as ``masked`` walks
    them), to redact from messages."""
    found: set[str] = set()
    for body in bodies:
        found.update(_secret_texts(str(body.get("kind", "")), (), body, sensitive))
    return frozenset(found)


def redact(text: str, values: Iterable[str]) -> str:
    """``text`` with each of ``values`` replaced by its mask (longest first)."""
    for value in sorted(values, key=len, reverse=True):
        if value in text:
            text = text.replace(value, digest(value))
    return text


def _password_paths(node: Mapping[str, Any], path: FieldPath) -> list[FieldPath]:
    found = [path] if node.get("format") == "password" else []
    for name, sub in (node.get("properties") or {}).items():
        found += _password_paths(sub, (*path, str(name)))
    for key in ("additionalProperties", "items"):
        sub = node.get(key)
        if isinstance(sub, Mapping):
            found += _password_paths(sub, (*path, WILDCARD))
    for key in ("allOf", "anyOf", "oneOf"):
        for sub in node.get(key) or ():
            found += _password_paths(sub, path)
    return found


def sensitive_fields(*crds: Mapping[str, Any]) -> SensitiveFields:
    """The fields the CRDs' schemas (every version) mark ``format: password``, per kind; a map value
    or list item is marked for every key or index (``*``)."""
    by_kind: dict[str, set[FieldPath]] = {}
    for crd in crds:
        spec = crd.get("spec") or {}
        kind = str((spec.get("names") or {}).get("kind", ""))
        for version in spec.get("versions") or ():
            schema = (version.get("schema") or {}).get("openAPIV3Schema") or {}
            by_kind.setdefault(kind, set()).update(_password_paths(schema, ()))
    return SensitiveFields({kind: tuple(sorted(paths)) for kind, paths in by_kind.items() if paths})
