"""The waiting at a wave's health gate as a pure machine: ``open_gate`` and ``gate_step(gate, fact)``
each return the gate's next state, the effects the engine must run in order, and the gate's end once
it decided (``GateEnd``). [pure]

One look at the gate is one ``CheckGate``, answered by ``GateLooked``: the time and what was
observed then. The gate judges it (``judge_wave``): health first; a wave a sharded replica waits on
other replicas for ends its wait at once when a person or a window holds those clusters, or once
they are late (the wave's health timeout since the gate's first look); a healthy, baked wave is then
measured by its analysis (``Analyse``, answered by ``AnalysisLooked``), and a wave rolling out
(``whole``) by the rollout's background analysis. Each decision is told (``gate-wait``,
``gate-proceed`` ...); a wait sleeps (``Sleep``, answered by ``Slept``) and looks again, unless the
agent was asked to stop. A person's abort read in a look ends the gate at once, and so does a newer
revision (a sharded replica rolling out): ``GateEnd(None)``.

No I/O, no clock: the time is the look's.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from enum import StrEnum

from syncer.analysis.wave import WaveAnalysisVerdict
from syncer.domain.analysis import AnalysisVerdict
from syncer.domain.progress import PassEvent, Step, Waiting
from syncer.errors import FactOutOfTurn
from syncer.rollout.gate import Decision, GateVerdict, judge_wave
from syncer.rollout.moves import (
    Analyse,
    AnalysisLooked,
    CheckGate,
    Effect,
    GateFact,
    GateLooked,
    Sleep,
    Slept,
    Tell,
)
from syncer.rollout.waves import Wave

__all__ = ["GateEnd", "GateStage", "GateWait", "gate_step", "open_gate"]

_GATE_STEPS = {
    Decision.WAIT: Step.GATE_WAIT,
    Decision.PROCEED: Step.GATE_PROCEED,
    Decision.HALT: Step.GATE_HALT,
    Decision.ROLLBACK: Step.GATE_ROLLBACK,
}


class GateStage(StrEnum):
    """What the gate waits for: a look, the wave's analysis, the background analysis, or a sleep."""

    LOOKING = "looking"
    ANALYSING = "analysing"
    BACKGROUND = "background"
    SLEEPING = "sleeping"


@dataclass(frozen=True)
class GateWait:
    """The gate of ``wave`` on ``revision``: ``whole`` (the wave in hand rolling out: a person's
    abort, a newer revision and the background analysis are read) or the part of it that can be
    reached or a rollback's; ``analysed``: a healthy, baked wave is measured by its analysis; when
    it first looked (``entered``), what it waits for (``stage``), the verdict so far of the look in
    hand (``verdict``) and that look (``seen``)."""

    wave: Wave
    revision: str
    whole: bool = True
    analysed: bool = True
    entered: float | None = None
    stage: GateStage = GateStage.LOOKING
    verdict: GateVerdict | None = None
    seen: GateLooked | None = None

    @property
    def still(self) -> bool:
        """The wave proceeds on a look that found it already recorded healthy: nothing is measured."""
        return bool(self.seen and self.seen.still)


@dataclass(frozen=True)
class GateEnd:
    """The gate decided ``verdict`` (None: a newer revision took over while it waited); ``stopped``:
    the agent was asked to stop."""

    verdict: GateVerdict | None
    stopped: bool = False


GateMoved = tuple[GateWait, tuple[Effect, ...], GateEnd | None]


def open_gate(wave: Wave, revision: str, *, whole: bool = True, analysed: bool = True) -> GateMoved:
    """The gate of ``wave`` before its first look."""
    return GateWait(wave, revision, whole, analysed), (CheckGate(wave, whole),), None


def gate_step(gate: GateWait, fact: GateFact) -> GateMoved:
    """The gate after the engine observed ``fact`` (the answer to the effect it asked last)."""
    match gate.stage, fact:
        case GateStage.LOOKING, GateLooked():
            return _looked(replace(gate, entered=fact.now if gate.entered is None else gate.entered), fact)
        case GateStage.ANALYSING, AnalysisLooked() if gate.verdict and gate.seen:
            return _measured(gate, analysed(gate.verdict, fact.found, rollback=gate.seen.rollback))
        case GateStage.BACKGROUND, AnalysisLooked() if gate.verdict and gate.seen:
            return _decided(gate, background(gate.verdict, fact, rollback=gate.seen.rollback))
        case GateStage.SLEEPING, Slept(stopped) if gate.verdict:
            if stopped:
                return gate, (), GateEnd(gate.verdict, stopped=True)
            again = CheckGate(gate.wave, gate.whole, again=True)
            return replace(gate, stage=GateStage.LOOKING), (again,), None
    raise FactOutOfTurn(f"the gate of {gate.wave.name} {gate.stage} is not answered by {type(fact).__name__}")


def _looked(gate: GateWait, seen: GateLooked) -> GateMoved:
    wave, gate = gate.wave, replace(gate, seen=seen, verdict=None)
    if seen.newer:
        return gate, (), GateEnd(None)
    if seen.abort is not None:
        event = PassEvent(Step.ROLLOUT_ABORTED, wave.name, revision=gate.revision, reason=seen.abort.reason)
        return gate, (Tell(event),), GateEnd(seen.abort, seen.stop)
    progress = {p.cluster: p for p in seen.progress}
    verdict = judge_wave(wave, progress, seen.now, rollback=seen.rollback)
    if verdict.decision is Decision.WAIT and seen.elsewhere:
        # A cluster a person holds (or its window) cannot change until that ends: no wait.
        held = seen.held
        late = seen.now - (gate.entered or seen.now) >= wave.gate.health_timeout
        lines = (*held.suspended, *held.pinned, *held.closed) if held else seen.elsewhere
        reason = "waiting for " + "; ".join(lines)
        verdict = replace(verdict, reason=reason)
        if held or late:
            waits = held.waiting if held else None
            told = PassEvent(Step.GATE_WAIT, wave.name, revision=gate.revision, reason=reason, waiting=waits)
            timed = "" if held else f" (for {wave.gate.health_timeout:g}s)"
            ended = replace(verdict, reason=f"{reason}{timed}", waiting=waits)
            return gate, (Tell(told),), GateEnd(ended, seen.stop)
    if verdict.decision is not Decision.PROCEED:
        gate = replace(gate, seen=replace(seen, still=False))
    measured = gate.analysed and wave.gate.analysis.metrics and not gate.still
    if verdict.decision is Decision.PROCEED and measured:
        return replace(gate, stage=GateStage.ANALYSING, verdict=verdict), (Analyse(wave),), None
    return _measured(gate, verdict)


def _measured(gate: GateWait, verdict: GateVerdict) -> GateMoved:
    """``verdict`` once the wave's own analysis looked (or needed not): a wave rolling out that waits
    or proceeds is then measured by the background analysis."""
    if gate.whole and not gate.still and verdict.decision in {Decision.WAIT, Decision.PROCEED}:
        looking = replace(gate, stage=GateStage.BACKGROUND, verdict=verdict)
        return looking, (Analyse(gate.wave, background=True),), None
    return _decided(gate, verdict)


def _decided(gate: GateWait, verdict: GateVerdict) -> GateMoved:
    """The look's decision told; a wait sleeps (at most the engine's poll), anything else ends."""
    seen = gate.seen
    assert seen is not None
    step = Step.GATE_STILL_HEALTHY if gate.still else _GATE_STEPS[verdict.decision]
    told = Tell(
        PassEvent(
            step,
            gate.wave.name,
            revision=gate.revision,
            reason=verdict.reason,
            waiting=verdict.waiting,
            analysis=verdict.analysis,
            clusters=verdict.failed,
        )
    )
    if verdict.decision is not Decision.WAIT:
        return gate, (told,), GateEnd(verdict, seen.stop)
    sleeping = replace(gate, stage=GateStage.SLEEPING, verdict=verdict)
    return sleeping, (told, Sleep(min(verdict.wait, seen.poll))), None


def analysed(healthy: GateVerdict, found: WaveAnalysisVerdict | None, *, rollback: bool) -> GateVerdict:
    """The verdict on a healthy, baked wave once its analysis looked: wait for the next measurement,
    proceed, fail (halt or roll back) or halt for a person when it is inconclusive (``syncer retry``
    measures again)."""
    if found is None:
        return healthy
    if found.verdict is AnalysisVerdict.RUNNING:
        return GateVerdict(Decision.WAIT, found.reason, found.wait, waiting=Waiting.ANALYSIS)
    if found.verdict is AnalysisVerdict.SUCCESSFUL:
        return replace(healthy, reason=f"{healthy.reason}; {found.reason}", analysis=found.verdict)
    failed = tuple(name for name, _ in found.clusters)
    if found.verdict is AnalysisVerdict.FAILED:
        decision = Decision.ROLLBACK if rollback else Decision.HALT
        reason = found.reason
    else:
        decision, reason = Decision.HALT, f"{found.reason}; waiting for a person: syncer retry measures again"
    return GateVerdict(decision, reason, failed=failed, reasons=found.clusters, analysis=found.verdict)


def background(verdict: GateVerdict, looked: AnalysisLooked, *, rollback: bool) -> GateVerdict:
    """``verdict`` once the rollout's background analysis looked at every cluster on the revision
    (``looked.on``): unchanged while it runs or passed (a waiting gate asks again by the next
    measurement due), else the wave fails with every cluster on the revision (``across``): rolled
    back or halted like a failed wave analysis, or halted for a person when it is inconclusive."""
    found, on = looked.found, looked.on
    if found is None or found.verdict is AnalysisVerdict.SUCCESSFUL:
        return verdict
    if found.verdict is AnalysisVerdict.RUNNING:
        waits = verdict.wait if verdict.decision is Decision.PROCEED else min(verdict.wait, found.wait)
        return replace(verdict, wait=waits)
    failed = tuple(name for name, _ in found.clusters)
    reason = f"background analysis: {found.reason}"
    decision = Decision.HALT
    if found.verdict is AnalysisVerdict.FAILED:
        decision = Decision.ROLLBACK if rollback else Decision.HALT
    else:
        reason = f"{reason}; waiting for a person: syncer retry measures again"
    # Every cluster on the revision records the failure, so that none takes the revision again
    # until git changes or a person retries it.
    where = f"background analysis {found.verdict} on {', '.join(failed)}"
    reasons = (*found.clusters, *((name, where) for name in on if name not in failed))
    return GateVerdict(decision, reason, failed=failed, reasons=reasons, analysis=found.verdict, across=on)
