"""The waiting at a wave's gate: each look at explicit times, the analyses and the sleeps as facts."""

from __future__ import annotations

from dataclasses import replace

import pytest

from syncer.analysis import AnalysisPolicy, MetricSpec
from syncer.analysis.wave import WaveAnalysisVerdict
from syncer.config.rollout import WaveGate
from syncer.domain.analysis import AnalysisVerdict
from syncer.domain.health import Health
from syncer.domain.progress import PassEvent, Step, Waiting
from syncer.errors import FactOutOfTurn
from syncer.rollout import ClusterProgress, Decision, GateVerdict, Held, Wave
from syncer.rollout.gate_wait import GateEnd, GateMoved, GateStage, GateWait, gate_step, open_gate
from syncer.rollout.moves import Analyse, AnalysisLooked, CheckGate, GateFact, GateLooked, Sleep, Slept, Tell

R1 = "a" * 40
GATE = WaveGate(max_concurrent=2, health_timeout=300, bake=60)
WAVE = Wave(0, "canary", ("c1", "c2"), GATE)
ANALYSED = replace(WAVE, gate=replace(GATE, analysis=AnalysisPolicy((MetricSpec("errors", "sum(errors)"),))))
POLL = 10.0
ABORT = GateVerdict(Decision.ROLLBACK, "aborted by ann: bad", failed=("c1",), aborted=True)


def progress(**healthy_since: float | None) -> tuple[ClusterProgress, ...]:
    """Each cluster applied at 100, healthy since the time given (None: not healthy yet)."""
    return tuple(
        ClusterProgress(name, 100.0, health=Health.HEALTHY, healthy_since=since)
        if since is not None
        else ClusterProgress(name, 100.0)
        for name, since in healthy_since.items()
    )


def told(moved: GateMoved) -> list[PassEvent]:
    return [e.event for e in moved[1] if isinstance(e, Tell)]


def through(gate: GateWait, *facts: GateFact) -> GateMoved:
    moved: GateMoved = (gate, (), None)
    for fact in facts:
        moved = gate_step(moved[0], fact)
    return moved


def test_a_wave_waits_for_health_then_bakes_then_proceeds_each_look_at_its_time() -> None:
    gate, effects, end = open_gate(WAVE, R1)
    assert (effects, end) == ((CheckGate(WAVE),), None)
    moved = through(gate, GateLooked(110.0, POLL, progress(c1=105.0, c2=None)))
    assert moved[1] == (Analyse(WAVE, background=True),)  # a wave rolling out: the background analysis
    moved = gate_step(moved[0], AnalysisLooked(None))
    health = GateVerdict(Decision.WAIT, "1 of 2 cluster(s) not healthy yet", 5.0, waiting=Waiting.HEALTH)
    event = PassEvent(Step.GATE_WAIT, "canary", revision=R1, reason=health.reason, waiting=Waiting.HEALTH)
    assert moved == (replace(moved[0], stage=GateStage.SLEEPING), (Tell(event), Sleep(5.0)), None)
    assert moved[0].verdict == health
    moved = gate_step(moved[0], Slept(stopped=False))
    assert moved[1] == (CheckGate(WAVE, again=True),)
    # c2 healthy since 120: baked at 180; at 130, 50 s are left, the look comes back after the poll.
    moved = through(moved[0], GateLooked(130.0, POLL, progress(c1=105.0, c2=120.0)), AnalysisLooked(None))
    assert moved[1][-1] == Sleep(POLL)
    assert told(moved)[0].reason == "baking: 50s of 60s left"
    assert told(moved)[0].waiting is Waiting.BAKE
    moved = gate_step(moved[0], Slept(stopped=False))
    moved = through(moved[0], GateLooked(179.0, POLL, progress(c1=105.0, c2=120.0)), AnalysisLooked(None))
    assert moved[1][-1] == Sleep(1.0)  # one second of bake left
    moved = gate_step(moved[0], Slept(stopped=False))
    moved = through(moved[0], GateLooked(180.0, POLL, progress(c1=105.0, c2=120.0)), AnalysisLooked(None))
    proceed = GateVerdict(Decision.PROCEED, "all 2 cluster(s) healthy and baked")
    assert moved[2] == GateEnd(proceed)
    assert [e.step for e in told(moved)] == [Step.GATE_PROCEED]


def test_an_analysis_running_makes_the_wave_wait_and_its_failure_rolls_it_back() -> None:
    gate, _, _ = open_gate(ANALYSED, R1)
    baked = GateLooked(500.0, POLL, progress(c1=105.0, c2=110.0), rollback=True)
    moved = gate_step(gate, baked)
    assert moved[1] == (Analyse(ANALYSED),)
    assert moved[0].stage is GateStage.ANALYSING
    running = WaveAnalysisVerdict(AnalysisVerdict.RUNNING, "errors: 1 of 3 measured", 30.0)
    moved = through(moved[0], AnalysisLooked(running), AnalysisLooked(None))
    assert moved[1][-1] == Sleep(POLL)
    assert told(moved)[0].waiting is Waiting.ANALYSIS
    failed = WaveAnalysisVerdict(AnalysisVerdict.FAILED, "errors: 0.3 > 0.1", clusters=(("c2", "0.3 > 0.1"),))
    moved = through(moved[0], Slept(False), replace(baked, now=540.0), AnalysisLooked(failed))
    verdict = GateVerdict(
        Decision.ROLLBACK,
        "errors: 0.3 > 0.1",
        failed=("c2",),
        reasons=(("c2", "0.3 > 0.1"),),
        analysis=AnalysisVerdict.FAILED,
    )
    assert moved[2] == GateEnd(verdict)  # a failed wave is not measured by the background analysis
    assert [e.step for e in told(moved)] == [Step.GATE_ROLLBACK]
    # Without a rollback allowed it halts; inconclusive halts for a person.
    halted = through(gate, replace(baked, rollback=False), AnalysisLooked(failed))[2]
    assert halted is not None
    assert halted.verdict is not None
    assert halted.verdict.decision is Decision.HALT
    unsure = WaveAnalysisVerdict(AnalysisVerdict.INCONCLUSIVE, "errors: no data", clusters=(("c1", "?"),))
    ended = through(gate, baked, AnalysisLooked(unsure))[2]
    assert ended is not None
    assert ended.verdict is not None
    assert ended.verdict.decision is Decision.HALT
    assert ended.verdict.reason.endswith("waiting for a person: syncer retry measures again")


def test_a_persons_abort_read_mid_wait_ends_the_gate_at_once_and_is_told() -> None:
    gate, _, _ = open_gate(WAVE, R1)
    moved = through(
        gate, GateLooked(110.0, POLL, progress(c1=None, c2=None)), AnalysisLooked(None), Slept(False)
    )
    moved = gate_step(moved[0], GateLooked(120.0, POLL, progress(c1=105.0, c2=None), abort=ABORT))
    event = PassEvent(Step.ROLLOUT_ABORTED, "canary", revision=R1, reason=ABORT.reason)
    assert moved[1:] == ((Tell(event),), GateEnd(ABORT))


def test_a_stop_mid_wait_ends_the_gate_with_its_wait() -> None:
    gate, _, _ = open_gate(WAVE, R1)
    moved = through(gate, GateLooked(110.0, POLL, progress(c1=None, c2=None)), AnalysisLooked(None))
    waiting = moved[0].verdict
    assert waiting is not None
    assert gate_step(moved[0], Slept(stopped=True))[1:] == ((), GateEnd(waiting, stopped=True))


def test_a_cluster_another_replica_owns_is_waited_for_until_the_health_timeout() -> None:
    gate, _, _ = open_gate(WAVE, R1)
    late = "c2: its owner has not put it on aaaa (it records nothing yet)"
    elsewhere = (*progress(c1=90.0), ClusterProgress("c2"))  # not applied: its owner did not yet
    look = GateLooked(100.0, POLL, elsewhere, elsewhere=(late,))
    moved = through(gate, look, AnalysisLooked(None))
    assert moved[1][-1] == Sleep(5.0)  # before its timeout: the gate waits and says what for
    assert told(moved)[0].reason == f"waiting for {late}"
    moved = through(moved[0], Slept(False), replace(look, now=399.0), AnalysisLooked(None))
    assert moved[2] is None
    moved = through(moved[0], Slept(False), replace(look, now=400.0))  # 300 s after the first look
    reason = f"waiting for {late}"
    assert moved[2] == GateEnd(GateVerdict(Decision.WAIT, f"{reason} (for 300s)", 5.0, waiting=None))
    assert told(moved) == [PassEvent(Step.GATE_WAIT, "canary", revision=R1, reason=reason)]


def test_a_cluster_elsewhere_that_a_person_holds_now_ends_the_wait_at_once() -> None:
    gate, _, _ = open_gate(WAVE, R1)
    held = Held(suspended=("c2: suspended by ann",))
    elsewhere = (*progress(c1=90.0), ClusterProgress("c2"))
    look = GateLooked(100.0, POLL, elsewhere, elsewhere=("c2: elsewhere",), held=held)
    _, _, end = gate_step(gate, look)
    waits = GateVerdict(Decision.WAIT, "waiting for c2: suspended by ann", 5.0, waiting=Waiting.SUSPENDED)
    assert end == GateEnd(waits)


def test_a_newer_revision_overtakes_a_waiting_gate() -> None:
    gate, _, _ = open_gate(WAVE, R1)
    moved = through(gate, GateLooked(110.0, POLL, progress(c1=None, c2=None)), AnalysisLooked(None))
    moved = through(moved[0], Slept(False), GateLooked(120.0, POLL, newer=True))
    assert moved[1:] == ((), GateEnd(None))


def test_a_wave_still_healthy_is_neither_measured_nor_baked_again() -> None:
    gate, _, _ = open_gate(ANALYSED, R1)
    moved = gate_step(gate, GateLooked(500.0, POLL, progress(c1=105.0, c2=110.0), still=True))
    assert [e.step for e in told(moved)] == [Step.GATE_STILL_HEALTHY]
    assert moved[2] == GateEnd(GateVerdict(Decision.PROCEED, "all 2 cluster(s) healthy and baked"))


def test_a_rollbacks_gate_reads_no_background_analysis_and_a_fact_out_of_turn_is_refused() -> None:
    gate, effects, _ = open_gate(ANALYSED, R1, whole=False, analysed=False)
    assert effects == (CheckGate(ANALYSED, whole=False),)
    moved = gate_step(gate, GateLooked(110.0, POLL, progress(c1=None, c2=None)))
    assert moved[1][-1] == Sleep(5.0)
    moved = through(moved[0], Slept(False), GateLooked(500.0, POLL, progress(c1=105.0, c2=110.0)))
    assert moved[2] == GateEnd(GateVerdict(Decision.PROCEED, "all 2 cluster(s) healthy and baked"))
    with pytest.raises(FactOutOfTurn, match="not answered by Slept"):
        gate_step(gate, Slept(False))
