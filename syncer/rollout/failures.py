"""Failed-before, judged per cluster and per cause. Pure: change sets, states and live objects in.

A revision is remembered as bad only on a cluster where *it* failed after its own apply there:
its apply failed (``apply_failure``), or what it applied did not become healthy on a cluster that
was healthy before it (``blame``). A cluster that was already not healthy before the revision was
applied is not blamed, and a cluster of a failed wave that applied cleanly is not marked.

The cause decides what lets the revision be tried again (``refusal``): a ``content`` failure is
refused until git changes the cluster's objects; a ``live`` failure is tried again once the live
state of the objects that stood in the way changes (``fingerprint``), at once when there is
nothing to watch (an apiserver that did not answer), and any failure after a person's
``syncer retry``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from syncer.domain.changeset import ChangeSet, EntryOutcome, FailureCause
from syncer.domain.objects import ObjectKey
from syncer.domain.plans import Action
from syncer.domain.sync_state import ClusterSyncState, FailedRevision, InventoryEntry, SyncPhase

# Actions of a blocked plan whose objects the live state holds up (another manager's fields or values).
_LIVE_ACTIONS = frozenset({Action.CONFLICT, Action.DRIFT})


@dataclass(frozen=True)
class Refusal:
    """A cluster that refuses a revision because ``failure`` happened there before."""

    cluster: str
    failure: FailedRevision

    @property
    def why(self) -> str:
        failure = self.failure
        if failure.cause is FailureCause.CONTENT:
            until = "not retried until git changes its objects for this cluster"
        else:
            until = "retried when the objects in the way change, or by `syncer retry`"
        return f"refused: failed before ({failure.cause}): {failure.reason}; {until}"

    @property
    def reason(self) -> str:
        return f"{self.cluster}: {self.why}"


def apply_failure(
    result: ChangeSet, versions: Mapping[ObjectKey, str], content: str, at: float
) -> FailedRevision:
    """Why ``result``'s apply failed: ``live`` when only the live state stood in the way (conflicts,
    drift another manager holds, permissions, no answer), else ``content``. ``versions`` gives the
    apiVersion of each object, to find the ones in the way again."""
    causes: list[FailureCause] = []
    in_the_way: list[ObjectKey] = []
    for entry in result.entries:
        if entry.outcome is EntryOutcome.FAILED:
            cause = entry.cause or FailureCause.CONTENT
        elif entry.action in _LIVE_ACTIONS:  # a blocked plan: nothing was written
            cause = FailureCause.LIVE
        elif entry.action is Action.ERROR:  # the server refused the dry-run of the object
            cause = FailureCause.CONTENT
        else:
            continue
        causes.append(cause)
        if cause is FailureCause.LIVE:
            in_the_way.append(entry.key)
    # No object named: the live state could not be read or planned against.
    cause = FailureCause.CONTENT if FailureCause.CONTENT in causes else FailureCause.LIVE
    objects = tuple(
        sorted(
            InventoryEntry(versions[key], key.kind, key.namespace, key.name)
            for key in in_the_way
            if key in versions
        )
    )
    return FailedRevision(
        result.revision,
        content,
        cause,
        f"apply failed: {result.error or 'an object was refused'}",
        objects if cause is FailureCause.LIVE else (),
        at=at,
    )


def blame(state: ClusterSyncState, revision: str, why: str, content: str, at: float) -> FailedRevision | None:
    """What ``state``'s cluster records about ``revision`` failing there for ``why`` (the gate's
    reason): its own apply failure, or a ``content`` failure of what it applied; None when the
    revision is not to blame: it was not applied there, or the cluster was not healthy before it."""
    if state.revision != revision or not state.applied_at:
        return None
    failure = state.apply_failure
    if failure is not None and failure.revision == revision:
        return failure
    if state.degraded_before:
        return None
    return FailedRevision(revision, content, FailureCause.CONTENT, why, at=at)


def not_blamed(state: ClusterSyncState, revision: str) -> str:
    """Why ``revision`` is not blamed for failing on ``state``'s cluster (empty: it is)."""
    if state.revision != revision or not state.applied_at:
        return f"{revision[:12]} was not applied there"
    failure = state.apply_failure
    if state.degraded_before and (failure is None or failure.revision != revision):
        return f"it was not healthy before {revision[:12]} was applied ({state.degraded_before})"
    return ""


def watched(state: ClusterSyncState, revision: str, content: str) -> tuple[InventoryEntry, ...]:
    """The objects whose live state decides whether ``revision`` is tried again on the cluster
    (those of a live failure that a retry did not already cover)."""
    failure = state.failure_of(revision, content)
    if failure is None or failure.cause is not FailureCause.LIVE or state.retry.covers(failure):
        return ()
    return failure.objects


def refusal(
    state: ClusterSyncState, revision: str, content: str, fingerprint: str | None = None
) -> Refusal | None:
    """Whether ``state``'s cluster refuses ``revision`` (whose objects there hash to ``content``).

    ``fingerprint`` is the live state of ``watched`` objects now (None: not looked at). A cluster
    that runs the revision healthy does not refuse it."""
    failure = state.failure_of(revision, content)
    if failure is None or state.retry.covers(failure):
        return None
    if state.revision == revision and state.phase is SyncPhase.HEALTHY:
        return None
    if failure.cause is FailureCause.LIVE and (
        not failure.fingerprint or fingerprint is None or fingerprint != failure.fingerprint
    ):
        return None
    return Refusal(state.cluster, failure)


def fingerprint(live: Mapping[InventoryEntry, Mapping[str, Any] | None], own_manager: str) -> str:
    """What the objects in the way are now: gone, or their uid and every other manager's entry
    (manager, operation, time) outside the status; status writes and syncer's own do not count."""
    lines = []
    for entry in sorted(live):
        obj = live[entry]
        head = f"{entry.api_version} {entry.kind} {entry.namespace}/{entry.name}"
        if obj is None:
            lines.append(f"{head} absent")
            continue
        meta = obj.get("metadata") or {}
        managers = sorted(
            f"{m.get('manager', '')}/{m.get('operation', '')}/{m.get('time', '')}"
            for m in meta.get("managedFields") or ()
            if isinstance(m, Mapping) and m.get("manager") != own_manager and m.get("subresource") != "status"
        )
        lines.append(f"{head} {meta.get('uid', '')} {' '.join(managers)}")
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()[:32]


def refusing(
    clusters: Sequence[str],
    revision: str,
    contents: Mapping[str, str],
    states: Mapping[str, ClusterSyncState],
    fingerprints: Mapping[str, str] | None = None,
) -> tuple[Refusal, ...]:
    """``refusal`` of each of ``clusters`` that refuses ``revision`` (``fingerprints`` per cluster)."""
    found = (
        refusal(states[name], revision, contents.get(name, ""), (fingerprints or {}).get(name))
        for name in clusters
    )
    return tuple(r for r in found if r is not None)
