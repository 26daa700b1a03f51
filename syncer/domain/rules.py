"""The rules a sync follows, in one place, so that ``syncer diff`` predicts with the very rules the
sync applies: the conflict policy, drift repair, whether and what may be pruned, and when a cluster
is blocked. The plan stage reads them to classify; the apply stage reads them again just before it
writes (the live object may have changed since the plan).

Pruning needs proof: an object is pruned only when it is in the inventory syncer keeps for the
cluster, is live, still carries syncer's managed-by label, has not opted out with the annotation
``syncer.dev/prune: disabled``, and its managedFields hold a server-side apply by syncer's own field
manager (the server's record that syncer applied it). A missing inventory prunes nothing; a rebuilt
one (the stored sync state was corrupt) never widens the set: each candidate still needs the proof.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from syncer.domain.applied import FIELD_MANAGER, MANAGED_BY_LABEL, MANAGED_BY_VALUE
from syncer.domain.plans import Action, Change

PRUNE_ANNOTATION = "syncer.dev/prune"
PRUNE_DISABLED = "disabled"


class ConflictPolicy(StrEnum):
    """``report``: a cluster with a conflict is not written at all; ``force``: syncer takes the fields."""

    REPORT = "report"
    FORCE = "force"


@dataclass(frozen=True)
class SyncRules:
    """``field_manager`` applies; ``conflicts`` decides what a field owned by another manager does;
    ``heal_drift`` re-takes with force the fields syncer applied that another client changed;
    ``prune`` deletes what is no longer desired (with proof of ownership)."""

    field_manager: str = FIELD_MANAGER
    conflicts: ConflictPolicy = ConflictPolicy.REPORT
    heal_drift: bool = True
    prune: bool = True


def applied_by(live: Mapping[str, Any], field_manager: str) -> bool:
    """Whether the server records a server-side apply of ``live`` by ``field_manager``."""
    entries = (live.get("metadata") or {}).get("managedFields") or []
    return any(
        isinstance(e, Mapping)
        and e.get("manager") == field_manager
        and e.get("operation") == "Apply"
        and not e.get("subresource")
        for e in entries
    )


def prune_refusal(live: Mapping[str, Any], rules: SyncRules) -> str:
    """Why the live object of an inventoried, no longer desired object is kept; ``""`` when it may go."""
    meta = live.get("metadata") or {}
    if not rules.prune:
        return "kept: pruning is turned off"
    if (meta.get("annotations") or {}).get(PRUNE_ANNOTATION) == PRUNE_DISABLED:
        return f"kept: prune disabled ({PRUNE_ANNOTATION}: {PRUNE_DISABLED})"
    if (meta.get("labels") or {}).get(MANAGED_BY_LABEL) != MANAGED_BY_VALUE:
        return "kept: no longer labelled as managed by syncer"
    if not applied_by(live, rules.field_manager):
        return f"kept: no proof syncer applied it (no server-side apply by {rules.field_manager!r})"
    return ""


NO_INVENTORY = "kept: the cluster has no recorded sync state, so nothing is pruned"


def blocked_reason(changes: Iterable[Change], rules: SyncRules) -> str:
    """Why a sync would write nothing to a cluster with these changes, or ``""`` when it would apply.

    A conflict under the ``report`` policy, drift while drift repair is off (the apply would be
    refused without force) and any object the server refused in the dry-run block the whole
    cluster: nothing is applied and nothing is pruned.
    """
    listed = list(changes)
    errors = [c for c in listed if c.action is Action.ERROR]
    if errors:
        return f"the server refused {len(errors)} object(s) in the dry-run: " + "; ".join(
            f"{c.key.subject}: {c.message}" for c in errors
        )
    conflicts = [c for c in listed if c.action is Action.CONFLICT]
    if conflicts and rules.conflicts is ConflictPolicy.REPORT:
        return "conflicts (policy report): " + "; ".join(_conflict(c) for c in conflicts)
    drifts = [c for c in listed if c.action is Action.DRIFT]
    if drifts and not rules.heal_drift and rules.conflicts is ConflictPolicy.REPORT:
        return "drift (repair off): " + "; ".join(_conflict(c) for c in drifts)
    return ""


def _conflict(change: Change) -> str:
    managers = ", ".join(change.managers) or "another field manager"
    fields = ", ".join(f.path for f in change.fields if f.action in (Action.CONFLICT, Action.DRIFT))
    return f"{change.key.subject}: {fields or 'some fields'} owned by {managers}"


def forced(change: Change, rules: SyncRules) -> bool:
    """Whether applying ``change`` takes fields from other managers (``force=true``)."""
    return rules.conflicts is ConflictPolicy.FORCE or (change.action is Action.DRIFT and rules.heal_drift)
