"""The rollout machine's invariants over random sequences of facts (each an answer the engine could
give to the effect the machine asked last)."""

from __future__ import annotations

from dataclasses import dataclass, field
from random import Random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from syncer.config.rollout import WaveGate
from syncer.domain.progress import Waiting
from syncer.domain.rollout_status import ENDED_BADLY, WavePhase
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
    WaveObserved,
    WentBack,
)

R1 = "a" * 40
GATE = WaveGate(max_concurrent=2, health_timeout=300, bake=60)
WAVES = (
    Wave(0, "canary", ("c1",), GATE),
    Wave(1, "eu", ("c2", "c3"), GATE),
    Wave(2, "us", ("c4", "c5", "c6"), GATE),
)
ABORT = GateVerdict(Decision.ROLLBACK, "aborted by ann", failed=("c1",), aborted=True)
VERDICTS = (
    GateVerdict(Decision.PROCEED, "all healthy"),
    GateVerdict(Decision.WAIT, "baking", waiting=Waiting.BAKE),
    GateVerdict(Decision.WAIT, "waiting for health"),
    GateVerdict(Decision.HALT, "unhealthy", failed=("c2",)),
    GateVerdict(Decision.ROLLBACK, "analysis failed", failed=("c4",)),
    GateVerdict(Decision.ROLLBACK, "background analysis failed", across=("c1", "c2", "c4")),
    ABORT,
)
MAX_STEPS = 6 * len(WAVES) + 2


def down(rnd: Random, wave: Wave) -> tuple[tuple[str, str], ...]:
    """Clusters of ``wave`` that cannot be used, each with why (none, most often)."""
    if rnd.random() < 0.7:
        return ()
    found = rnd.sample(wave.clusters, rnd.randint(1, len(wave.clusters)))
    return tuple((name, "connection refused") for name in sorted(found))


def answer(rnd: Random, asked: Effect) -> Fact:
    """A fact the engine could answer ``asked`` with; the ones that let the rollout go on most often."""

    def rarely(p: float = 0.05) -> bool:
        return rnd.random() < p

    match asked:
        case Look():
            refused = "c2: failed before" if rarely() else ""
            return Looked(rarely(), rarely(0.2), rarely(0.2), ABORT if rarely() else None, refused)
        case LookAtGate(wave):
            held = rnd.choice(
                [
                    Held(suspended=(f"{wave.clusters[0]}: by ann",)),
                    Held(closed=(f"{wave.clusters[-1]}: shut",)),
                ]
            )
            awaits = "waiting for 1 promotion" if rarely() else ""
            return AtGate(awaits, held if rarely() else None, down(rnd, wave), rarely(0.5), rarely(0.5))
        case Apply(wave):
            return Applied(rarely(0.7), down(rnd, wave), rarely(0.5))
        case Judge():
            if rarely(0.05):
                return Overtaken()
            verdict = VERDICTS[0] if rarely(0.75) else rnd.choice(VERDICTS)
            return GateJudged(verdict, rarely(0.3))
        case Observe():
            return WaveObserved(rarely(0.5))
        case RecordPassed():
            return PassRecorded()
        case RollBack() | AbortBack():
            return WentBack(rnd.choice(list(RolloutOutcome)), "went back")
    raise AssertionError(f"{asked} asks no fact")


@dataclass
class Run:
    """What one random run saw: each step's fact and effects, and each state."""

    facts: list[Fact] = field(default_factory=list)
    effects: list[tuple[Effect, ...]] = field(default_factory=list)
    states: list[RolloutMachine] = field(default_factory=list)


def random_run(data: st.DataObject) -> Run:
    rnd = Random(data.draw(st.integers(0, 2**32), label="seed"))  # evenly spread, unlike raw draws
    state, effects = start(R1, WAVES)
    run = Run(effects=[effects], states=[state])
    for _ in range(MAX_STEPS):
        if isinstance(effects[-1], End):
            return run
        fact = answer(rnd, effects[-1])
        state, effects = step(state, fact)
        run.facts.append(fact)
        run.effects.append(effects)
        run.states.append(state)
    raise AssertionError(f"no end after {MAX_STEPS} steps")


def index_of(name: str) -> int:
    return next(w.index for w in WAVES if w.name == name)


@settings(max_examples=1000, deadline=None)
@given(st.data())
def test_every_run_ends_once_and_nothing_comes_after_its_end(data: st.DataObject) -> None:
    run = random_run(data)
    every = [effect for effects in run.effects for effect in effects]
    assert [type(e) for e in every].count(End) == 1
    assert isinstance(every[-1], End)
    assert run.states[-1].outcome is every[-1].outcome
    with pytest.raises(FactOutOfTurn):
        step(run.states[-1], PassRecorded())


@settings(max_examples=1000, deadline=None)
@given(st.data())
def test_no_last_good_after_a_failed_or_aborted_wave_nor_for_an_aborted_revision(data: st.DataObject) -> None:
    run = random_run(data)
    failed: set[str] = set()
    aborted = False
    for before, fact, effects in zip(run.states[:-1], run.facts, run.effects[1:], strict=True):
        wave = before.wave.name
        if isinstance(fact, GateJudged) and fact.verdict.decision in {Decision.HALT, Decision.ROLLBACK}:
            failed.add(wave)
        aborted = aborted or (isinstance(fact, Looked) and fact.abort is not None)
        aborted = aborted or (isinstance(fact, GateJudged) and fact.verdict.aborted)
        for effect in effects:
            if isinstance(effect, RollBack | AbortBack):
                failed.add(effect.wave.name)
            if isinstance(effect, RecordPassed):
                assert effect.wave not in failed, run
                assert not aborted, run


@settings(max_examples=1000, deadline=None)
@given(st.data())
def test_a_wave_that_failed_or_was_aborted_never_reads_passed(data: st.DataObject) -> None:
    run = random_run(data)
    ended: set[int] = set()
    for state in run.states:
        for index, phase in enumerate(state.phases):
            if phase in ENDED_BADLY:
                ended.add(index)
            if index in ended:
                assert phase is not WavePhase.PASSED, run


@settings(max_examples=1000, deadline=None)
@given(st.data())
def test_no_write_follows_a_fact_that_held_or_aborted_the_wave(data: st.DataObject) -> None:
    run = random_run(data)
    blocked: set[str] = set()  # the clusters of the wave in hand last reported unusable
    for fact, effects in zip(run.facts, run.effects[1:], strict=True):
        stops = (isinstance(fact, AtGate) and (fact.held or fact.awaits)) or (
            isinstance(fact, Looked) and fact.abort is not None
        )
        if stops:
            assert not any(isinstance(e, Apply | RecordPassed) for e in effects), run
        if isinstance(fact, Looked):
            blocked = set()
        if isinstance(fact, AtGate | Applied):
            blocked = {name for name, _ in fact.unreachable}
        for effect in effects:
            if isinstance(effect, RecordPassed):
                assert not blocked & set(effect.clusters), run
            if isinstance(effect, Judge | Observe) and blocked:
                assert not effect.whole if isinstance(effect, Judge) else effect.before_wait, run
                assert not blocked & set(effect.wave.clusters), run


@settings(max_examples=1000, deadline=None)
@given(st.data())
def test_a_wave_is_applied_only_after_every_wave_before_it_passed(data: st.DataObject) -> None:
    run = random_run(data)
    passed: set[int] = set()
    for before, fact, effects in zip(run.states[:-1], run.facts, run.effects[1:], strict=True):
        overtaken = before.touched and isinstance(fact, Looked) and fact.newer
        if isinstance(fact, Looked) and fact.passed and not fact.stop and not overtaken:
            passed.add(before.index)
        for effect in effects:
            if isinstance(effect, RecordPassed) and effect.clusters == WAVES[index_of(effect.wave)].clusters:
                passed.add(index_of(effect.wave))
            if isinstance(effect, Apply):
                assert set(range(effect.wave.index)) <= passed, run
