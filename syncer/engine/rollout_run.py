"""The engine side of the rollout machine (``syncer.rollout.machine``): each effect it asks for run
over the rollout's parts (``RolloutParts``: the clusters' records, the applier, the health gate, and
the functions ``failed_wave`` and ``manual_gate``), answered with the fact observed, until the
machine ends the rollout. The reports (``WaveReport``, ``RolloutReport``) are kept here: they hold
what was applied and told, which the machine never sees.
"""

from __future__ import annotations

from contextlib import ExitStack
from dataclasses import replace

from syncer.domain.changeset import ChangeSet
from syncer.domain.objects import DesiredFleet
from syncer.domain.sync_state import SyncPhase
from syncer.engine.failed_wave import FleetsOf, roll_back_wave
from syncer.engine.failures import refusals
from syncer.engine.manual_gate import abort_wave, hold_for_promotion
from syncer.engine.rollout_gate import RolloutParts
from syncer.engine.rollout_model import RolloutReport, WaveReport
from syncer.errors import FactOutOfTurn, FencedOut
from syncer.rollout import GateVerdict, Wave, judge_abort
from syncer.rollout.machine import start, step
from syncer.rollout.moves import (
    AbortBack,
    Analyse,
    Applied,
    Apply,
    AtGate,
    CheckGate,
    Effect,
    End,
    Fact,
    LeaseLost,
    Look,
    LookAtGate,
    Looked,
    Observe,
    PassRecorded,
    RecordPassed,
    Report,
    RollBack,
    Sleep,
    Tell,
    WaveObserved,
    WentBack,
)
from syncer.rollout.rollback_targets import wave_passed
from syncer.tracing import current, span

__all__ = ["run_rollout"]


def run_rollout(
    parts: RolloutParts, fleet: DesiredFleet, waves: tuple[Wave, ...], fleets: FleetsOf
) -> RolloutReport:
    """Roll ``fleet`` out over ``waves``: the machine's effects run in order, each asking one fact,
    until it ends. Each wave is a span (``syncer.wave``) from its look to the next, and its gate one
    (``syncer.health.wait``) from its first look to its decision."""
    run = _EffectRunner(parts, fleet, fleets)
    state, effects = start(fleet.revision, waves)
    try:
        while True:
            fact: Fact | None = None
            for effect in effects:
                if isinstance(effect, End):
                    return run.report(effect)
                try:
                    fact = run.run(effect) or fact
                except FencedOut as err:  # this replica lost the Lease: nothing more is written
                    fact = LeaseLost(str(err))
                    break
            if fact is None:
                raise FactOutOfTurn("the rollout machine asked for nothing and did not end")
            state, effects = step(state, fact)
    finally:
        run.gate_span.close()
        run.spans.close()


class _EffectRunner:
    """Runs the machine's effects on ``fleet``'s rollout; keeps the reports and the change sets of
    the wave in hand."""

    def __init__(self, parts: RolloutParts, fleet: DesiredFleet, fleets: FleetsOf) -> None:
        self.parts = parts
        self.records = parts.records
        self.fleet = fleet
        self.fleets = fleets
        self.reports: list[WaveReport] = []
        self.change_sets: tuple[ChangeSet, ...] = ()
        self.spans = ExitStack()
        self.gate_span = ExitStack()

    def run(self, effect: Effect) -> Fact | None:
        if not isinstance(effect, CheckGate | Analyse | Sleep | Tell):
            self.gate_span.close()  # the gate decided
        if isinstance(effect, CheckGate) and not effect.again:
            self.gate_span.enter_context(span("syncer.health.wait"))
        match effect:
            case Tell() | CheckGate() | Analyse() | Sleep():
                return self.parts.gate.run(effect, self.fleet)
            case Report(wave, verdict):
                self.reports.append(self._judged(wave, verdict))
                current().set("syncer.result", verdict.decision.value)
                return None
            case Look():
                return self._look(effect)
            case LookAtGate(wave):
                return self._at_gate(wave)
            case Apply(wave):
                return self._apply(wave)
            case Observe(wave, before_wait):
                report = self.parts.gate.observe(wave, self.fleet)
                self.change_sets = report.change_sets
                self.reports.extend(() if before_wait else (report,))
                return WaveObserved(any(cs.writes for cs in report.change_sets))
            case RecordPassed(_, clusters, revision):
                for name in filter(self.records.owns, clusters):
                    state = self.records.states[name]
                    self.records.save(name, replace(state, phase=SyncPhase.HEALTHY, last_good=revision))
                return PassRecorded()
            case RollBack():
                return self._roll_back(effect)
            case AbortBack(wave, verdict):
                back = abort_wave(self.parts, wave, self.fleet, self.fleets, (tuple(self.reports), verdict))
                self.reports = list(back.waves)
                return WentBack(back.outcome, back.message)
        raise FactOutOfTurn(f"no way to run {effect!r}")

    def report(self, end: End) -> RolloutReport:
        """The rollout's report at its ``end``; the wave the end names closes the reports."""
        if end.wave is not None and end.decision is not None:
            closing = WaveReport(
                end.wave.name, end.wave.clusters, end.decision, end.message, self.change_sets
            )
            self.reports.append(closing)
        return RolloutReport(self.fleet.revision, end.outcome, tuple(self.reports), end.message)

    def _look(self, look: Look) -> Looked:
        wave, records, revision = look.wave, self.records, self.fleet.revision
        self.spans.close()
        self.spans.enter_context(span("syncer.wave", {"syncer.wave": wave.name, "syncer.revision": revision}))
        self.change_sets = ()
        if records.stop.is_set():
            return Looked(stop=True)
        if look.ask_newer and records.newer():
            return Looked(newer=True)
        abort = judge_abort(wave, records.states, revision)
        if wave_passed(wave.clusters, records.states, revision):
            return Looked(passed=True, abort=abort)
        reachable = tuple(c for c in wave.clusters if c not in records.unreachable)
        manager = records.options.apply.field_manager
        refused = refusals(records.clients, reachable, self.fleet, records.states, manager)
        return Looked(abort=abort, refused="; ".join(r.reason for r in refused))

    def _at_gate(self, wave: Wave) -> AtGate:
        awaits = hold_for_promotion(self.parts, wave, self.fleet)
        if awaits:
            return AtGate(awaits=awaits)
        held = self.parts.applier.held_now(wave.clusters, self.fleet, wave.name)
        if held:
            return AtGate(held=held)
        unreachable, passed = self._unusable(wave)
        states, revision = self.records.states, self.fleet.revision
        fresh = not any(states[c].revision == revision for c in self.fleet.clusters if c in states)
        return AtGate(unreachable=unreachable, reachable_passed=passed, fresh=fresh)

    def _apply(self, wave: Wave) -> Applied:
        self.change_sets = self.parts.applier.apply_wave(wave, self.fleet)
        unreachable, passed = self._unusable(wave)  # also: suspended while applying
        return Applied(any(cs.writes for cs in self.change_sets), unreachable, passed)

    def _unusable(self, wave: Wave) -> tuple[tuple[tuple[str, str], ...], bool]:
        """The clusters of ``wave`` that cannot be used now, each with why, and whether the others
        passed before."""
        unusable = self.records.unreachable
        blocked = tuple((c, unusable[c]) for c in wave.clusters if c in unusable)
        reachable = tuple(c for c in wave.clusters if c not in unusable)
        return blocked, bool(blocked) and wave_passed(reachable, self.records.states, self.fleet.revision)

    def _judged(self, wave: Wave, verdict: GateVerdict) -> WaveReport:
        """The report of ``wave`` as its gate judged it."""
        decision, reason = verdict.decision, verdict.reason
        return WaveReport(wave.name, wave.clusters, decision, reason, self.change_sets, verdict.reasons)

    def _roll_back(self, back: RollBack) -> WentBack:
        wave, verdict = back.wave, back.verdict
        reports = tuple(self.reports)
        if not back.reported:  # the part of a wave that answers failed: its report says which
            reports += (self._judged(wave, verdict),)
        report = roll_back_wave(self.parts, wave, self.fleet, self.fleets, (verdict.decision, reports))
        self.reports = list(report.waves)
        return WentBack(report.outcome, report.message)
