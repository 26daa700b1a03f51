"""The versioned JSON document of a fleet plan (``syncer.dev/diff/v3``), and its JSON Schema.

The schema ships as package data (``syncer/plan/diff.v3.schema.json``); docs/diff-json.md describes
it. Adding a field or an action value, renaming or removing one, or changing a meaning makes a new
version (a new schema file next to this one); the schema lists every field so that a document that
does not match its version is caught.
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Any

from syncer.domain.plans import OBJECT_ACTIONS, Action, Change, ClusterPlan, FieldChange, FleetPlan
from syncer.guards import GuardReport, RuleVerdict

API_VERSION = "syncer.dev/diff/v3"
SCHEMA_FILE = "diff.v3.schema.json"
KIND = "FleetDiff"


def _summary(clusters: tuple[ClusterPlan, ...]) -> dict[str, int]:
    totals = {action.value: 0 for action in OBJECT_ACTIONS}
    for cluster in clusters:
        for action, count in cluster.counts().items():
            totals[action.value] += count
    return totals


def _field(change: FieldChange) -> dict[str, Any]:
    return {
        "path": change.path,
        "action": change.action.value,
        "before": change.before,
        "after": change.after,
        "owners": list(change.owners),
        "masked": change.masked,
    }


def _verdict(verdict: RuleVerdict) -> dict[str, Any]:
    return {
        "rule": verdict.rule,
        "outcome": verdict.outcome.value,
        "message": verdict.message,
        "inputs": dict(verdict.inputs),
    }


def _change(change: Change, guards: GuardReport | None) -> dict[str, Any]:
    key = change.key
    verdicts = guards.for_change(key.cluster, key.subject) if guards is not None else ()
    return {
        "apiVersion": change.api_version,
        "kind": key.kind,
        "namespace": key.namespace,
        "name": key.name,
        "action": change.action.value,
        "managers": list(change.managers),
        "message": change.message,
        "predicted": change.predicted,
        "fields": [_field(f) for f in change.fields],
        "object": dict(change.after) if change.action is Action.CREATE and change.after is not None else None,
        "guards": [_verdict(v) for v in verdicts],
    }


def cluster_document(plan: ClusterPlan, guards: GuardReport | None = None) -> dict[str, Any]:
    return {
        "name": plan.cluster,
        "error": plan.error,
        "blocked": bool(plan.blocked),
        "blockedReason": plan.blocked,
        "hold": plan.hold,
        "pinnedTo": plan.pinned_to,
        "inventory": "" if plan.error else plan.inventory,
        "dryRuns": plan.dry_runs,
        "summary": _summary((plan,)),
        "objects": [_change(c, guards) for c in plan.changes],
    }


def guards_document(guards: GuardReport | None, policy: str = "") -> dict[str, Any]:
    """The revision-wide part of the guard verdicts (rule verdicts sit on each object)."""
    return {
        "policy": policy,
        "judged": guards is not None,
        "rejected": guards is not None and guards.rejected,
        "limits": [
            {"name": v.limit, "outcome": v.outcome.value, "message": v.message}
            for v in (guards.limits if guards is not None else ())
        ],
    }


def fleet_document(plan: FleetPlan, guards: GuardReport | None = None, policy: str = "") -> dict[str, Any]:
    """The plan as a ``syncer.dev/diff/v3`` document: plain JSON values, deterministic order;
    ``guards`` are the verdicts of the guard policy ``policy`` (None: not judged)."""
    return {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "revision": plan.revision,
        "offline": plan.offline,
        "changed": plan.has_changes,
        "errors": [*plan.errors, *(f"cluster {c.cluster}: {c.error}" for c in plan.clusters if c.error)],
        "leaving": [
            {"name": c.name, "objects": c.objects, "error": c.error, "message": c.describe()}
            for c in plan.leaving
        ],
        "summary": _summary(plan.clusters),
        "guards": guards_document(guards, policy),
        "waves": [
            {"name": wave.name, "clusters": [cluster_document(c, guards) for c in wave.clusters]}
            for wave in plan.waves
        ],
    }


@cache
def _schema_text() -> str:
    return resources.files("syncer.plan").joinpath(SCHEMA_FILE).read_text(encoding="utf-8")


def diff_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) every ``syncer.dev/diff/v3`` document satisfies."""
    loaded: dict[str, Any] = json.loads(_schema_text())
    return loaded
