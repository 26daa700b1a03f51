"""The three-way comparison of one cluster: desired bodies, what syncer last applied, and live objects.

Two steps, so that the engine can fetch server predictions in between:

1. ``dry_runs_needed(state)``: every object the sync would write and the local comparison cannot
   prove unchanged: creates (unless their namespace is created by the same sync), updates, adoptions,
   and drift or conflicts the rules would force. Each needs a server-side dry-run apply.
2. ``plan_cluster(state, predictions)``: every object classified with the rules the sync applies
   (``syncer.domain.rules``), the field changes taken from the predictions where there are any.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from syncer.domain.applied import (
    APPLIED_FIELDS_ANNOTATION,
    IDENTITY_FIELDS,
    MANAGED_BY_LABEL,
    MANAGED_BY_VALUE,
    TRACEPARENT_ANNOTATION,
    FieldPath,
    Inventory,
    applied_body,
    leaf_fields,
    recorded_fields,
)
from syncer.domain.objects import Manifest, ObjectKey
from syncer.domain.plans import Action, Change, ClusterPlan, FieldChange
from syncer.domain.rules import ConflictPolicy, SyncRules, blocked_reason
from syncer.domain.secrets import SensitiveFields, masked_document, redact, secret_values
from syncer.plan.fields import Ownership, covered, normalized, same, value_at
from syncer.plan.prune import prune_changes
from syncer.plan.report import FieldList, predicted_fields, with_fields

_ANNOTATION: FieldPath = ("metadata", "annotations", APPLIED_FIELDS_ANNOTATION)
# The traceparent the last traced apply wrote: syncer owns it, git never wants it; no change, no drift.
_TRACEPARENT: FieldPath = ("metadata", "annotations", TRACEPARENT_ANNOTATION)


@dataclass(frozen=True)
class PlanOptions:
    """``rules`` are the rules the sync follows (field manager, conflict policy, drift repair,
    pruning); ``sensitive`` the fields schemas mark as secret, masked with every other secret."""

    rules: SyncRules = field(default_factory=SyncRules)
    sensitive: SensitiveFields = field(default_factory=SensitiveFields)

    @property
    def field_manager(self) -> str:
        return self.rules.field_manager


@dataclass(frozen=True)
class ClusterState:
    """What the plan compares for one cluster. ``live`` holds the objects found live (every object
    carrying syncer's label, plus desired objects found to exist without it); ``inventory`` is what
    syncer applied last, and where that record came from."""

    cluster: str
    desired: tuple[Manifest, ...]
    live: Mapping[ObjectKey, Mapping[str, Any]]
    inventory: Inventory


@dataclass(frozen=True)
class DryRun:
    """A body to send as a server-side dry-run apply; ``force`` when the sync would force it.

    ``elsewhere`` is set for an object whose namespace this same sync creates: the server cannot
    dry-run it where it goes (the namespace does not exist yet), so ``body`` is placed in the
    namespace ``elsewhere`` names, which every cluster has, and only the server's verdict on it
    counts: whether it would refuse the object."""

    key: ObjectKey
    body: Mapping[str, Any]
    force: bool = False
    create: bool = False
    elsewhere: str = ""


# Where an object whose namespace this sync creates is checked by the server (see ``DryRun``).
CHECK_NAMESPACE = "default"


@dataclass(frozen=True)
class Prediction:
    """The answer to a dry-run apply: the predicted object, or the conflicts (manager, field) the
    server reported, or an error message; ``missing_namespace`` names the namespace of a create the
    server refused because it does not exist."""

    key: ObjectKey
    predicted: Mapping[str, Any] | None = None
    conflicts: tuple[tuple[str, str], ...] = ()
    error: str = ""
    missing_namespace: str = ""


@dataclass(frozen=True)
class _Local:
    """The local comparison of one desired object with its live object."""

    body: Mapping[str, Any]
    fields: tuple[FieldChange, ...]
    unchanged: bool
    adopted: tuple[FieldChange, ...]
    # Fields syncer owns that git no longer sets (and no other manager keeps): the apply gives them
    # up, whether or not their value changes.
    released: tuple[FieldChange, ...] = ()

    def having(self, action: Action) -> tuple[FieldChange, ...]:
        return tuple(f for f in self.fields if f.action == action)


def _labelled(live: Mapping[str, Any]) -> bool:
    return ((live.get("metadata") or {}).get("labels") or {}).get(MANAGED_BY_LABEL) == MANAGED_BY_VALUE


def _local(manifest: Manifest, live: Mapping[str, Any], recorded: bool, options: PlanOptions) -> _Local:
    body = applied_body(manifest)
    wanted = {p: v for p, v in leaf_fields(body).items() if p not in IDENTITY_FIELDS}
    ownership = Ownership(live, options.field_manager)
    applied_last: tuple[FieldPath, ...] = ()
    if recorded:
        applied_last = recorded_fields(live) or tuple(ownership.ours)
    out = FieldList(manifest.key.kind, options.sensitive)
    adopted = FieldList(manifest.key.kind, options.sensitive)
    released = FieldList(manifest.key.kind, options.sensitive)
    unchanged = True
    for path, want in sorted(wanted.items()):
        present, have = value_at(live, path)
        differs = not present or not same(have, want)
        ours = ownership.we_own(path)
        others = ownership.others(path)
        unchanged = unchanged and ours and not differs
        if not differs:
            if not ours and path != _ANNOTATION:
                adopted.add(path, (have, want), others, Action.ADOPT)
            continue
        if path == _ANNOTATION:
            continue
        if path in applied_last and not ours:
            # A field removed has no owner left: name the manager that wrote the object last.
            out.add(path, (have, want), others or (() if present else ownership.last_other()), Action.DRIFT)
        elif others:
            out.add(path, (have, want), others, Action.CONFLICT)
        else:
            out.add(path, (have, want), ownership.owners(path, options.field_manager), Action.UPDATE)
    for path in sorted(ownership.ours - {_TRACEPARENT}):
        if not covered(path, wanted):
            unchanged = False
            present, have = value_at(live, path)
            others = ownership.others(path)
            if present and others:
                # Other managers keep the field: syncer only stops owning it.
                adopted.add(path, (have, have), ownership.owners(path, options.field_manager), Action.RELEASE)
            else:
                out.add(path, (have, None), ownership.owners(path, options.field_manager), Action.UPDATE)
                released.add(
                    path, (have, have), ownership.owners(path, options.field_manager), Action.RELEASE
                )
    return _Local(body, out.done(), unchanged, adopted.done(), released.done())


def _managers(fields: tuple[FieldChange, ...], field_manager: str) -> tuple[str, ...]:
    return tuple(sorted({m for f in fields for m in f.owners if m != field_manager}))


class _Planner:
    def __init__(self, state: ClusterState, options: PlanOptions) -> None:
        self.state = state
        self.options = options
        self.new_namespaces = frozenset(
            m.key.name
            for m in state.desired
            if m.key.group == "" and m.key.kind == "Namespace" and m.key not in state.live
        )

    def local(self, manifest: Manifest) -> _Local:
        live = self.state.live[manifest.key]
        recorded = manifest.key in self.state.inventory and _labelled(live)
        return _local(manifest, live, recorded, self.options)

    def blocked(self, manifest: Manifest, local: _Local) -> Change | None:
        """A conflict or drift found locally (the server would refuse the apply without force)."""
        conflicts, drifts = local.having(Action.CONFLICT), local.having(Action.DRIFT)
        if not conflicts and not drifts:
            return None
        action = Action.CONFLICT if conflicts else Action.DRIFT
        managers = _managers(conflicts + drifts, self.options.field_manager)
        by = ", ".join(managers) or "another client"
        if conflicts:
            message = f"fields owned by {by} would change; applying needs force"
        elif managers:
            message = f"fields syncer applied were changed or removed by {by}"
        else:
            message = (
                "fields syncer applied were removed by a client the apiserver does not name "
                "(a removed field keeps no owner; the cluster's audit log says who)"
            )
        return self._change(manifest, action, local.fields, managers=managers, message=message)

    def forces(self, action: Action) -> bool:
        rules = self.options.rules
        return rules.conflicts is ConflictPolicy.FORCE or (action is Action.DRIFT and rules.heal_drift)

    def _change(
        self,
        manifest: Manifest,
        action: Action,
        fields: tuple[FieldChange, ...] = (),
        *,
        after: Mapping[str, Any] | None = None,
        **extra: Any,
    ) -> Change:
        live = self.state.live.get(manifest.key)
        before = normalized(live) if live is not None else None
        if after is None and action is not Action.UNCHANGED:
            after = with_fields(before, normalized(applied_body(manifest)), fields)
        if "message" in extra:
            # A message about one object (a server's refusal) can only echo that object's values.
            bodies = [manifest.body] if live is None else [manifest.body, live]
            extra["message"] = redact(extra["message"], secret_values(bodies, self.options.sensitive))
        return Change(
            manifest.key,
            manifest.api_version,
            action,
            tuple(sorted(fields, key=lambda f: f.path)),
            before=masked_document(before, self.options.sensitive)
            if action is not Action.UNCHANGED
            else None,
            after=masked_document(after, self.options.sensitive),
            **extra,
        )

    def existing(self, manifest: Manifest, prediction: Prediction | None) -> Change:
        local = self.local(manifest)
        if local.unchanged:
            return Change(manifest.key, manifest.api_version, Action.UNCHANGED)
        blocked = self.blocked(manifest, local)
        if prediction is not None and prediction.error and (blocked is None or self.forces(blocked.action)):
            return self._change(manifest, Action.ERROR, local.fields, message=prediction.error)
        if blocked is not None:
            return blocked
        if prediction is None:
            return self._change(manifest, Action.UPDATE, local.fields + local.adopted, message="not dry-run")
        if prediction.conflicts:
            managers = tuple(sorted({m for m, _ in prediction.conflicts}))
            named = ", ".join(f for _, f in prediction.conflicts)
            message = f"the server reports fields {named} owned by {', '.join(managers)}"
            return self._change(manifest, Action.CONFLICT, local.fields, managers=managers, message=message)
        live = self.state.live[manifest.key]
        predicted = prediction.predicted or {}
        fields = predicted_fields(manifest.key.kind, live, predicted, self.options)
        after = normalized(predicted)
        if not _labelled(live):
            message = "exists without syncer's label; the sync takes it over"
            return self._change(
                manifest, Action.ADOPT, fields + local.adopted, after=after, predicted=True, message=message
            )
        if fields:
            return self._change(manifest, Action.UPDATE, fields + local.adopted, after=after, predicted=True)
        if local.released:
            # The server keeps the values (a default fills them in), but the apply still gives up
            # syncer's ownership and its record of the fields, so that the next diff is free again.
            message = (
                "git no longer sets these fields; their values stay (a default), syncer stops owning them"
            )
            return self._change(
                manifest,
                Action.UPDATE,
                local.released + local.adopted,
                after=after,
                predicted=True,
                message=message,
            )
        if local.adopted:
            message = "values already match; the sync makes syncer own what git says"
            return self._change(
                manifest, Action.ADOPT, local.adopted, after=after, predicted=True, message=message
            )
        return Change(manifest.key, manifest.api_version, Action.UNCHANGED, predicted=True)

    def created(self, manifest: Manifest, prediction: Prediction | None) -> Change:
        body = normalized(applied_body(manifest))
        namespace = manifest.key.namespace
        if namespace in self.new_namespaces:
            if prediction is not None and prediction.error:
                message = (
                    f"{prediction.error} (checked in namespace {CHECK_NAMESPACE}: namespace {namespace} "
                    "is created first by this sync)"
                )
                return self._change(manifest, Action.ERROR, after=body, message=message)
            message = f"namespace {namespace} is created first by this sync"
            return self._change(manifest, Action.CREATE, after=body, message=message)
        if prediction is None:
            return self._change(manifest, Action.CREATE, after=body)
        if prediction.missing_namespace:
            message = (
                f"namespace {prediction.missing_namespace} does not exist and this sync does not create it"
            )
            return self._change(manifest, Action.ERROR, after=body, message=message)
        if prediction.conflicts:
            managers = tuple(sorted({m for m, _ in prediction.conflicts}))
            named = ", ".join(f for _, f in prediction.conflicts)
            message = (
                f"exists without syncer's label; the server reports fields {named} owned by "
                + ", ".join(managers)
            )
            return self._change(manifest, Action.CONFLICT, managers=managers, message=message, after=body)
        if prediction.error:
            return self._change(manifest, Action.ERROR, after=body, message=prediction.error)
        after = normalized(prediction.predicted or body)
        return self._change(manifest, Action.CREATE, after=after, predicted=True)


def dry_runs_needed(state: ClusterState, options: PlanOptions = PlanOptions()) -> tuple[DryRun, ...]:
    """The objects the sync would write that need a server-side dry-run apply to be predicted."""
    planner = _Planner(state, options)
    needed = []
    for manifest in state.desired:
        if manifest.key not in state.live:
            body = applied_body(manifest)
            if manifest.key.namespace not in planner.new_namespaces:
                needed.append(DryRun(manifest.key, body, create=True))
            else:
                metadata = {**body.get("metadata", {}), "namespace": CHECK_NAMESPACE}
                checked = {**body, "metadata": metadata}
                needed.append(
                    DryRun(manifest.key, checked, force=True, create=True, elsewhere=CHECK_NAMESPACE)
                )
            continue
        local = planner.local(manifest)
        if local.unchanged:
            continue
        blocked = planner.blocked(manifest, local)
        if blocked is None:
            needed.append(DryRun(manifest.key, local.body))
        elif planner.forces(blocked.action):
            needed.append(DryRun(manifest.key, local.body, force=True))
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
    for manifest in state.desired:
        if manifest.key in state.live:
            changes.append(planner.existing(manifest, found.get(manifest.key)))
        else:
            changes.append(planner.created(manifest, found.get(manifest.key)))
    changes += prune_changes(state.desired, state.live, state.inventory, options.rules, options.sensitive)
    ordered = tuple(sorted(changes, key=lambda c: c.key))
    return ClusterPlan(
        state.cluster,
        ordered,
        dry_runs=len(found),
        blocked=blocked_reason(ordered, options.rules),
        inventory=str(state.inventory.source),
    )
