from __future__ import annotations

from syncer.config.rollout import WaveGate
from syncer.domain.health import Health
from syncer.domain.progress import Waiting
from syncer.rollout import ClusterProgress, Decision, Wave, judge_wave

GATE = WaveGate(max_concurrent=2, health_timeout=300, bake=60)
WAVE = Wave(0, "canary", ("a", "b"), GATE)


def progress(**clusters: ClusterProgress) -> dict[str, ClusterProgress]:
    return dict(clusters)


def healthy(name: str, since: float) -> ClusterProgress:
    return ClusterProgress(name, applied_at=since - 10, health=Health.HEALTHY, healthy_since=since)


def test_a_wave_proceeds_only_after_every_cluster_baked() -> None:
    state = progress(a=healthy("a", 100), b=healthy("b", 130))
    baking = judge_wave(WAVE, state, now=150, rollback=True)
    assert baking.decision is Decision.WAIT
    assert baking.wait == 40
    assert "baking" in baking.reason
    done = judge_wave(WAVE, state, now=190, rollback=True)
    assert done.decision is Decision.PROCEED


def test_a_wave_still_progressing_within_its_timeout_waits() -> None:
    state = progress(a=healthy("a", 100), b=ClusterProgress("b", applied_at=100, health=Health.PROGRESSING))
    verdict = judge_wave(WAVE, state, now=200, rollback=True)
    assert verdict.decision is Decision.WAIT
    assert verdict.reason == "1 of 2 cluster(s) not healthy yet"
    assert 0 < verdict.wait <= 5


def test_a_cluster_not_healthy_past_the_timeout_fails_the_wave() -> None:
    state = progress(
        a=healthy("a", 100),
        b=ClusterProgress("b", applied_at=100, health=Health.PROGRESSING, detail="0/3 ready"),
    )
    verdict = judge_wave(WAVE, state, now=401, rollback=True)
    assert verdict.decision is Decision.ROLLBACK
    assert verdict.failed == ("b",)
    assert verdict.reason == "b: not healthy 300s after apply (progressing: 0/3 ready)"
    assert judge_wave(WAVE, state, now=401, rollback=False).decision is Decision.HALT


def test_a_degraded_cluster_fails_at_once() -> None:
    state = progress(
        a=healthy("a", 100),
        b=ClusterProgress("b", applied_at=100, health=Health.DEGRADED, detail="StepTimeout"),
    )
    verdict = judge_wave(WAVE, state, now=101, rollback=False)
    assert verdict.decision is Decision.HALT
    assert verdict.reason == "b: degraded: StepTimeout"


def test_an_apply_error_fails_the_wave() -> None:
    state = progress(a=ClusterProgress("a", apply_error="apiserver unreachable"), b=healthy("b", 100))
    verdict = judge_wave(WAVE, state, now=101, rollback=True)
    assert verdict.decision is Decision.ROLLBACK
    assert verdict.failed == ("a",)


def test_clusters_not_applied_yet_make_the_wave_wait() -> None:
    verdict = judge_wave(WAVE, progress(a=healthy("a", 100)), now=500, rollback=True)
    assert verdict.decision is Decision.WAIT


def test_a_waiting_verdict_says_what_it_waits_for() -> None:
    unhealthy = progress(a=healthy("a", 100), b=ClusterProgress("b", applied_at=100))
    assert judge_wave(WAVE, unhealthy, now=101, rollback=True).waiting is Waiting.HEALTH
    baking = judge_wave(WAVE, progress(a=healthy("a", 100), b=healthy("b", 100)), now=101, rollback=True)
    assert (baking.decision, baking.waiting) == (Decision.WAIT, Waiting.BAKE)
    assert (
        judge_wave(WAVE, progress(a=healthy("a", 1), b=healthy("b", 1)), 10_000, rollback=True).waiting
        is None
    )


def test_the_failed_clusters_are_named_from_the_progress_not_parsed_from_the_reason() -> None:
    state = progress(
        a=ClusterProgress("a", apply_error="b: this text names another cluster"),
        b=healthy("b", 100),
    )
    verdict = judge_wave(WAVE, state, now=101, rollback=False)
    assert verdict.failed == ("a",)
    assert verdict.reason == "a: apply failed: b: this text names another cluster"
