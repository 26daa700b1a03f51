"""Decisions about revisions from recorded states: pure, no cluster."""

from __future__ import annotations

import pytest

from syncer.domain.sync_state import ClusterSyncState, SyncPhase
from syncer.rollout import (
    Decision,
    GateVerdict,
    failed_apply,
    is_done,
    phase_after_rollback,
)


def state(cluster: str, **fields: object) -> ClusterSyncState:
    return ClusterSyncState(cluster, **fields)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("revision", "phase", "done"),
    [
        ("r1", SyncPhase.APPLIED, True),
        ("r1", SyncPhase.HEALTHY, True),
        ("r1", SyncPhase.APPLYING, False),
        ("r1", SyncPhase.FAILED, False),
        ("r1", SyncPhase.ROLLED_BACK, False),
        ("r0", SyncPhase.HEALTHY, False),
    ],
)
def test_only_a_finished_apply_of_the_same_revision_is_done(
    revision: str, phase: SyncPhase, done: bool
) -> None:
    assert is_done(state("a", revision=revision, phase=phase), "r1") is done


def test_a_failed_apply_counts_only_for_the_revision_being_judged() -> None:
    failed = state("a", revision="r2", phase=SyncPhase.FAILED, applied_at=5.0, last_error="")
    progress = failed_apply(failed, "r2")
    assert progress is not None
    assert (progress.cluster, progress.applied_at, progress.apply_error) == ("a", 5.0, "failed")
    assert failed_apply(failed, "r1") is None
    assert failed_apply(state("a", revision="r2", phase=SyncPhase.APPLIED), "r2") is None


def test_after_a_rollback_a_cluster_is_failed_only_when_its_own_rollback_failed() -> None:
    healthy = GateVerdict(Decision.PROCEED, "ok")
    one_failed = GateVerdict(Decision.HALT, "b: apply failed", failed=("b",))
    applied = state("a", phase=SyncPhase.APPLIED)
    assert phase_after_rollback(applied, healthy) is SyncPhase.ROLLED_BACK
    assert phase_after_rollback(applied, one_failed) is SyncPhase.ROLLED_BACK
    assert phase_after_rollback(state("b", phase=SyncPhase.APPLIED), one_failed) is SyncPhase.FAILED
    assert phase_after_rollback(state("c", phase=SyncPhase.FAILED), one_failed) is SyncPhase.FAILED
