"""The rollout of one revision over the policy's waves as a pure machine: ``start(revision, waves)``
and ``step(state, fact)`` each return the next state and the effects the engine must run, in order
(``syncer.rollout.moves``). [pure]

The machine owns the order of a rollout and its invariants; the engine only observes and acts:
- each wave starts only after the one before passed (before, or its gate proceeded and it was
  recorded); a wave whose gate failed or that a person aborted never reads passed;
- a revision's last good mark is written only by ``RecordPassed``, never after a failed or aborted
  judgement of the wave in the rollout, never for a revision a person aborted (an abort seen on a
  passed wave sends every later wave back too);
- a wave a person holds (suspension, pin), a closed window or a manual gate keeps gets no write:
  the rollout ends waiting;
- a wave's gate waits in the machine (``syncer.rollout.gate_wait``): each look is a ``CheckGate``
  answered by what was observed then (the time, each cluster's progress, a person's abort, a newer
  revision, a sharded replica's clusters elsewhere), the analyses' verdicts come in as facts, and a
  wait is a ``Sleep``; a wave is recorded passed only once it has been healthy for its bake and its
  analysis passed, never after an abort was read;
- after ``End`` nothing: every rollout ends (each wave is looked at once; its gate ends when asked
  to stop, and once the times it is given pass its timeouts).

No I/O, no clock: times and what the clusters say come in the facts.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from syncer.domain.progress import PassEvent, Step, Waiting
from syncer.domain.rollout_status import ENDED_BADLY, WavePhase
from syncer.errors import FactOutOfTurn
from syncer.rollout.gate import Decision, GateVerdict
from syncer.rollout.gate_wait import GateMoved, GateStage, GateWait, gate_step, open_gate
from syncer.rollout.moves import (
    AbortBack,
    Analyse,
    AnalysisLooked,
    Applied,
    Apply,
    Asking,
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
from syncer.rollout.waves import Wave

__all__ = ["RolloutMachine", "start", "step"]

_ANSWERS: dict[type, tuple[type, ...]] = {
    Look: (Looked,),
    LookAtGate: (AtGate,),
    Apply: (Applied,),
    CheckGate: (GateLooked,),
    Analyse: (AnalysisLooked,),
    Sleep: (Slept,),
    Observe: (WaveObserved,),
    RecordPassed: (PassRecorded,),
    RollBack: (WentBack,),
    AbortBack: (WentBack,),
}
_WAITS = {
    Waiting.BAKE: WavePhase.BAKING,
    Waiting.ANALYSIS: WavePhase.ANALYSING,
    Waiting.SUSPENDED: WavePhase.HELD,
    Waiting.WINDOW: WavePhase.HELD,
}

Moved = tuple["RolloutMachine", tuple[Effect, ...]]


@dataclass(frozen=True)
class RolloutMachine:
    """One pass's rollout of ``revision`` over ``waves``: the wave in hand (``index``), each wave's
    phase, whether this pass wrote (``touched``) and whether the last wave went through its gate in it
    (``judged``), a person's abort seen on an earlier wave (``aborted``), the effect whose fact it
    waits for (``asked``), what the wave waits for when part of it cannot be used (``blocked``), the
    wave's gate while it waits there (``gate``), and the outcome once it ended."""

    revision: str
    waves: tuple[Wave, ...]
    phases: tuple[WavePhase, ...]
    index: int = 0
    touched: bool = False
    judged: bool = False
    aborted: GateVerdict | None = None
    asked: Asking | None = None
    blocked: str = ""
    gate: GateWait | None = None
    outcome: RolloutOutcome | None = None

    @property
    def wave(self) -> Wave:
        return self.waves[self.index]

    def phase(self, name: str) -> WavePhase:
        return next(p for w, p in zip(self.waves, self.phases, strict=True) if w.name == name)

    def at(self, phase: WavePhase) -> RolloutMachine:
        """The wave in hand in ``phase``; one that ended badly never reads passed."""
        if phase is WavePhase.PASSED and self.phases[self.index] in {*ENDED_BADLY, WavePhase.ROLLING_BACK}:
            return self
        phases = tuple(phase if i == self.index else p for i, p in enumerate(self.phases))
        return replace(self, phases=phases)


def start(revision: str, waves: tuple[Wave, ...]) -> Moved:
    """The rollout of ``revision`` before its first wave."""
    state = RolloutMachine(revision, waves, tuple(WavePhase.PENDING for _ in waves))
    return _next_wave(state, 0)


def step(state: RolloutMachine, fact: Fact) -> Moved:
    """The rollout after the engine observed ``fact`` (the answer to the effect it was asked last)."""
    asked = state.asked
    if state.outcome is not None or asked is None:
        raise FactOutOfTurn(f"the rollout of {state.revision[:12]} ended; {type(fact).__name__} came after")
    if isinstance(fact, LeaseLost):
        # Nothing more may be written: the wave stays where it is, for the Lease holder to go on.
        lost = PassEvent(Step.FENCED_OUT, revision=state.revision, error=fact.message)
        return _told(_end(replace(state, gate=None), RolloutOutcome.FENCED_OUT, fact.message), lost)
    if not isinstance(fact, _ANSWERS[type(asked)]):
        raise FactOutOfTurn(f"{type(asked).__name__} is answered, not by {type(fact).__name__}")
    return _answer(replace(state, asked=None), asked, fact)


def _answer(state: RolloutMachine, asked: Asking, fact: Fact) -> Moved:
    match asked, fact:
        case Look(), Looked():
            return _looked(state, fact)
        case LookAtGate(), AtGate():
            return _at_gate(state, fact)
        case Apply(), Applied():
            return _applied(state, fact)
        case CheckGate() | Analyse() | Sleep(), GateLooked() | AnalysisLooked() | Slept() if state.gate:
            return _gate_moved(state, gate_step(state.gate, fact))
        case Observe(_, before_wait), WaveObserved():
            if before_wait:
                return _wait(state)
            state = replace(state.at(WavePhase.PASSED), touched=state.touched or fact.wrote, judged=False)
            return _next_wave(state, state.index + 1)
        case RecordPassed(), PassRecorded():
            if state.blocked:  # the part that answers passed; the wave waits for the rest
                return _wait(state)
            return _next_wave(replace(state.at(WavePhase.PASSED), judged=True), state.index + 1)
        case AbortBack(), WentBack() if state.phases[state.index] is WavePhase.PASSED:
            # A passed wave went back for a person's abort: the revision goes no further.
            return _next_wave(state.at(WavePhase.ABORTED), state.index + 1)
        case RollBack() | AbortBack(), WentBack():
            ended = WavePhase.ABORTED if state.aborted is not None else WavePhase.FAILED
            return _end(state.at(ended), fact.outcome, fact.message)
    raise FactOutOfTurn(f"{type(asked).__name__} is answered, not by {type(fact).__name__}")


def _ask(state: RolloutMachine, *effects: Effect) -> Moved:
    """``effects``, the last of which asks a fact the machine waits for."""
    last = effects[-1]
    assert not isinstance(last, Tell | Report | End)
    return replace(state, asked=last), effects


def _end(
    state: RolloutMachine, outcome: RolloutOutcome, message: str, decision: Decision | None = None
) -> Moved:
    """The end; with a ``decision``, the wave in hand's report closes it."""
    wave = state.wave if decision is not None else None
    return replace(state, outcome=outcome, asked=None), (End(outcome, message, wave, decision),)


def _next_wave(state: RolloutMachine, index: int) -> Moved:
    if index < len(state.waves):
        state = replace(state, index=index, blocked="")
        return _ask(state, Look(state.wave, ask_newer=state.touched))
    outcome = RolloutOutcome.APPLIED if state.touched else RolloutOutcome.UNCHANGED
    state = replace(state, outcome=outcome, asked=None)
    finished: tuple[Effect, ...] = ()
    if state.judged:  # the last wave passed its gate in this pass
        done = f"{len(state.waves)} wave(s) healthy"
        finished = (Tell(PassEvent(Step.ROLLOUT_FINISHED, revision=state.revision, reason=done)),)
    return state, (*finished, End(outcome))


def _looked(state: RolloutMachine, fact: Looked) -> Moved:
    wave = state.wave
    if fact.stop:
        return _end(state, RolloutOutcome.INTERRUPTED, "stopped between waves")
    if state.touched and fact.newer:
        message = "a newer verified revision takes over at this wave boundary"
        return _end(state, RolloutOutcome.SUPERSEDED, message)
    if fact.passed:
        state = state.at(WavePhase.PASSED)
        if fact.abort is not None:
            return _ask(replace(state, aborted=fact.abort, judged=False), AbortBack(wave, fact.abort))
        return _ask(state, Observe(wave))
    if fact.refused:
        return _end(state.at(WavePhase.FAILED), RolloutOutcome.HALTED, fact.refused, Decision.HALT)
    aborted = fact.abort
    if aborted is None and state.aborted is not None:  # an earlier wave's abort: no further
        aborted = replace(state.aborted, decision=Decision.HALT, failed=(), reasons=())
    if aborted is not None:
        return _ask(replace(state, aborted=aborted).at(WavePhase.ROLLING_BACK), AbortBack(wave, aborted))
    return _ask(state, LookAtGate(wave))


def _at_gate(state: RolloutMachine, fact: AtGate) -> Moved:
    wave = state.wave
    if fact.awaits:
        state = state.at(WavePhase.AWAITING_PROMOTION)
        return _end(state, RolloutOutcome.WAITING, fact.awaits, Decision.WAIT)
    if fact.held:
        held = fact.held
        event = PassEvent(
            Step.GATE_WAIT, wave.name, revision=state.revision, reason=held.reason, waiting=held.waiting
        )
        state = state.at(WavePhase.HELD)
        return _told(_end(state, RolloutOutcome.WAITING, held.reason, Decision.WAIT), event)
    if fact.unreachable and fact.reachable_passed:
        # The ones that answer passed before: while the wave waits they are watched, not re-judged.
        state = replace(state, blocked=_blocked(fact.unreachable))
        return _ask(state, Observe(_part(wave, fact.unreachable), before_wait=True))
    state = state.at(WavePhase.APPLYING)
    started = PassEvent(Step.ROLLOUT_STARTED, wave.name, revision=state.revision)
    return _ask(state, *((Tell(started),) if fact.fresh else ()), Apply(wave))


def _applied(state: RolloutMachine, fact: Applied) -> Moved:
    wave = state.wave
    state = replace(state, touched=state.touched or fact.wrote).at(WavePhase.WAITING_HEALTH)
    if not fact.unreachable:
        return _gate_moved(state, open_gate(wave, state.revision))
    state = replace(state, blocked=_blocked(fact.unreachable))
    part = _part(wave, fact.unreachable)
    if part.clusters and not fact.reachable_passed:  # the ones that answer are judged as a wave
        return _gate_moved(state, open_gate(part, state.revision, whole=False))
    return _wait(state)


def _gate_moved(state: RolloutMachine, moved: GateMoved) -> Moved:
    """The rollout while its wave's gate waits (each wait in the wave's phase), or once it ended:
    the wave in hand is reported and goes on as its verdict says; the part of a wave that answers
    fails or passes alone."""
    gate, effects, end = moved
    if end is None:
        if gate.whole and gate.stage is GateStage.SLEEPING and gate.verdict is not None:
            state = state.at(_WAITS.get(gate.verdict.waiting or Waiting.HEALTH, WavePhase.WAITING_HEALTH))
        elif gate.whole and gate.stage is GateStage.ANALYSING:
            state = state.at(WavePhase.ANALYSING)
        return _ask(replace(state, gate=gate), *effects)
    state = replace(state, gate=None)
    if end.verdict is None:
        message = "a newer verified revision takes over while the wave waits"
        return _before(_end(state, RolloutOutcome.SUPERSEDED, message), *effects)
    if not gate.whole:
        return _before(_part_judged(state, gate.wave, end.verdict), *effects)
    reported = Report(gate.wave, end.verdict)
    return _before(_judged(state, gate.wave, end.verdict, stopped=end.stopped), *effects, reported)


def _judged(state: RolloutMachine, wave: Wave, verdict: GateVerdict, *, stopped: bool) -> Moved:
    if verdict.aborted:
        state = replace(state, aborted=verdict)
    if verdict.decision is Decision.WAIT:
        state = state.at(_WAITS.get(verdict.waiting or Waiting.HEALTH, WavePhase.WAITING_HEALTH))
        if stopped:
            return _end(state, RolloutOutcome.INTERRUPTED, "stopped while waiting")
        return _end(state, RolloutOutcome.WAITING, verdict.reason)
    if verdict.decision is Decision.PROCEED and not verdict.aborted:
        return _ask(state, RecordPassed(wave.name, wave.clusters, state.revision))
    # A background analysis' failure fails every cluster on the revision with the wave.
    failing = replace(wave, clusters=verdict.across) if verdict.across else wave
    ended = WavePhase.ABORTED if verdict.aborted else WavePhase.FAILED
    return _ask(state.at(ended).at(WavePhase.ROLLING_BACK), RollBack(failing, _failing(verdict)))


def _part_judged(state: RolloutMachine, part: Wave, verdict: GateVerdict) -> Moved:
    if verdict.decision in {Decision.HALT, Decision.ROLLBACK}:
        failed = state.at(WavePhase.FAILED).at(WavePhase.ROLLING_BACK)
        return _ask(failed, RollBack(part, verdict, reported=False))
    if verdict.decision is Decision.PROCEED:
        return _ask(state, RecordPassed(part.name, part.clusters, state.revision))
    return _wait(state)


def _wait(state: RolloutMachine) -> Moved:
    """The wave waits for the clusters of it that cannot be used (``blocked``)."""
    reason = state.blocked
    event = PassEvent(Step.GATE_WAIT, state.wave.name, revision=state.revision, reason=reason)
    waiting = _end(state.at(WavePhase.HELD), RolloutOutcome.WAITING, reason, Decision.WAIT)
    return _told(waiting, event)


def _told(moved: Moved, event: PassEvent) -> Moved:
    return _before(moved, Tell(event))


def _before(moved: Moved, *first: Effect) -> Moved:
    """``moved`` with the effects ``first`` run before its own."""
    state, effects = moved
    return state, (*first, *effects)


def _failing(verdict: GateVerdict) -> GateVerdict:
    """A verdict that sends a wave back is a halt or a rollback."""
    if verdict.decision in {Decision.HALT, Decision.ROLLBACK}:
        return verdict
    return replace(verdict, decision=Decision.HALT)


def _part(wave: Wave, unreachable: tuple[tuple[str, str], ...]) -> Wave:
    out = {name for name, _ in unreachable}
    return replace(wave, clusters=tuple(c for c in wave.clusters if c not in out))


def _blocked(unreachable: tuple[tuple[str, str], ...]) -> str:
    return "waiting for " + "; ".join(f"{name}: {why}" for name, why in unreachable)
