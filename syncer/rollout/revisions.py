"""Decisions about revisions, from the states the clusters recorded. Pure: states in, answers out.

Whether a cluster still has to be applied and what phase a cluster of a rolled-back wave ends in.
Which clusters refuse a revision that failed there before is ``syncer.rollout.failures``. Where a
failed cluster goes back to is ``syncer.rollout.rollback_targets``: per cluster, never a vote of the fleet.
"""

from __future__ import annotations

from syncer.domain.sync_state import ClusterSyncState, SyncPhase
from syncer.rollout.gate import ClusterProgress, Decision, GateVerdict


def is_done(state: ClusterSyncState, revision: str) -> bool:
    """True when ``revision`` was applied to the cluster and finished there: it is not applied again."""
    return state.revision == revision and state.phase in {SyncPhase.APPLIED, SyncPhase.HEALTHY}


def failed_apply(state: ClusterSyncState, revision: str) -> ClusterProgress | None:
    """A cluster whose apply of ``revision`` failed, as the gate sees it (None: it did not fail)."""
    if state.phase is SyncPhase.FAILED and state.revision == revision:
        return ClusterProgress(state.cluster, state.applied_at, apply_error=state.last_error or "failed")
    return None


def phase_after_rollback(state: ClusterSyncState, verdict: GateVerdict) -> SyncPhase:
    """A cluster the last good revision was applied to is rolled back even when another cluster of
    the wave failed (e.g. could not be reached); it is failed when its own rollback failed."""
    if verdict.decision is Decision.PROCEED:
        return SyncPhase.ROLLED_BACK
    if state.cluster in verdict.failed or state.phase is SyncPhase.FAILED:
        return SyncPhase.FAILED
    return SyncPhase.ROLLED_BACK
