"""Where a cluster another replica owns stands in a wave, judged from what its owner recorded. Pure.

With sharded replicas every replica judges every wave whole, but it checks the health only of the
clusters it owns; for the others it reads the sync state their owner keeps in them. A wave therefore
proceeds on a replica only when every cluster of it, whoever applies it, is recorded healthy and
baked, and fails when any of them is recorded failed: the replicas decide alike without talking.
"""

from __future__ import annotations

from syncer.domain.health import Health
from syncer.domain.sync_state import ClusterSyncState, SyncPhase
from syncer.rollout.gate import ClusterProgress


def recorded_progress(state: ClusterSyncState, revision: str) -> ClusterProgress:
    """``state``'s progress toward ``revision`` as its owner recorded it.

    Not yet on ``revision`` or still applying: not applied (the gate waits, no timeout runs). Failed
    or rolled back on it: an apply error. Healthy (the owner's gate passed it): healthy since the
    recorded time. Applied: the health and healthy-since time the owner last recorded."""
    name = state.cluster
    if state.revision != revision or state.phase in {SyncPhase.NEVER, SyncPhase.APPLYING}:
        return ClusterProgress(name)
    applied_at = state.applied_at or None
    if state.phase is SyncPhase.FAILED:
        return ClusterProgress(name, applied_at, state.last_error or "failed (recorded by its owner)")
    if state.phase is SyncPhase.ROLLED_BACK:
        return ClusterProgress(name, applied_at, "rolled back by its owner")
    if state.phase is SyncPhase.HEALTHY:
        since = state.healthy_since or state.applied_at or None
        return ClusterProgress(name, applied_at, "", Health.HEALTHY, since, state.health_detail)
    try:
        health = Health(state.health)
    except ValueError:
        health = Health.PROGRESSING
    since = (state.healthy_since or None) if health is Health.HEALTHY else None
    return ClusterProgress(name, applied_at, "", health, since, state.health_detail)
