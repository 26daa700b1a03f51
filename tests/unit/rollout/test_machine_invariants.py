"""The rollout machine's invariants over random sequences of facts (each an answer the engine could
give to the effect the machine asked last), its gates looked at at random times: each cluster
turns healthy at a random moment after its apply (or never), degrades, is held or elsewhere now and
then, and the analyses answer at random."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from random import Random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from syncer.analysis import AnalysisPolicy, MetricSpec
from syncer.analysis.wave import WaveAnalysisVerdict
from syncer.config.rollout import WaveGate
from syncer.domain.analysis import AnalysisVerdict
from syncer.domain.health import Health
from syncer.domain.rollout_status import ENDED_BADLY, WavePhase
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
ANALYSED = replace(GATE, analysis=AnalysisPolicy((MetricSpec("errors", "sum(rate(errors[1m]))"),)))
WAVES = (
    Wave(0, "canary", ("c1",), GATE),
    Wave(1, "eu", ("c2", "c3"), ANALYSED),
    Wave(2, "us", ("c4", "c5", "c6"), GATE),
)
ABORT = GateVerdict(Decision.ROLLBACK, "aborted by ann", failed=("c1",), aborted=True)
ANALYSES = (
    WaveAnalysisVerdict(AnalysisVerdict.RUNNING, "measuring", 30.0),
    WaveAnalysisVerdict(AnalysisVerdict.SUCCESSFUL, "errors passed"),
    WaveAnalysisVerdict(AnalysisVerdict.FAILED, "errors failed", clusters=(("c2", "0.3 > 0.1"),)),
    WaveAnalysisVerdict(AnalysisVerdict.INCONCLUSIVE, "errors inconclusive", clusters=(("c3", "?"),)),
)
# Each wave's gate ends by its health timeout (300 s) at the latest, each look (CheckGate, the
# analyses, Sleep) moving the time on by at least a second, unless an analysis runs on and on.
MAX_STEPS = len(WAVES) * 1200


def down(rnd: Random, wave: Wave) -> tuple[tuple[str, str], ...]:
    """Clusters of ``wave`` that cannot be used, each with why (none, most often)."""
    if rnd.random() < 0.7:
        return ()
    found = rnd.sample(wave.clusters, rnd.randint(1, len(wave.clusters)))
    return tuple((name, "connection refused") for name in sorted(found))


@dataclass
class World:
    """The fleet a random run observes: the time, when each cluster was applied and when it turned
    healthy (None: it never does)."""

    rnd: Random
    now: float = 1000.0
    applied: dict[str, float] = field(default_factory=dict)
    healthy_at: dict[str, float | None] = field(default_factory=dict)

    def rarely(self, p: float = 0.05) -> bool:
        return self.rnd.random() < p

    def apply(self, wave: Wave) -> None:
        for name in wave.clusters:
            self.applied[name] = self.now
            self.healthy_at[name] = None if self.rarely(0.05) else self.now + self.rnd.uniform(0, 150)

    def progress(self, name: str) -> ClusterProgress:
        applied = self.applied.setdefault(name, self.now)
        since = self.healthy_at.get(name, applied)
        if self.rarely(0.002):
            return ClusterProgress(name, applied, health=Health.DEGRADED, detail="stalled")
        if since is None or since > self.now:
            return ClusterProgress(name, applied)
        return ClusterProgress(name, applied, health=Health.HEALTHY, healthy_since=since)

    def look(self, check: CheckGate) -> GateLooked:
        """One look at a gate a little after it was asked (a gate looks tens of times: what ends it
        comes rarely in each look)."""
        self.now += self.rnd.uniform(0, 3)
        rarely, wave = self.rarely, check.wave
        poll = 5.0
        if check.whole and rarely(0.003):
            return GateLooked(self.now, poll, newer=True)
        progress = tuple(self.progress(name) for name in wave.clusters)
        if check.whole and rarely(0.003):
            return GateLooked(self.now, poll, progress, abort=ABORT)
        elsewhere = (f"{wave.clusters[-1]}: its owner has not put it on it",) if rarely(0.03) else ()
        held = Held(suspended=(f"{wave.clusters[-1]}: by ann",)) if elsewhere and rarely(0.2) else None
        return GateLooked(
            self.now, poll, progress, rarely(0.003), False, None, elsewhere, held, rarely(0.1), rarely(0.5)
        )

    def analysis(self, background: bool) -> AnalysisLooked:
        if background and self.rarely(0.5):
            return AnalysisLooked(None)
        # The background analysis is asked at each look, the wave's once it is healthy and baked.
        found = self.rnd.choices(ANALYSES, weights=(300, 700, 3, 3) if background else (30, 60, 5, 5))[0]
        return AnalysisLooked(found, ("c1", "c2") if background else ())


def answer(world: World, asked: Effect) -> Fact:
    """A fact the engine could answer ``asked`` with; the ones that let the rollout go on most often."""
    rnd, rarely = world.rnd, world.rarely
    if rarely(0.001):
        return LeaseLost("no longer holds the leader Lease")  # any write may be fenced out
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
            world.apply(wave)
            return Applied(rarely(0.7), down(rnd, wave), rarely(0.5))
        case CheckGate():
            return world.look(asked)
        case Analyse(_, background):
            return world.analysis(background)
        case Sleep(seconds):
            world.now += seconds
            return Slept(rarely(0.003))
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
    world = World(Random(data.draw(st.integers(0, 2**32), label="seed")))  # evenly spread, unlike raw draws
    state, effects = start(R1, WAVES)
    run = Run(effects=[effects], states=[state])
    for _ in range(MAX_STEPS):
        if isinstance(effects[-1], End):
            return run
        fact = answer(world, effects[-1])
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
        aborted = aborted or (isinstance(fact, Looked | GateLooked) and fact.abort is not None)
        for effect in effects:
            if isinstance(effect, RollBack | AbortBack):
                failed.add(effect.wave.name)
                failed.add(wave)
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
            if isinstance(effect, CheckGate | Observe) and blocked:
                assert not effect.whole if isinstance(effect, CheckGate) else effect.before_wait, run
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


@settings(max_examples=1000, deadline=None)
@given(st.data())
def test_a_wave_is_recorded_passed_only_once_every_cluster_was_healthy_for_its_bake(
    data: st.DataObject,
) -> None:
    run = random_run(data)
    looked: GateLooked | None = None  # the last look at the gate in hand
    for fact, effects in zip(run.facts, run.effects[1:], strict=True):
        looked = fact if isinstance(fact, GateLooked) else looked
        for effect in effects:
            if not isinstance(effect, RecordPassed):
                continue
            assert looked is not None, run
            seen = {p.cluster: p for p in looked.progress}
            for name in effect.clusters:
                since = seen[name].healthy_since
                assert seen[name].health is Health.HEALTHY, run
                assert since is not None, run
                assert looked.now >= since + GATE.bake, run


@settings(max_examples=1000, deadline=None)
@given(st.data())
def test_no_wave_is_recorded_passed_after_a_failed_analysis(data: st.DataObject) -> None:
    run = random_run(data)
    failed = False  # an analysis failed or was inconclusive in the gate in hand
    for fact, effects in zip(run.facts, run.effects[1:], strict=True):
        if isinstance(fact, GateLooked):
            failed = False
        if isinstance(fact, AnalysisLooked) and fact.found is not None:
            failed = failed or fact.found.verdict in {AnalysisVerdict.FAILED, AnalysisVerdict.INCONCLUSIVE}
        if failed:
            assert not any(isinstance(e, RecordPassed) for e in effects), run


@settings(max_examples=1000, deadline=None)
@given(st.data())
def test_nothing_is_written_once_the_lease_is_lost(data: st.DataObject) -> None:
    run = random_run(data)
    for index, fact in enumerate(run.facts):
        if isinstance(fact, LeaseLost):
            assert all(isinstance(e, Tell | End) for e in run.effects[index + 1]), run
            assert run.states[index + 1].outcome is RolloutOutcome.FENCED_OUT, run
