"""The three-way comparison of one cluster: desired bodies, what syncer last applied, and live objects.

Two steps, so that the engine can fetch server predictions in between:

1. ``dry_runs_needed(state)``: the objects the local comparison cannot prove unchanged and that are
   not already blocked by a conflict or drift; only those need a server-side dry-run apply.
2. ``plan_cluster(state, predictions)``: every object classified, the updates' field changes taken
   from the predictions (predicted vs live, both normalized).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import jsonpatch

from syncer.domain.applied import (
    APPLIED_FIELDS_ANNOTATION,
    IDENTITY_FIELDS,
    FieldPath,
    Inventory,
    applied_body,
    leaf_fields,
    parse_pointer,
    pointer,
    recorded_fields,
)
from syncer.domain.changes import Action, Change, ClusterPlan, FieldChange
from syncer.domain.objects import Manifest, ObjectKey
from syncer.plan.fields import Ownership, covered, masked, normalized, value_at

_ANNOTATION: FieldPath = ("metadata", "annotations", APPLIED_FIELDS_ANNOTATION)


@dataclass(frozen=True)
class PlanOptions:
    """``field_manager`` is the manager syncer applies as; its Apply entry marks the fields it owns."""

    field_manager: str = "syncer"


@dataclass(frozen=True)
class ClusterState:
    """What the plan compares for one cluster. ``live`` holds the objects found live (at least every
    desired or inventoried one that exists); ``inventory`` is what syncer applied last, from wherever
    it is kept."""

    cluster: str
    desired: tuple[Manifest, ...]
    live: Mapping[ObjectKey, Mapping[str, Any]]
    inventory: Inventory


@dataclass(frozen=True)
class DryRun:
    """A body to send as a server-side dry-run apply."""

    key: ObjectKey
    body: Mapping[str, Any]


@dataclass(frozen=True)
class Prediction:
    """The answer to a dry-run apply: the predicted object, or the conflicts (manager, field) the
    server reported, or an error message."""

    key: ObjectKey
    predicted: Mapping[str, Any] | None = None
    conflicts: tuple[tuple[str, str], ...] = ()
    error: str = ""


@dataclass(frozen=True)
class _Local:
    """The local comparison of one desired object with its live object."""

    body: Mapping[str, Any]
    fields: tuple[FieldChange, ...]
    unchanged: bool

    def having(self, action: Action) -> tuple[FieldChange, ...]:
        return tuple(f for f in self.fields if f.action == action)


@dataclass
class _Builder:
    kind: str
    fields: list[FieldChange] = field(default_factory=list)

    def add(self, path: FieldPath, sides: tuple[Any, Any], owners: tuple[str, ...], action: Action) -> None:
        before, hidden_before = masked(self.kind, path, sides[0])
        after, hidden_after = masked(self.kind, path, sides[1])
        self.fields.append(
            FieldChange(pointer(path), before, after, owners, action, hidden_before or hidden_after)
        )


def _local(manifest: Manifest, live: Mapping[str, Any], recorded: bool, options: PlanOptions) -> _Local:
    body = applied_body(manifest)
    wanted = {p: v for p, v in leaf_fields(body).items() if p not in IDENTITY_FIELDS}
    ownership = Ownership(live, options.field_manager)
    applied_last: tuple[FieldPath, ...] = ()
    if recorded:
        applied_last = recorded_fields(live) or tuple(ownership.ours)
    out = _Builder(manifest.key.kind)
    unchanged = True
    for path, want in sorted(wanted.items()):
        present, have = value_at(live, path)
        differs = not present or have != want
        ours = ownership.we_own(path)
        others = ownership.others(path)
        unchanged = unchanged and ours and not differs
        if path == _ANNOTATION or not differs:
            continue
        if path in applied_last and not ours:
            out.add(path, (have, want), others, Action.DRIFT)
        elif others:
            out.add(path, (have, want), others, Action.CONFLICT)
        else:
            out.add(path, (have, want), ownership.owners(path, options.field_manager), Action.UPDATE)
    for path in sorted(ownership.ours):
        if not covered(path, wanted):
            unchanged = False
            _, have = value_at(live, path)
            out.add(path, (have, None), ownership.owners(path, options.field_manager), Action.UPDATE)
    return _Local(body, tuple(out.fields), unchanged)


def _predicted_fields(
    key: ObjectKey, live: Mapping[str, Any], predicted: Mapping[str, Any], options: PlanOptions
) -> tuple[FieldChange, ...]:
    before, after = normalized(live), normalized(predicted)
    ownership = Ownership(live, options.field_manager)
    out = _Builder(key.kind)
    seen: set[FieldPath] = set()
    for operation in jsonpatch.make_patch(before, after).patch:
        for raw in (operation.get("from"), operation["path"]):
            if raw is None or (path := parse_pointer(raw)) in seen:
                continue
            seen.add(path)
            sides = (value_at(before, path)[1], value_at(after, path)[1])
            out.add(path, sides, ownership.owners(path, options.field_manager), Action.UPDATE)
    return tuple(sorted(out.fields, key=lambda f: f.path))


def _managers(fields: tuple[FieldChange, ...], field_manager: str) -> tuple[str, ...]:
    return tuple(sorted({m for f in fields for m in f.owners if m != field_manager}))


class _Planner:
    def __init__(self, state: ClusterState, options: PlanOptions) -> None:
        self.state = state
        self.options = options

    def local(self, manifest: Manifest) -> _Local:
        live = self.state.live[manifest.key]
        return _local(manifest, live, manifest.key in self.state.inventory, self.options)

    def blocked(self, manifest: Manifest, local: _Local) -> Change | None:
        """A conflict or drift found locally; the server would refuse the apply anyway."""
        conflicts, drifts = local.having(Action.CONFLICT), local.having(Action.DRIFT)
        if not conflicts and not drifts:
            return None
        action = Action.CONFLICT if conflicts else Action.DRIFT
        blocking = conflicts + drifts
        managers = _managers(blocking, self.options.field_manager)
        by = ", ".join(managers) or "another client"
        if conflicts:
            message = f"fields owned by {by} would change; applying needs force"
        else:
            message = f"fields syncer applied were changed or removed by {by}"
        return Change(manifest.key, manifest.api_version, action, local.fields, managers, message)

    def existing(self, manifest: Manifest, prediction: Prediction | None) -> Change:
        key, api_version = manifest.key, manifest.api_version
        local = self.local(manifest)
        if local.unchanged:
            return Change(key, api_version, Action.UNCHANGED)
        blocked = self.blocked(manifest, local)
        if blocked is not None:
            return blocked
        if prediction is None:
            return Change(key, api_version, Action.UPDATE, local.fields, message="not dry-run")
        if prediction.conflicts:
            managers = tuple(sorted({m for m, _ in prediction.conflicts}))
            named = ", ".join(f for _, f in prediction.conflicts)
            message = f"the server reports fields {named} owned by {', '.join(managers)}"
            return Change(key, api_version, Action.CONFLICT, local.fields, managers, message)
        if prediction.error or prediction.predicted is None:
            return Change(key, api_version, Action.UPDATE, local.fields, message=prediction.error)
        live = self.state.live[key]
        fields = _predicted_fields(key, live, prediction.predicted, self.options)
        action = Action.UPDATE if fields else Action.UNCHANGED
        return Change(key, api_version, action, fields, predicted=True)

    def created(self, manifest: Manifest) -> Change:
        out = _Builder(manifest.key.kind)
        for path, value in sorted(leaf_fields(applied_body(manifest)).items()):
            if path not in IDENTITY_FIELDS and path != _ANNOTATION:
                out.add(path, (None, value), (), Action.CREATE)
        return Change(manifest.key, manifest.api_version, Action.CREATE, tuple(out.fields))


def dry_runs_needed(state: ClusterState, options: PlanOptions = PlanOptions()) -> tuple[DryRun, ...]:
    """The objects that need a server-side dry-run apply: live, not provably unchanged, not blocked."""
    planner = _Planner(state, options)
    needed = []
    for manifest in state.desired:
        if manifest.key not in state.live:
            continue
        local = planner.local(manifest)
        if not local.unchanged and planner.blocked(manifest, local) is None:
            needed.append(DryRun(manifest.key, local.body))
    return tuple(needed)


def plan_cluster(
    state: ClusterState,
    predictions: Mapping[ObjectKey, Prediction] | None = None,
    options: PlanOptions = PlanOptions(),
) -> ClusterPlan:
    """Every object of one cluster classified; ``predictions`` are the dry-run answers by key."""
    planner = _Planner(state, options)
    found = predictions or {}
    changes: list[Change] = []
    desired = {m.key for m in state.desired}
    for manifest in state.desired:
        if manifest.key in state.live:
            changes.append(planner.existing(manifest, found.get(manifest.key)))
        else:
            changes.append(planner.created(manifest))
    for key in sorted(state.inventory.keys - desired):
        live = state.live.get(key)
        if live is not None:
            changes.append(
                Change(key, str(live.get("apiVersion", "")), Action.PRUNE, message="no longer desired")
            )
    return ClusterPlan(state.cluster, tuple(sorted(changes, key=lambda c: c.key)), dry_runs=len(found))
