"""The rollout machine: every transition from a fact to the next state and effects."""

from __future__ import annotations

import pytest

from syncer.analysis.wave import WaveAnalysisVerdict
from syncer.config.rollout import WaveGate
from syncer.domain.analysis import AnalysisVerdict
from syncer.domain.health import Health
from syncer.domain.progress import PassEvent, Step, Waiting
from syncer.domain.rollout_status import WavePhase
from syncer.errors import FactOutOfTurn
from syncer.rollout import ClusterProgress, Decision, GateVerdict, Held, Wave
from syncer.rollout.machine import RolloutMachine, start, step
from syncer.rollout.moves import (
    AbortBack,
    Analyse,
    AnalysisLooked,
    Applied,
    Apply,
    AtGate,
    CheckGate,
    Effect,
    End,
    Fact,
    GateLooked,
    LeaseLost,
    Look,
    LookAtGate,
    Looked,
    Observe,
    PassRecorded,
    RecordPassed,
    Report,
    RollBack,
    RolloutOutcome,
    Sleep,
    Slept,
    Tell,
    WaveObserved,
    WentBack,
)

R1 = "a" * 40
GATE = WaveGate(max_concurrent=2, health_timeout=300, bake=60)
CANARY = Wave(0, "canary", ("c1",), GATE)
REST = Wave(1, "rest", ("c2", "c3"), GATE)
WAVES = (CANARY, REST)
PROCEED = GateVerdict(Decision.PROCEED, "all 1 cluster(s) healthy and baked")
ABORT = GateVerdict(Decision.ROLLBACK, "aborted by ann: bad", failed=("c1",), aborted=True)


def run(*facts: Fact, waves: tuple[Wave, ...] = WAVES) -> tuple[RolloutMachine, tuple[Effect, ...]]:
    """The machine after ``facts``, with the effects of the last step."""
    state, effects = start(R1, waves)
    for fact in facts:
        state, effects = step(state, fact)
    return state, effects


def healthy(wave: Wave, since: float = 1.0) -> tuple[ClusterProgress, ...]:
    """Every cluster of ``wave`` applied and healthy since ``since``."""
    return tuple(ClusterProgress(c, since, health=Health.HEALTHY, healthy_since=since) for c in wave.clusters)


def passing(wave: Wave) -> tuple[Fact, ...]:
    """The gate of ``wave`` looked at long after its bake, and no background analysis."""
    return (GateLooked(1000.0, 5.0, healthy(wave)), AnalysisLooked(None))


def through_canary(*, wrote: bool = True) -> tuple[Fact, ...]:
    """The canary looked at, applied and passed."""
    return (Looked(), AtGate(fresh=True), Applied(wrote), *passing(CANARY), PassRecorded())


def test_a_rollout_starts_by_looking_at_its_first_wave_and_one_without_waves_ends_unchanged() -> None:
    state, effects = start(R1, WAVES)
    assert effects == (Look(CANARY, ask_newer=False),)
    assert state.phases == (WavePhase.PENDING, WavePhase.PENDING)
    state, effects = start(R1, ())
    assert effects == (End(RolloutOutcome.UNCHANGED),)
    assert state.outcome is RolloutOutcome.UNCHANGED


def test_a_stop_ends_the_rollout_between_waves() -> None:
    _, effects = run(Looked(stop=True))
    assert effects == (End(RolloutOutcome.INTERRUPTED, "stopped between waves"),)


def test_a_newer_revision_takes_over_at_a_wave_boundary_only_once_the_pass_wrote() -> None:
    _, effects = run(Looked(newer=True))
    assert effects == (LookAtGate(CANARY),)  # nothing written yet: the newer one is not asked
    state, effects = run(*through_canary())
    assert effects == (Look(REST, ask_newer=True),)
    _, effects = step(state, Looked(newer=True))
    message = "a newer verified revision takes over at this wave boundary"
    assert effects == (End(RolloutOutcome.SUPERSEDED, message),)


def test_a_wave_that_passed_before_is_observed_and_the_next_one_looked_at() -> None:
    state, effects = run(Looked(passed=True))
    assert effects == (Observe(CANARY),)
    state, effects = step(state, WaveObserved(wrote=True))
    assert effects == (Look(REST, ask_newer=True),)
    assert (state.phases[0], state.touched, state.judged) == (WavePhase.PASSED, True, False)


def test_passed_waves_only_observed_end_unchanged_without_telling_the_rollout_finished() -> None:
    _, effects = run(Looked(passed=True), WaveObserved(False), Looked(passed=True), WaveObserved(False))
    assert effects == (End(RolloutOutcome.UNCHANGED),)


def test_an_abort_on_a_passed_wave_sends_it_back_and_every_later_wave_halts() -> None:
    state, effects = run(Looked(passed=True, abort=ABORT))
    assert effects == (AbortBack(CANARY, ABORT),)
    state, effects = step(state, WentBack(RolloutOutcome.ROLLED_BACK, "c1 rolled back"))
    assert effects == (Look(REST, ask_newer=False),)
    assert state.phases[0] is WavePhase.ABORTED
    state, effects = step(state, Looked())  # the rest records no abort: the earlier one holds
    halt = GateVerdict(Decision.HALT, ABORT.reason, aborted=True)
    assert effects == (AbortBack(REST, halt),)
    state, effects = step(state, WentBack(RolloutOutcome.HALTED, ABORT.reason))
    assert effects == (End(RolloutOutcome.HALTED, ABORT.reason),)
    assert state.phases == (WavePhase.ABORTED, WavePhase.ABORTED)


def test_an_abort_of_the_wave_in_hand_sends_it_back_and_ends_the_rollout() -> None:
    state, effects = run(Looked(abort=ABORT))
    assert effects == (AbortBack(CANARY, ABORT),)
    state, effects = step(state, WentBack(RolloutOutcome.ROLLED_BACK, "back"))
    assert effects == (End(RolloutOutcome.ROLLED_BACK, "back"),)
    assert state.phases[0] is WavePhase.ABORTED


def test_a_refused_revision_halts_its_wave_with_the_reason() -> None:
    state, effects = run(Looked(refused="c1: failed before"))
    assert effects == (End(RolloutOutcome.HALTED, "c1: failed before", CANARY, Decision.HALT),)
    assert state.phases[0] is WavePhase.FAILED


def test_a_manual_gate_ends_the_rollout_waiting_for_a_person() -> None:
    state, effects = run(Looked(), AtGate(awaits="waiting for 1 promotion"))
    assert effects == (End(RolloutOutcome.WAITING, "waiting for 1 promotion", CANARY, Decision.WAIT),)
    assert state.phases[0] is WavePhase.AWAITING_PROMOTION


def test_a_held_wave_gets_no_write_it_waits_and_says_what_for() -> None:
    held = Held(suspended=("c1: suspended by ann",))
    state, effects = run(Looked(), AtGate(held=held))
    told = PassEvent(Step.GATE_WAIT, "canary", revision=R1, reason=held.reason, waiting=Waiting.SUSPENDED)
    assert effects == (Tell(told), End(RolloutOutcome.WAITING, held.reason, CANARY, Decision.WAIT))
    assert state.phases[0] is WavePhase.HELD


def test_a_fresh_revision_tells_the_rollout_started_before_its_first_apply() -> None:
    _, effects = run(Looked(), AtGate(fresh=True))
    started = PassEvent(Step.ROLLOUT_STARTED, "canary", revision=R1)
    assert effects == (Tell(started), Apply(CANARY))
    _, effects = run(Looked(), AtGate())
    assert effects == (Apply(CANARY),)


def test_a_wave_judged_passed_is_recorded_and_the_last_one_tells_the_rollout_finished() -> None:
    state, effects = run(Looked(), AtGate(), Applied(True))
    assert effects == (CheckGate(CANARY),)
    state, effects = step(state, GateLooked(1000.0, 5.0, healthy(CANARY)))
    assert effects == (Analyse(CANARY, background=True),)
    state, effects = step(state, AnalysisLooked(None))
    told = PassEvent(Step.GATE_PROCEED, "canary", revision=R1, reason=PROCEED.reason)
    assert effects == (Tell(told), Report(CANARY, PROCEED), RecordPassed("canary", ("c1",), R1))
    assert state.phases[0] is WavePhase.WAITING_HEALTH  # passed once recorded
    state, effects = step(state, PassRecorded())
    assert state.phases[0] is WavePhase.PASSED
    rest = (Looked(), AtGate(), Applied(False), *passing(REST), PassRecorded())
    for fact in rest:
        state, effects = step(state, fact)
    finished = PassEvent(Step.ROLLOUT_FINISHED, revision=R1, reason="2 wave(s) healthy")
    assert effects == (Tell(finished), End(RolloutOutcome.APPLIED))


def test_a_baking_gate_sleeps_in_the_baking_phase_and_a_stop_mid_wait_ends_the_pass_interrupted() -> None:
    baking = (Looked(), AtGate(), Applied(True), GateLooked(100.0, 5.0, healthy(CANARY, 70.0)))
    state, effects = run(*baking, AnalysisLooked(None))
    assert effects[-1] == Sleep(5.0)
    assert state.phases[0] is WavePhase.BAKING
    state, effects = step(state, Slept(stopped=True))
    verdict = GateVerdict(Decision.WAIT, "baking: 30s of 60s left", 30.0, waiting=Waiting.BAKE)
    assert effects == (Report(CANARY, verdict), End(RolloutOutcome.INTERRUPTED, "stopped while waiting"))
    assert state.phases[0] is WavePhase.BAKING


def test_a_failed_wave_rolls_back_every_cluster_its_verdict_names_and_never_reads_passed() -> None:
    found = WaveAnalysisVerdict(AnalysisVerdict.FAILED, "errors: 0.3 > 0.1", clusters=(("c2", "0.3"),))
    looked = GateLooked(1000.0, 5.0, healthy(REST), rollback=True)
    facts = (*through_canary(), Looked(), AtGate(), Applied(True), looked)
    state, effects = run(*facts, AnalysisLooked(found, ("c1", "c2")))
    across = Wave(1, "rest", ("c1", "c2"), GATE)
    assert isinstance(effects[-1], RollBack)
    failed = effects[-1].verdict
    assert effects[-1] == RollBack(across, failed)
    assert (failed.decision, failed.across, failed.failed) == (Decision.ROLLBACK, ("c1", "c2"), ("c2",))
    assert failed.reasons == (("c2", "0.3"), ("c1", "background analysis failed on c2"))
    assert state.phases[1] is WavePhase.ROLLING_BACK
    state, effects = step(state, WentBack(RolloutOutcome.ROLLED_BACK, "rolled back"))
    assert effects == (End(RolloutOutcome.ROLLED_BACK, "rolled back"),)
    assert state.phases[1] is WavePhase.FAILED
    assert state.at(WavePhase.PASSED).phases[1] is WavePhase.FAILED


def test_an_abort_read_while_the_gate_waits_sends_the_wave_back_as_aborted() -> None:
    waiting = (Looked(), AtGate(), Applied(True), GateLooked(10.0, 5.0), AnalysisLooked(None), Slept(False))
    state, effects = run(*waiting)
    assert effects == (CheckGate(CANARY, again=True),)
    state, effects = step(state, GateLooked(15.0, 5.0, healthy(CANARY, 12.0), abort=ABORT))
    told = PassEvent(Step.ROLLOUT_ABORTED, "canary", revision=R1, reason=ABORT.reason)
    assert effects == (Tell(told), Report(CANARY, ABORT), RollBack(CANARY, ABORT))
    assert state.aborted == ABORT
    state, _ = step(state, WentBack(RolloutOutcome.ROLLED_BACK, "back"))
    assert state.phases[0] is WavePhase.ABORTED


def test_a_newer_revision_taking_over_at_the_gate_ends_the_rollout_superseded() -> None:
    _, effects = run(Looked(), AtGate(), Applied(True), GateLooked(10.0, 5.0, newer=True))
    message = "a newer verified revision takes over while the wave waits"
    assert effects == (End(RolloutOutcome.SUPERSEDED, message),)


def test_the_part_of_a_wave_that_answers_is_judged_alone_and_fails_or_passes_as_a_wave() -> None:
    down = (("c3", "connection refused"),)
    part = Wave(1, "rest", ("c2",), GATE)
    before = (*through_canary(), Looked(), AtGate(), Applied(True, down))
    state, effects = run(*before)
    assert effects == (CheckGate(part, whole=False),)
    stalled = (ClusterProgress("c2", 1.0, health=Health.DEGRADED, detail="stalled"),)
    _, effects = step(state, GateLooked(10.0, 5.0, stalled))
    halted = GateVerdict(
        Decision.HALT, "c2: degraded: stalled", failed=("c2",), reasons=(("c2", "degraded: stalled"),)
    )
    assert effects[-1] == RollBack(part, halted, reported=False)  # no background analysis for a part
    state, effects = step(state, GateLooked(1000.0, 5.0, healthy(part)))
    assert effects[-1] == RecordPassed("rest", ("c2",), R1)
    assert not any(isinstance(e, Report) for e in effects)
    state, effects = step(state, PassRecorded())
    reason = "waiting for c3: connection refused"
    told = PassEvent(Step.GATE_WAIT, "rest", revision=R1, reason=reason)
    assert effects == (Tell(told), End(RolloutOutcome.WAITING, reason, REST, Decision.WAIT))
    assert state.phases[1] is WavePhase.HELD


def test_a_wave_whose_reachable_part_passed_before_waits_for_the_rest_watching_that_part() -> None:
    down = (("c3", "connection refused"),)
    state, effects = run(*through_canary(), Looked(), AtGate(unreachable=down, reachable_passed=True))
    assert effects == (Observe(Wave(1, "rest", ("c2",), GATE), before_wait=True),)
    _, effects = step(state, WaveObserved(False))
    assert isinstance(effects[0], Tell)
    assert effects[0].event.step is Step.GATE_WAIT
    assert effects[1] == End(
        RolloutOutcome.WAITING, "waiting for c3: connection refused", REST, Decision.WAIT
    )
    _, effects = run(*through_canary(), Looked(), AtGate(), Applied(False, down, reachable_passed=True))
    assert [type(e) for e in effects] == [Tell, End]


def test_a_fact_that_does_not_answer_the_effect_asked_and_any_fact_after_the_end_are_refused() -> None:
    state, _ = start(R1, WAVES)
    with pytest.raises(FactOutOfTurn, match="Look is answered, not by Applied"):
        step(state, Applied(True))
    ended, _ = run(Looked(stop=True))
    with pytest.raises(FactOutOfTurn, match="ended"):
        step(ended, Looked())


@pytest.mark.parametrize(
    "facts",
    [
        (),  # asked to look at the canary
        (Looked(), AtGate(fresh=True)),  # asked to apply it
        (Looked(), AtGate(fresh=True), Applied(True)),  # asked to look at its gate
        (Looked(), AtGate(fresh=True), Applied(True), GateLooked(1000.0, 5.0, healthy(CANARY))),  # analysis
        through_canary()[:-1],  # asked to record it passed
    ],
)
def test_a_lost_lease_answers_any_question_and_ends_the_rollout_fenced_out_where_it_stands(
    facts: tuple[Fact, ...],
) -> None:
    before, _ = run(*facts)
    state, effects = step(before, LeaseLost("no longer holds the leader Lease"))
    told = PassEvent(Step.FENCED_OUT, revision=R1, error="no longer holds the leader Lease")
    assert effects == (Tell(told), End(RolloutOutcome.FENCED_OUT, "no longer holds the leader Lease"))
    assert state.outcome is RolloutOutcome.FENCED_OUT
    assert state.phases == before.phases, "the wave stays where it is, for the Lease holder"
    with pytest.raises(FactOutOfTurn):
        step(state, LeaseLost("again"))
