"""The rollout's one status: every transition from the engine's facts, and its invariants over random
sequences of facts."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from syncer.domain.progress import PassEvent, Step, Waiting
from syncer.domain.rollout_status import (
    ENDED_BADLY,
    HoldCause,
    RolloutStatus,
    WavePhase,
    advance,
    initial,
)

R1, R2, OLD = "a" * 40, "b" * 40, "0" * 40
WAVES = ("canary", "eu", "us")


def fold(*events: PassEvent, status: RolloutStatus | None = None) -> RolloutStatus:
    status = status if status is not None else initial(WAVES)
    for event in events:
        status = advance(status, event)
    return status


def phases(status: RolloutStatus) -> dict[str, str]:
    return {w.name: str(w.phase) for w in status.waves}


def test_every_wave_is_pending_before_any_fact_and_a_new_revision_starts_them_all_again() -> None:
    assert phases(initial(WAVES)) == dict.fromkeys(WAVES, "pending")
    done = fold(
        PassEvent(Step.ROLLOUT_STARTED, "canary", revision=R1),
        PassEvent(Step.APPLYING, "canary", "c1", R1),
        PassEvent(Step.GATE_PROCEED, "canary", revision=R1, reason="healthy"),
    )
    assert done.revision == R1
    assert phases(done) == {"canary": "passed", "eu": "pending", "us": "pending"}
    again = fold(PassEvent(Step.ROLLOUT_STARTED, "canary", revision=R2), status=done)
    assert (again.revision, phases(again)) == (R2, dict.fromkeys(WAVES, "pending"))


def test_each_wait_is_told_apart_by_its_kind_not_its_text() -> None:
    cases = {
        Waiting.HEALTH: (WavePhase.WAITING_HEALTH, None),
        Waiting.BAKE: (WavePhase.BAKING, None),
        Waiting.ANALYSIS: (WavePhase.ANALYSING, None),
        Waiting.PROMOTION: (WavePhase.AWAITING_PROMOTION, None),
        Waiting.WINDOW: (WavePhase.HELD, HoldCause.WINDOW),
        Waiting.SUSPENDED: (WavePhase.HELD, HoldCause.SUSPENDED),
    }
    for waiting, (phase, hold) in cases.items():
        status = fold(
            PassEvent(Step.APPLYING, "eu", "c", R1),
            PassEvent(Step.GATE_WAIT, "eu", revision=R1, reason="baking: anything", waiting=waiting),
        )
        wave = status.wave("eu")
        assert (wave.phase, wave.hold, wave.cause) == (phase, hold, "baking: anything"), waiting
    closed = fold(
        PassEvent(Step.APPLYING, "eu", "c", R1), PassEvent(Step.WINDOW_CLOSED, "eu", "c", R1, "shut")
    )
    assert (closed.wave("eu").phase, closed.wave("eu").hold) == (WavePhase.HELD, HoldCause.WINDOW)
    gate = fold(
        PassEvent(Step.APPLYING, "eu", "c", R1), PassEvent(Step.AWAITING_PROMOTION, "eu", revision=R1)
    )
    assert gate.wave("eu").phase is WavePhase.AWAITING_PROMOTION


def test_a_failed_wave_reads_failed_with_its_cause_after_its_clusters_rolled_back() -> None:
    status = fold(
        PassEvent(Step.APPLYING, "canary", "c1", R1),
        PassEvent(Step.GATE_ROLLBACK, "canary", revision=R1, reason="analysis errors: 0.3 > 0.01"),
        PassEvent(Step.ROLLING_BACK, "canary", revision=OLD),
        PassEvent(Step.APPLYING, "canary", "c1", OLD),
        PassEvent(Step.GATE_WAIT, "canary", revision=OLD, waiting=Waiting.HEALTH),
        PassEvent(Step.GATE_PROCEED, "canary", revision=OLD, reason="all healthy"),
        PassEvent(Step.ROLLED_BACK, "canary", "c1", OLD),
    )
    wave = status.wave("canary")
    assert (status.revision, wave.phase, wave.cause) == (R1, WavePhase.FAILED, "analysis errors: 0.3 > 0.01")
    assert wave.back == f"rolled back to {OLD[:12]}"
    assert wave.summary == f"failed: analysis errors: 0.3 > 0.01 (rolled back to {OLD[:12]})"
    # The next pass refuses the revision: still failed, with the refusal as the cause.
    refused = fold(
        PassEvent(Step.GATE_HALT, "canary", revision=R1, reason="refused: failed before"), status=status
    )
    assert (refused.wave("canary").phase, refused.wave("canary").cause) == (
        WavePhase.FAILED,
        "refused: failed before",
    )
    # Until a newer revision.
    newer = fold(PassEvent(Step.ROLLOUT_STARTED, "canary", revision=R2), status=refused)
    assert newer.wave("canary").phase is WavePhase.PENDING


def test_an_interrupted_rollback_ends_failed_when_the_next_pass_refuses_the_revision() -> None:
    status = fold(
        PassEvent(Step.APPLYING, "canary", "c1", R1),
        PassEvent(Step.GATE_ROLLBACK, "canary", revision=R1, reason="unhealthy"),
        PassEvent(Step.ROLLING_BACK, "canary", revision=OLD),
        PassEvent(Step.GATE_HALT, "canary", revision=R1, reason="refused: failed before"),
    )
    assert status.wave("canary").phase is WavePhase.FAILED


def test_an_abort_reads_aborted_after_its_rollback_and_a_rollback_that_fails_says_so() -> None:
    status = fold(
        PassEvent(Step.APPLYING, "eu", "c1", R1),
        PassEvent(Step.ROLLOUT_ABORTED, "eu", revision=R1, reason="aborted by ops: latency"),
        PassEvent(Step.ROLLING_BACK, "eu", revision=OLD),
        PassEvent(Step.GATE_HALT, "eu", revision=OLD, reason="c1 degraded"),
    )
    wave = status.wave("eu")
    assert (wave.phase, wave.cause) == (WavePhase.ABORTED, "aborted by ops: latency")
    assert wave.back == f"rollback to {OLD[:12]} failed: c1 degraded"


def test_a_cluster_left_without_a_rollback_target_is_named() -> None:
    status = fold(
        PassEvent(Step.APPLYING, "eu", "c1", R1),
        PassEvent(Step.GATE_ROLLBACK, "eu", revision=R1, reason="unhealthy"),
        PassEvent(Step.ROLLBACK_UNAVAILABLE, "eu", "c1", R1, reason="it never ran a revision healthy"),
    )
    assert status.wave("eu").back == "c1 not rolled back: it never ran a revision healthy"
    assert status.wave("eu").phase is WavePhase.FAILED


def test_a_retry_applies_the_revision_again_and_may_then_pass() -> None:
    status = fold(
        PassEvent(Step.APPLYING, "eu", "c1", R1),
        PassEvent(Step.GATE_HALT, "eu", revision=R1, reason="inconclusive"),
        PassEvent(Step.GATE_PROCEED, "eu", revision=R1),  # no apply since: the end stands
    )
    assert status.wave("eu").phase is WavePhase.FAILED
    retried = fold(
        PassEvent(Step.APPLYING, "eu", "c1", R1),
        PassEvent(Step.GATE_PROCEED, "eu", revision=R1),
        status=status,
    )
    assert retried.wave("eu").phase is WavePhase.PASSED


def test_facts_about_no_wave_or_another_revision_leave_the_waves_alone() -> None:
    status = fold(PassEvent(Step.APPLYING, "eu", "c1", R1))
    for event in (
        PassEvent(Step.REVISION_REJECTED, error="unsigned"),
        PassEvent(Step.STATE_REBUILT, cluster="eu-1"),
        PassEvent(Step.GATE_PROCEED, "eu", revision=OLD),
    ):
        assert advance(status, event) == status


# -- invariants over random sequences of facts ---------------------------------------------------

_STEPS = (
    Step.ROLLOUT_STARTED,
    Step.APPLYING,
    Step.GATE_WAIT,
    Step.GATE_PROCEED,
    Step.GATE_STILL_HEALTHY,
    Step.GATE_HALT,
    Step.GATE_ROLLBACK,
    Step.ROLLING_BACK,
    Step.ROLLED_BACK,
    Step.ROLLOUT_ABORTED,
    Step.ROLLBACK_UNAVAILABLE,
    Step.AWAITING_PROMOTION,
    Step.WINDOW_CLOSED,
    Step.PROMOTED,
)
FACTS = st.builds(
    PassEvent,
    step=st.sampled_from(_STEPS),
    wave=st.sampled_from(("", *WAVES)),
    cluster=st.sampled_from(("", "c1")),
    revision=st.sampled_from(("", R1, R2, OLD)),
    reason=st.sampled_from(("", "why")),
    waiting=st.none() | st.sampled_from(tuple(Waiting)),
)


@settings(max_examples=400, deadline=None)
@given(st.lists(FACTS, max_size=40))
def test_an_ended_wave_never_reads_passed_for_its_revision_unless_applied_again(
    events: list[PassEvent],
) -> None:
    status = initial(WAVES)
    ended: set[tuple[str, str]] = set()  # (revision, wave) that ended badly and were not applied since
    for event in events:
        before = status
        status = advance(status, event)
        if status.revision != before.revision:
            ended = set()
        for wave in status.waves:
            key = (status.revision, wave.name)
            if wave.phase in ENDED_BADLY:
                ended.add(key)
            elif wave.phase is WavePhase.APPLYING:
                ended.discard(key)
            elif wave.phase is WavePhase.PASSED:
                assert key not in ended, (event, wave)
        assert [w.name for w in status.waves] == list(WAVES), "the waves are the policy's, in order"


@settings(max_examples=400, deadline=None)
@given(st.lists(FACTS, max_size=40))
def test_a_rollbacks_own_facts_never_make_a_wave_passed(events: list[PassEvent]) -> None:
    status = initial(WAVES)
    for event in events:
        before = status
        status = advance(status, event)
        rolling = {w.name for w in before.waves if w.phase is WavePhase.ROLLING_BACK}
        for wave in status.waves:
            if wave.name in rolling and status.revision == before.revision:
                assert wave.phase is not WavePhase.PASSED, (event, wave)


@settings(max_examples=200, deadline=None)
@given(st.lists(FACTS, max_size=40))
def test_a_new_revision_starts_every_wave_pending_and_nothing_else_changes_the_revision_backwards(
    events: list[PassEvent],
) -> None:
    status = initial(WAVES)
    for event in events:
        before = status
        status = advance(status, event)
        if status.revision != before.revision:
            assert event.revision == status.revision
            assert event.step in (Step.ROLLOUT_STARTED, Step.APPLYING)
            changed = [w for w in status.waves if w.phase is not WavePhase.PENDING]
            assert all(w.name == event.wave and w.phase is WavePhase.APPLYING for w in changed)
