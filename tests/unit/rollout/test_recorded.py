"""A wave judged from the states other replicas recorded: they wait, pass and fail alike."""

from __future__ import annotations

from syncer.config.rollout import WaveGate
from syncer.domain.health import Health
from syncer.domain.sync_state import ClusterSyncState, SyncPhase
from syncer.rollout import Decision, Wave, judge_wave
from syncer.rollout.recorded import recorded_progress

REV, OLD = "b" * 40, "a" * 40
WAVE = Wave(0, "canary", ("mine", "theirs"), WaveGate(health_timeout=60.0, bake=10.0))


def state(phase: SyncPhase, revision: str = REV, **kw: object) -> ClusterSyncState:
    return ClusterSyncState("theirs", revision=revision, phase=phase, **kw)  # type: ignore[arg-type]


def test_a_cluster_its_owner_has_not_applied_yet_is_waited_for_without_a_timeout() -> None:
    for recorded in (state(SyncPhase.HEALTHY, OLD), state(SyncPhase.APPLYING), state(SyncPhase.NEVER, "")):
        progress = recorded_progress(recorded, REV)
        assert progress.applied_at is None
        assert not progress.apply_error


def test_recorded_failures_fail_the_wave_here_too() -> None:
    failed = recorded_progress(state(SyncPhase.FAILED, last_error="boom", applied_at=5.0), REV)
    assert failed.apply_error == "boom"
    rolled = recorded_progress(state(SyncPhase.ROLLED_BACK, applied_at=5.0), REV)
    assert rolled.apply_error
    mine = recorded_progress(
        ClusterSyncState("mine", REV, SyncPhase.HEALTHY, applied_at=1.0, healthy_since=1.0), REV
    )
    verdict = judge_wave(WAVE, {"mine": mine, "theirs": failed}, 100.0, rollback=False)
    assert verdict.decision is Decision.HALT
    assert "theirs" in verdict.reason


def test_the_wave_proceeds_only_once_the_other_replicas_cluster_has_baked() -> None:
    mine = recorded_progress(
        ClusterSyncState("mine", REV, SyncPhase.HEALTHY, applied_at=1.0, healthy_since=1.0), REV
    )
    theirs = recorded_progress(
        state(SyncPhase.APPLIED, applied_at=1.0, health="healthy", healthy_since=95.0), REV
    )
    assert theirs.health is Health.HEALTHY
    assert judge_wave(WAVE, {"mine": mine, "theirs": theirs}, 100.0, rollback=False).decision is Decision.WAIT
    assert (
        judge_wave(WAVE, {"mine": mine, "theirs": theirs}, 105.0, rollback=False).decision is Decision.PROCEED
    )


def test_a_recorded_health_that_is_not_a_verdict_counts_as_progressing() -> None:
    odd = recorded_progress(state(SyncPhase.APPLIED, applied_at=1.0, health="???", healthy_since=2.0), REV)
    assert odd.health is Health.PROGRESSING
    assert odd.healthy_since is None
