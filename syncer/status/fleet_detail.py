"""A cluster's detail on the fleet page, beside its cell: the history of revisions it records, the
change set of its last apply (each object's action, outcome and masked field changes), each
object's health as the last health check judged it, the canary analysis's measurements of the
revision it runs, and the guard failures of the refused tip that concern it.

Pure, like ``syncer.status.fleet_view``: folded from the pass's typed events and results, never read
back out of text. Field values are shown as the plan masked them (``syncer.domain.secrets``, as
``syncer diff`` shows them).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, replace
from typing import Any

from syncer.domain.analysis import Measurement
from syncer.domain.changeset import ChangeEntry, ChangeSet
from syncer.domain.health import ObjectHealth
from syncer.domain.plans import Action, FieldChange
from syncer.domain.progress import PassEvent, Step
from syncer.domain.revision_history import HistoryEntry, bounded
from syncer.errors import GuardFailure

SHORT_SHA = 12
"""Characters of a commit id the page shows."""

FIELDS_SHOWN = 20
"""Field changes the page shows per object (the rest are counted)."""

VALUE_SHOWN = 200
"""Characters of one field value the page shows."""

_CHANGE_STEPS = frozenset({Step.APPLIED, Step.APPLY_FAILED, Step.DRIFT_REPAIRED, Step.DRIFT_REPAIR_FAILED})
# A create's fields are the whole object: the action says it; only changes to a live object list fields.
_FIELDS_OF = frozenset({Action.UPDATE, Action.ADOPT, Action.DRIFT, Action.CONFLICT})


@dataclass(frozen=True)
class ObjectView:
    """An object a cluster's state records as applied."""

    kind: str
    namespace: str
    name: str

    @property
    def subject(self) -> str:
        """``Kind/ns/name`` (``Kind/name`` cluster-scoped), as change sets and health verdicts name it."""
        return f"{self.kind}/{self.namespace}/{self.name}" if self.namespace else f"{self.kind}/{self.name}"


@dataclass(frozen=True)
class ClusterDetail:
    """What the detail shows beyond the cell: ``history`` as the cluster records it (oldest first),
    ``changes`` the change set of the last apply or drift repair told (None: none since the agent
    started), ``objects_health`` the last health check's verdict of each object, ``measurements``
    the last measurement of each analysis metric of the revision it applies, and ``analysis`` the
    analysis counts its state records (as ``syncer status`` shows them)."""

    history: tuple[HistoryEntry, ...] = ()
    changes: ChangeSet | None = None
    objects_health: tuple[ObjectHealth, ...] = ()
    measurements: tuple[Measurement, ...] = ()
    analysis: str = ""


def fold_detail(detail: ClusterDetail, event: PassEvent) -> ClusterDetail:
    """The detail after one event of its cluster: a new revision applying starts its measurements
    again; an apply or repair gives the last change set; a health check each object's health; an
    analysis measurement replaces its metric's last one."""
    if event.step is Step.APPLYING:
        return replace(detail, measurements=())
    if event.step in _CHANGE_STEPS and event.changes is not None:
        return replace(detail, changes=event.changes)
    if event.step is Step.HEALTH_CHECKED and event.objects_health:
        return replace(detail, objects_health=event.objects_health)
    if event.step is Step.ANALYSIS_MEASURED and event.measurement is not None:
        measured = event.measurement
        kept = tuple(m for m in detail.measurements if m.metric != measured.metric)
        return replace(detail, measurements=(*kept, measured))
    return detail


def _when(stamp: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(stamp)) if stamp else ""


def _value(value: Any) -> str:
    """A field value as the page shows it: JSON, cut to ``VALUE_SHOWN`` characters ("" when absent)."""
    if value is None:
        return ""
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True, separators=(",", ":"))
    return bounded(text, VALUE_SHOWN)


def _field(change: FieldChange) -> dict[str, Any]:
    return {
        "path": change.path,
        "before": _value(change.before),
        "after": _value(change.after),
        "masked": change.masked,
    }


def _entry(entry: ChangeEntry) -> dict[str, Any]:
    fields = entry.fields if entry.action in _FIELDS_OF else ()
    return {
        "subject": entry.subject,
        "action": str(entry.action),
        "outcome": str(entry.outcome),
        "message": entry.message,
        "fields": [_field(f) for f in fields[:FIELDS_SHOWN]],
        "moreFields": max(len(fields) - FIELDS_SHOWN, 0),
    }


def _history(entry: HistoryEntry) -> dict[str, Any]:
    return {
        "revision": entry.revision,
        "short": entry.revision[:SHORT_SHA],
        "signer": entry.signer,
        "started": _when(entry.started),
        "ended": _when(entry.ended),
        "wave": entry.wave,
        "outcome": str(entry.outcome),
        "reason": entry.reason,
        "by": entry.by,
    }


def _measurement(m: Measurement) -> dict[str, Any]:
    return {
        "kind": "analysis",
        "name": m.metric,
        "verdict": str(m.verdict),
        "outcome": str(m.outcome),
        "value": "" if m.value is None else f"{m.value:g}",
        "threshold": m.threshold,
        "detail": m.detail + (" (dry run)" if m.dry_run else ""),
    }


def _guard(failure: GuardFailure) -> dict[str, Any]:
    return {
        "kind": "guard",
        "name": failure.guard,
        "verdict": failure.outcome,
        "outcome": failure.outcome,
        "value": "",
        "threshold": "",
        "detail": failure.line,
    }


def objects_json(
    detail: ClusterDetail, objects: tuple[ObjectView, ...], revision: str
) -> list[dict[str, str]]:
    """The objects the state records as applied, each with the action of the last apply of
    ``revision`` (``unchanged`` when that apply did not write it; "" when no apply of it was told)
    and its health where the last health check judged it."""
    changes = detail.changes if detail.changes is not None and detail.changes.revision == revision else None
    actions = {e.subject: str(e.action) for e in changes.entries} if changes is not None else {}
    health = {o.subject: o for o in detail.objects_health}
    rows = []
    for o in objects:
        judged = health.get(o.subject)
        action = actions.get(o.subject, str(Action.UNCHANGED) if changes is not None else "")
        rows.append(
            {
                "kind": o.kind,
                "namespace": o.namespace,
                "name": o.name,
                "action": action,
                "health": str(judged.health) if judged else "",
                "healthDetail": " ".join(p for p in (judged.reason, judged.message) if p) if judged else "",
            }
        )
    return rows


def detail_json(detail: ClusterDetail, guards: tuple[GuardFailure, ...]) -> dict[str, Any]:
    """The detail's history, last change set and verdicts as the page's JSON (the objects are
    ``objects_json``)."""
    changes = detail.changes
    diff = None
    if changes is not None:
        diff = {
            "revision": changes.revision,
            "short": changes.revision[:SHORT_SHA],
            "error": changes.error,
            "entries": [_entry(e) for e in changes.entries],
        }
    return {
        "history": [_history(e) for e in detail.history],
        "diff": diff,
        "verdicts": [*(_guard(g) for g in guards), *(_measurement(m) for m in detail.measurements)],
        "analysis": detail.analysis,
    }
