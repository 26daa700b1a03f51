"""Fields of live objects: who owns them (managedFields), noise-free copies, strict comparison.

``MASK``, ``is_secret`` and ``masked`` are re-exported from ``syncer.domain.secrets``.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from syncer.domain.applied import BOOKKEEPING_ANNOTATIONS, FieldPath
from syncer.domain.secrets import MASK, is_secret, masked

NOISY_METADATA = (
    "managedFields",
    "resourceVersion",
    "generation",
    "uid",
    "creationTimestamp",
    "selfLink",
)
_MISSING = object()


@dataclass(frozen=True)
class ManagerFields:
    """The fields one managedFields entry owns. Paths stop at list items (``k:``/``v:``/``i:`` keys):
    a manager that owns any item of a list is taken to own the list."""

    manager: str
    operation: str
    subresource: str
    paths: frozenset[FieldPath]
    time: str = ""  # when the manager last wrote (RFC 3339, as the apiserver records it)

    @property
    def label(self) -> str:
        return self.manager if self.operation in ("Apply", "Update") else f"{self.manager} ({self.operation})"


def _owned(node: Mapping[str, Any], prefix: FieldPath) -> set[FieldPath]:
    children = {k: v for k, v in node.items() if k != "."}
    if not children or any(k[:2] in ("k:", "v:", "i:") for k in children):
        return {prefix} if prefix else set()
    owned: set[FieldPath] = set()
    for key, child in children.items():
        if key.startswith("f:"):
            owned |= _owned(child if isinstance(child, Mapping) else {}, (*prefix, key[2:]))
    return owned


def managed_fields(live: Mapping[str, Any]) -> tuple[ManagerFields, ...]:
    entries = (live.get("metadata") or {}).get("managedFields") or []
    found = []
    for entry in entries:
        if not isinstance(entry, Mapping) or entry.get("fieldsType", "FieldsV1") != "FieldsV1":
            continue
        fields = entry.get("fieldsV1")
        found.append(
            ManagerFields(
                manager=str(entry.get("manager", "")),
                operation=str(entry.get("operation", "")),
                subresource=str(entry.get("subresource", "")),
                paths=frozenset(_owned(fields if isinstance(fields, Mapping) else {}, ())),
                time=str(entry.get("time", "")),
            )
        )
    return tuple(found)


def _related(a: FieldPath, b: FieldPath) -> bool:
    """Whether one path is the other or lies below it."""
    shorter = min(len(a), len(b))
    return a[:shorter] == b[:shorter]


class Ownership:
    """Ownership of a live object's fields; ``ours`` is the Apply entry of our field manager."""

    def __init__(self, live: Mapping[str, Any], field_manager: str) -> None:
        entries = [e for e in managed_fields(live) if not e.subresource]
        is_ours = [e.manager == field_manager and e.operation == "Apply" for e in entries]
        self.ours: frozenset[FieldPath] = frozenset(
            p for e, mine in zip(entries, is_ours, strict=True) if mine for p in e.paths
        )
        self._others = [e for e, mine in zip(entries, is_ours, strict=True) if not mine]

    def we_own(self, path: FieldPath) -> bool:
        """Whether our manager owns ``path`` (or a list or map above it, as one field)."""
        return any(path[: len(p)] == p for p in self.ours)

    def others(self, path: FieldPath) -> tuple[str, ...]:
        """The other managers owning ``path``, something above it, or something below it."""
        return tuple(sorted({e.label for e in self._others if any(_related(path, p) for p in e.paths)}))

    def last_other(self) -> tuple[str, ...]:
        """The other manager that wrote the object last (none when no other did): the apiserver keeps
        no owner for a field that is gone, so this is who most likely removed one."""
        if not self._others:
            return ()
        latest = max(self._others, key=lambda e: e.time)
        return (f"{latest.label}, last to write it",)

    def owners(self, path: FieldPath, field_manager: str) -> tuple[str, ...]:
        mine = (field_manager,) if any(_related(path, p) for p in self.ours) else ()
        return tuple(sorted({*mine, *self.others(path)}))


def value_at(body: Mapping[str, Any], path: FieldPath) -> tuple[bool, Any]:
    """``(True, value)`` when ``path`` is in ``body`` (list indexes as strings), else ``(False, None)``."""
    node: Any = body
    for part in path:
        if isinstance(node, Mapping):
            node = node.get(part, _MISSING)
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return False, None
        if node is _MISSING:
            return False, None
    return True, node


def normalized(obj: Mapping[str, Any]) -> dict[str, Any]:
    """A copy without what the server keeps for itself: status, managedFields, resourceVersion,
    generation, uid, timestamps and syncer's own bookkeeping annotations (applied fields, traceparent)."""
    body = copy.deepcopy(dict(obj))
    body.pop("status", None)
    metadata = body.get("metadata")
    if isinstance(metadata, dict):
        for key in NOISY_METADATA:
            metadata.pop(key, None)
        annotations = metadata.get("annotations")
        if isinstance(annotations, dict):
            for name in BOOKKEEPING_ANNOTATIONS:
                annotations.pop(name, None)
            if not annotations:
                metadata.pop("annotations")
    return body


def covered(path: FieldPath, paths: Iterable[FieldPath]) -> bool:
    """Whether ``path`` is one of ``paths``, above one, or below one."""
    return any(_related(path, p) for p in paths)


def same(a: Any, b: Any) -> bool:
    """Type-strict equality of JSON values: ``true`` is not ``1`` and ``"1"`` is not ``1``; integers
    and floats of equal value are equal (JSON has one number type); maps and lists compare item by item."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and bool(a == b)


__all__ = [
    "MASK",
    "ManagerFields",
    "Ownership",
    "covered",
    "is_secret",
    "managed_fields",
    "masked",
    "normalized",
    "same",
    "value_at",
]
