"""What syncer applies: the body it sends for a manifest, and the inventory of what it applied.

One place for the marks every applied object carries, so that the plan (which predicts the apply)
and the apply stage (which performs it) send the very same body:

* the label ``app.kubernetes.io/managed-by: syncer``, by which live state is listed;
* the annotation ``syncer.dev/applied-fields``: the JSON pointers of the fields syncer set, sorted,
  as a JSON list. It records which fields syncer meant to own, so that a field another manager has
  since taken over is told apart (drift) from a field syncer newly wants (conflict); see docs/diff.md.

With tracing on, the apply also writes the annotation ``syncer.dev/traceparent``: the W3C traceparent
of the agent's span that applied the object, which the controller's reconcile continues. It is no
field of git's: the plan neither wants it nor counts it as drift (``BOOKKEEPING_ANNOTATIONS``).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from jsonpatch import JsonPointer

from syncer.domain.objects import Manifest, ObjectKey

MANAGED_BY_LABEL = "app.kubernetes.io/managed-by"
MANAGED_BY_VALUE = "syncer"
MANAGED_BY_SELECTOR = f"{MANAGED_BY_LABEL}={MANAGED_BY_VALUE}"
APPLIED_FIELDS_ANNOTATION = "syncer.dev/applied-fields"
TRACEPARENT_ANNOTATION = "syncer.dev/traceparent"
BOOKKEEPING_ANNOTATIONS = (APPLIED_FIELDS_ANNOTATION, TRACEPARENT_ANNOTATION)
"""Annotations syncer writes for itself: never compared, never drift."""
FIELD_MANAGER = "syncer"
"""The field manager syncer applies desired objects as (the controller and the sync state have their
own: ``syncer.controller.model.FIELD_MANAGER``, ``syncer.status.state_store.STATE_FIELD_MANAGER``)."""

FieldPath = tuple[str, ...]
"""A field as the parts of its JSON pointer: ``("spec", "shards")``; list indexes are strings."""

IDENTITY_FIELDS: frozenset[FieldPath] = frozenset(
    {("apiVersion",), ("kind",), ("metadata", "name"), ("metadata", "namespace")}
)
_ANNOTATION_PATH: FieldPath = ("metadata", "annotations", APPLIED_FIELDS_ANNOTATION)


def pointer(path: FieldPath) -> str:
    """The RFC 6901 JSON pointer of a path (``/spec/shards``; ``""`` for the whole object).

    Built directly (``~`` as ``~0``, then ``/`` as ``~1``): it is on the path of every object a plan
    compares, where ``JsonPointer.from_parts`` (which parses what it built) costs more than the rest of
    the body; ``parse_pointer`` reads it back with jsonpatch."""
    return "".join("/" + part.replace("~", "~0").replace("/", "~1") for part in path)


def parse_pointer(text: str) -> FieldPath:
    return tuple(str(part) for part in JsonPointer(text).parts)


def leaf_fields(body: Mapping[str, Any], prefix: FieldPath = ()) -> dict[FieldPath, Any]:
    """Every leaf of a body by path. Mappings are walked into; scalars, lists and empty mappings are
    leaves (lists count as one field, as server-side apply treats lists without merge keys)."""
    leaves: dict[FieldPath, Any] = {}
    for key, value in body.items():
        path = (*prefix, str(key))
        if isinstance(value, Mapping) and value:
            leaves.update(leaf_fields(value, path))
        else:
            leaves[path] = value
    return leaves


def applied_fields(body: Mapping[str, Any]) -> tuple[FieldPath, ...]:
    """The fields syncer sets by applying ``body``: its leaves without identity and our annotation."""
    return tuple(sorted(p for p in leaf_fields(body) if p not in IDENTITY_FIELDS and p != _ANNOTATION_PATH))


def recorded_fields(live: Mapping[str, Any]) -> tuple[FieldPath, ...] | None:
    """The fields a live object's annotation says syncer applied last, or None when it has none."""
    annotations = (live.get("metadata") or {}).get("annotations") or {}
    raw = annotations.get(APPLIED_FIELDS_ANNOTATION)
    if not isinstance(raw, str):
        return None
    try:
        listed = json.loads(raw)
        return tuple(parse_pointer(str(item)) for item in listed) if isinstance(listed, list) else None
    except (ValueError, TypeError):
        return None


def applied_body(manifest: Manifest) -> dict[str, Any]:
    """The body syncer applies for a manifest: the manifest plus the managed-by label and the
    applied-fields annotation. Deterministic: the same manifest always gives the same body."""
    body = copy.deepcopy(dict(manifest.body))
    metadata = body.setdefault("metadata", {})
    metadata.setdefault("labels", {})[MANAGED_BY_LABEL] = MANAGED_BY_VALUE
    fields = [pointer(p) for p in applied_fields(body)]
    metadata.setdefault("annotations", {})[APPLIED_FIELDS_ANNOTATION] = json.dumps(
        fields, separators=(",", ":")
    )
    return body


class InventorySource(StrEnum):
    """Where a cluster's inventory came from: its stored sync state (``recorded``), the objects that
    carry syncer's label because the stored state was unreadable (``rebuilt``), or nowhere: the
    cluster has no sync state (``missing``, nothing is pruned)."""

    RECORDED = "recorded"
    REBUILT = "rebuilt"
    MISSING = "missing"


@dataclass(frozen=True)
class Inventory:
    """The objects syncer applied to one cluster at ``revision`` (empty when unknown), and where
    that list came from."""

    cluster: str
    keys: frozenset[ObjectKey]
    revision: str = ""
    source: InventorySource = InventorySource.RECORDED

    @staticmethod
    def of(
        cluster: str,
        keys: Iterable[ObjectKey],
        revision: str = "",
        source: InventorySource = InventorySource.RECORDED,
    ) -> Inventory:
        return Inventory(cluster, frozenset(keys), revision, source)

    @staticmethod
    def missing(cluster: str) -> Inventory:
        return Inventory(cluster, frozenset(), "", InventorySource.MISSING)

    def __contains__(self, key: object) -> bool:
        return key in self.keys
