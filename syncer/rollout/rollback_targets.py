"""Per-cluster rollback targets and the line between a failed rollout and a later degradation. [pure]

A cluster is rolled back to the last revision *it* ran healthy, as its own recorded state says:
never a revision voted by the rest of the fleet, never the revision being rolled back, never one
the cluster refuses now because it failed there since (judged by its cause, as every refusal is:
``syncer.rollout.failures.refusal``; a live failure whose objects changed, or one a person's
``syncer retry`` covers, no longer stands in the way). A cluster with no such revision is not rolled
back (the wave halts there, with the reason). A wave whose clusters all recorded the revision
healthy has passed: whatever happens to them later is degradation, reported and repaired, never a
failed rollout.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from syncer.domain.revision_history import HistoryEntry, Outcome
from syncer.domain.sync_state import ClusterSyncState, SyncPhase
from syncer.rollout.failures import Refusal


@dataclass(frozen=True)
class RollbackTarget:
    """Where one cluster goes back to: ``revision`` (empty: nowhere, ``reason`` says why)."""

    cluster: str
    revision: str
    reason: str


# Outcomes of a history entry that say the cluster ran the revision healthy.
_RAN_HEALTHY = frozenset({Outcome.HEALTHY, Outcome.ROLLED_BACK})


def good_before(state: ClusterSyncState, failing: str, history: tuple[HistoryEntry, ...] = ()) -> str:
    """The last revision ``state``'s cluster ran healthy other than ``failing``: its last good one,
    else (its last good one is ``failing`` itself: a passed wave whose revision a person aborted)
    the newest its history holds as healthy there; "" when there is none."""
    if state.last_good and state.last_good != failing:
        return state.last_good
    for entry in reversed(history):
        if entry.revision != failing and entry.outcome in _RAN_HEALTHY:
            return entry.revision
    return ""


def rollback_target(
    state: ClusterSyncState,
    failing: str,
    refused: Refusal | None = None,
    history: tuple[HistoryEntry, ...] = (),
) -> RollbackTarget:
    """The revision ``state``'s cluster last ran healthy before ``failing`` (``good_before``), unless
    the cluster refuses it now (``refused``: its refusal of that revision, as the engine judged it
    with the live objects a live failure watches)."""
    good = good_before(state, failing, history)
    if not good:
        if state.last_good == failing:
            why = f"the last revision it ran healthy is {failing[:12]} itself"
            return RollbackTarget(state.cluster, "", why)
        return RollbackTarget(state.cluster, "", "it never ran a revision healthy")
    if refused is not None and refused.failure.revision == good:
        why = f"{good[:12]}, the last revision it ran healthy, failed there since: {refused.why}"
        return RollbackTarget(state.cluster, "", why)
    return RollbackTarget(state.cluster, good, f"last healthy on {good[:12]}")


def rollback_targets(
    clusters: Sequence[str],
    states: Mapping[str, ClusterSyncState],
    failing: str,
    refused: Mapping[str, Refusal | None] | None = None,
    histories: Mapping[str, tuple[HistoryEntry, ...]] | None = None,
) -> dict[str, RollbackTarget]:
    """``rollback_target`` of each of ``clusters`` (a cluster without a state has no target);
    ``refused`` holds each one's refusal of the revision it would go back to, ``histories`` each
    one's history of revisions."""
    return {
        name: rollback_target(
            states.get(name) or ClusterSyncState(name),
            failing,
            (refused or {}).get(name),
            (histories or {}).get(name, ()),
        )
        for name in clusters
    }


def wave_passed(clusters: Sequence[str], states: Mapping[str, ClusterSyncState], revision: str) -> bool:
    """True when every cluster of the wave recorded ``revision`` as applied and judged healthy: the
    wave's rollout is over, its gate is not judged again for this revision."""
    return bool(clusters) and all(
        (s := states.get(name)) is not None and s.revision == revision and s.phase is SyncPhase.HEALTHY
        for name in clusters
    )
