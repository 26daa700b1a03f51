"""The rollout machine: every transition from a fact to the next state and effects."""

from __future__ import annotations

import pytest

from syncer.config.rollout import WaveGate
from syncer.domain.progress import PassEvent, Step, Waiting
from syncer.domain.rollout_status import WavePhase
from syncer.errors import FactOutOfTurn
from syncer.rollout import Decision, GateVerdict, Held, Wave
from syncer.rollout.machine import RolloutMachine, start, step
from syncer.rollout.moves import (
    AbortBack,
    Applied,
    Apply,
    AtGate,
    Effect,
    End,
    Fact,
    GateJudged,
    Judge,
    Look,
    LookAtGate,
    Looked,
    Observe,
    Overtaken,
    PassRecorded,
    RecordPassed,
    RollBack,
    RolloutOutcome,
    Tell,
    WaveObserved,
    WentBack,
)

R1 = "a" * 40
GATE = WaveGate(max_concurrent=2, health_timeout=300, bake=60)
CANARY = Wave(0, "canary", ("c1",), GATE)
REST = Wave(1, "rest", ("c2", "c3"), GATE)
WAVES = (CANARY, REST)
PROCEED = GateVerdict(Decision.PROCEED, "all healthy")
ABORT = GateVerdict(Decision.ROLLBACK, "aborted by ann: bad", failed=("c1",), aborted=True)


def run(*facts: Fact, waves: tuple[Wave, ...] = WAVES) -> tuple[RolloutMachine, tuple[Effect, ...]]:
    """The machine after ``facts``, with the effects of the last step."""
    state, effects = start(R1, waves)
    for fact in facts:
        state, effects = step(state, fact)
    return state, effects


def through_canary(*, wrote: bool = True) -> tuple[Fact, ...]:
    """The canary looked at, applied and passed."""
    return (Looked(), AtGate(fresh=True), Applied(wrote), GateJudged(PROCEED), PassRecorded())


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
    assert effects == (Judge(CANARY),)
    state, effects = step(state, GateJudged(PROCEED))
    assert effects == (RecordPassed("canary", ("c1",), R1),)
    assert state.phases[0] is WavePhase.WAITING_HEALTH  # passed once recorded
    state, effects = step(state, PassRecorded())
    assert state.phases[0] is WavePhase.PASSED
    rest = (Looked(), AtGate(), Applied(False), GateJudged(PROCEED), PassRecorded())
    for fact in rest:
        state, effects = step(state, fact)
    finished = PassEvent(Step.ROLLOUT_FINISHED, revision=R1, reason="2 wave(s) healthy")
    assert effects == (Tell(finished), End(RolloutOutcome.APPLIED))


def test_a_waiting_gate_ends_the_pass_waiting_or_interrupted_when_asked_to_stop() -> None:
    baking = GateVerdict(Decision.WAIT, "baking: 30s left", waiting=Waiting.BAKE)
    state, effects = run(Looked(), AtGate(), Applied(True), GateJudged(baking))
    assert effects == (End(RolloutOutcome.WAITING, "baking: 30s left"),)
    assert state.phases[0] is WavePhase.BAKING
    _, effects = run(Looked(), AtGate(), Applied(True), GateJudged(baking, stopped=True))
    assert effects == (End(RolloutOutcome.INTERRUPTED, "stopped while waiting"),)


def test_a_failed_wave_rolls_back_every_cluster_its_verdict_names_and_never_reads_passed() -> None:
    failed = GateVerdict(Decision.ROLLBACK, "background analysis failed", across=("c1", "c2"))
    state, effects = run(*through_canary(), Looked(), AtGate(), Applied(True), GateJudged(failed))
    across = Wave(1, "rest", ("c1", "c2"), GATE)
    assert effects == (RollBack(across, failed),)
    assert state.phases[1] is WavePhase.ROLLING_BACK
    state, effects = step(state, WentBack(RolloutOutcome.ROLLED_BACK, "rolled back"))
    assert effects == (End(RolloutOutcome.ROLLED_BACK, "rolled back"),)
    assert state.phases[1] is WavePhase.FAILED
    assert state.at(WavePhase.PASSED).phases[1] is WavePhase.FAILED


def test_an_abort_read_while_the_gate_waits_sends_the_wave_back_as_aborted() -> None:
    state, effects = run(Looked(), AtGate(), Applied(True), GateJudged(ABORT))
    assert effects == (RollBack(CANARY, ABORT),)
    assert state.aborted == ABORT
    state, _ = step(state, WentBack(RolloutOutcome.ROLLED_BACK, "back"))
    assert state.phases[0] is WavePhase.ABORTED


def test_a_newer_revision_taking_over_at_the_gate_ends_the_rollout_superseded() -> None:
    _, effects = run(Looked(), AtGate(), Applied(True), Overtaken())
    message = "a newer verified revision takes over while the wave waits"
    assert effects == (End(RolloutOutcome.SUPERSEDED, message),)


def test_the_part_of_a_wave_that_answers_is_judged_alone_and_fails_or_passes_as_a_wave() -> None:
    down = (("c3", "connection refused"),)
    part = Wave(1, "rest", ("c2",), GATE)
    before = (*through_canary(), Looked(), AtGate(), Applied(True, down))
    state, effects = run(*before)
    assert effects == (Judge(part, whole=False),)
    halted = GateVerdict(Decision.HALT, "c2: unhealthy", failed=("c2",))
    _, effects = step(state, GateJudged(halted))
    assert effects == (RollBack(part, halted, reported=False),)
    state, effects = step(state, GateJudged(PROCEED))
    assert effects == (RecordPassed("rest", ("c2",), R1),)
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
