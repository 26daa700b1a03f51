"""``FleetRollout``: one revision rolled out across the fleet in waves, gated on health, halting and
rolling each failed cluster back to the revision it last ran healthy; and drift repair of the
clusters already on it (``FleetRollout.heal``).

The clusters' sync states are read once (``read_states``); from then on the rollout keeps them
current as it writes them. Every decision is recorded in the clusters themselves (their sync-state
ConfigMaps) before the next step, so a rollout interrupted at any point (SIGTERM, a crash, a lost
leader lease) resumes from the clusters: finished waves are not redone, applied clusters are not
re-applied, and health timeouts and bake times count from the times recorded there.

A cluster's fault stays that cluster's: one that cannot be read is left out and its wave applies to
the others, then waits for it; a wave that passed is only watched (``rollout_gate``). The parts,
composed here, none inheriting from another: ``rollout_state`` (the clusters' records),
``rollout_apply`` (applies and repairs), ``rollout_gate`` (health); and functions over them:
``failed_wave`` (a failed wave's failures and rollback), ``manual_gate`` (a person's promotion and
abort).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Collection, Mapping
from dataclasses import replace

from syncer.domain.changeset import ChangeSet
from syncer.domain.objects import DesiredFleet
from syncer.domain.progress import Listener, PassEvent, Step
from syncer.domain.sync_state import ClusterSyncState
from syncer.engine.failed_wave import FleetsOf, roll_back_wave
from syncer.engine.failures import refusals
from syncer.engine.manual_gate import abort_wave, stop_at_gate
from syncer.engine.rollout_apply import WaveApplier
from syncer.engine.rollout_gate import HealthGate, RolloutParts, Superseded
from syncer.engine.rollout_model import (
    RolloutHooks,
    RolloutOptions,
    RolloutOutcome,
    RolloutReport,
    WaveReport,
)
from syncer.engine.rollout_state import RolloutStates
from syncer.errors import KubeError
from syncer.kube import KubeApi
from syncer.rollout import Decision, GateVerdict, Wave, is_done, judge_abort, plan_waves
from syncer.rollout.pins import restricted
from syncer.rollout.rollback_targets import wave_passed
from syncer.rollout.waves import for_going_back, waves_without
from syncer.status.state_store import LoadedState
from syncer.tracing import current, each

__all__ = ["FleetRollout"]


class FleetRollout:
    """Rolls revisions out to the clusters it has clients for, and repairs their drift: composed of
    the clusters' records (``RolloutStates``), the applier (``WaveApplier``) and the health gate
    (``HealthGate``), built here from what the rollout asks outside itself (``hooks``)."""

    def __init__(
        self,
        clients: Mapping[str, KubeApi],
        options: RolloutOptions = RolloutOptions(),
        *,
        stop: threading.Event | None = None,
        clock: Callable[[], float] = time.time,
        listener: Listener | None = None,
        hooks: RolloutHooks,
    ) -> None:
        self.records = RolloutStates(clients, options, stop=stop, clock=clock, listener=listener, hooks=hooks)
        self.applier = WaveApplier(self.records)
        self.gate = HealthGate(self.records, self.applier, hooks.query)
        self.parts = RolloutParts(self.records, self.applier, self.gate)

    @property
    def states(self) -> dict[str, ClusterSyncState]:
        """Each read cluster's state, kept current as the rollout writes it."""
        return self.records.states

    @property
    def unreachable(self) -> dict[str, str]:
        """The clusters that cannot be used this pass, each with why."""
        return self.records.unreachable

    @property
    def unsaved(self) -> dict[str, str]:
        """The clusters whose latest state could not be written, each with the error."""
        return self.records.unsaved

    def read_states(
        self,
        preloaded: Mapping[str, LoadedState] | None = None,
        failed: Mapping[str, KubeError] | None = None,
    ) -> dict[str, ClusterSyncState]:
        """Every cluster's stored state, read once per pass (``RolloutStates.read_states``)."""
        return self.records.read_states(preloaded, failed)

    # -- the rollout ------------------------------------------------------------------------------

    def sync(self, fleet: DesiredFleet, last_good: DesiredFleet | None = None) -> RolloutReport:
        """Read the clusters' states, then roll ``fleet`` out (see ``roll_out``); ``last_good`` is the
        one older revision a failed wave's clusters may go back to (each only if it ran it healthy)."""
        self.records.read_states()

        def fleets(revision: str) -> DesiredFleet | None:
            return last_good if last_good is not None and last_good.revision == revision else None

        return self.roll_out(fleet, fleets)

    def roll_out(
        self,
        fleet: DesiredFleet,
        fleets: FleetsOf | None = None,
        left_out: Collection[str] = (),
        going_back: bool = False,
    ) -> RolloutReport:
        """Roll ``fleet`` out wave by wave from the states read last; a failed wave halts, or rolls
        each of its clusters back to the revision it last ran healthy (``fleets`` gives the desired
        fleet of a revision, None when it cannot). The clusters ``left_out`` (a person pinned them
        to another revision) get nothing, but the waves are planned over the whole of ``fleet``, so
        that leaving a cluster out never moves another one to an earlier wave (``waves_without``).
        ``going_back``: a person's rollback (``syncer rollback``): its waves wait for health alone
        unless the policy asks for checks (``for_going_back``)."""
        labels = {name: c.labels for name, c in fleet.clusters.items()}
        waves = waves_without(plan_waves(labels, self.records.options.rollout), left_out)
        if going_back:
            waves = tuple(for_going_back(w, self.records.options.rollout.rollback_checks) for w in waves)
        fleet = restricted(fleet, set(fleet.clusters) - set(left_out))
        missing = sorted(set(fleet.clusters) - set(self.records.clients) - set(self.records.unreachable))
        if missing:
            return RolloutReport(
                fleet.revision, RolloutOutcome.HALTED, message=f"no connection for {', '.join(missing)}"
            )
        unread = sorted(set(fleet.clusters) - set(self.records.states) - set(self.records.unreachable))
        if unread:
            raise ValueError(f"roll_out before read_states: no state for {', '.join(unread)}")
        report = self._roll_out(fleet, waves, fleets or (lambda _: None))
        return replace(report, unsaved=tuple(sorted(self.records.unsaved.items())))

    def _roll_out(self, fleet: DesiredFleet, waves: tuple[Wave, ...], fleets: FleetsOf) -> RolloutReport:
        reports: list[WaveReport] = []
        touched = judged = False  # judged: the last wave went through its gate in this pass
        aborted: GateVerdict | None = None  # a person's abort that sent a passed wave back
        for wave in each(
            waves, "syncer.wave", lambda w: {"syncer.wave": w.name, "syncer.revision": fleet.revision}
        ):
            if self.records.stop.is_set():
                return RolloutReport(
                    fleet.revision, RolloutOutcome.INTERRUPTED, tuple(reports), "stopped between waves"
                )
            if touched and self.records.newer():
                message = "a newer verified revision takes over at this wave boundary"
                return RolloutReport(fleet.revision, RolloutOutcome.SUPERSEDED, tuple(reports), message)
            if wave_passed(wave.clusters, self.records.states, fleet.revision):
                wrote, aborted = self._pass_over(wave, fleet, fleets, reports, aborted)
                touched = touched or wrote
                judged = False
                continue
            reachable = tuple(c for c in wave.clusters if c not in self.records.unreachable)
            refused = refusals(
                self.records.clients,
                reachable,
                fleet,
                self.records.states,
                self.records.options.apply.field_manager,
            )
            if refused:
                reason = "; ".join(r.reason for r in refused)
                reports.append(WaveReport(wave.name, wave.clusters, Decision.HALT, reason))
                return RolloutReport(fleet.revision, RolloutOutcome.HALTED, tuple(reports), reason)
            stopped = stop_at_gate(self.parts, wave, fleet, fleets, (tuple(reports), aborted))
            if stopped is not None:  # an abort, a manual gate, a suspension or a closed window
                return stopped
            if len(reachable) < len(wave.clusters) and wave_passed(
                reachable, self.records.states, fleet.revision
            ):
                # The ones that answer passed before: while the wave waits they are watched, not re-judged.
                observed = self.gate.observe(replace(wave, clusters=reachable), fleet)
                return self._wait_for(wave, fleet, fleets, (tuple(reports), observed.change_sets))
            self._tell_started(wave.name, fleet)
            change_sets = self.applier.apply_wave(wave, fleet)
            touched = touched or any(cs.writes for cs in change_sets)
            if any(c in self.records.unreachable for c in wave.clusters):  # also: suspended while applying
                return self._wait_for(wave, fleet, fleets, (tuple(reports), change_sets))
            try:
                verdict = self.gate.decide(wave, fleet, rolling_out=True)
            except Superseded:
                message = "a newer verified revision takes over while the wave waits"
                return RolloutReport(fleet.revision, RolloutOutcome.SUPERSEDED, tuple(reports), message)
            reports.append(
                WaveReport(
                    wave.name, wave.clusters, verdict.decision, verdict.reason, change_sets, verdict.reasons
                )
            )
            current().set("syncer.result", verdict.decision.value)
            if verdict.decision is Decision.WAIT:
                if self.records.stop.is_set():
                    message = "stopped while waiting"
                    return RolloutReport(fleet.revision, RolloutOutcome.INTERRUPTED, tuple(reports), message)
                return RolloutReport(fleet.revision, RolloutOutcome.WAITING, tuple(reports), verdict.reason)
            if verdict.decision is not Decision.PROCEED:
                # A background analysis' failure fails every cluster on the revision with the wave.
                failing = replace(wave, clusters=verdict.across) if verdict.across else wave
                return roll_back_wave(self.parts, failing, fleet, fleets, (verdict.decision, tuple(reports)))
            judged = True
        self._tell_finished(fleet, len(waves), judged)
        outcome = RolloutOutcome.APPLIED if touched else RolloutOutcome.UNCHANGED
        return RolloutReport(fleet.revision, outcome, tuple(reports))

    def _pass_over(
        self,
        wave: Wave,
        fleet: DesiredFleet,
        fleets: FleetsOf,
        reports: list[WaveReport],
        aborted: GateVerdict | None,
    ) -> tuple[bool, GateVerdict | None]:
        """A wave that passed on ``fleet``'s revision, its report added to ``reports``: whether it
        wrote (drift repaired), and the abort seen so far. When a person aborted the revision it goes
        back too, each cluster to the revision it ran healthy before (``abort_wave``), and no later
        wave takes the revision (``stop_at_gate``); otherwise its clusters are looked at: later
        unhealthiness is degradation, never a failure."""
        found = judge_abort(wave, self.records.states, fleet.revision)
        if found is not None:
            back = abort_wave(self.parts, wave, fleet, fleets, (tuple(reports), found))
            reports.extend(back.waves[len(reports) :])
            return False, found
        reports.append(self.gate.observe(wave, fleet))
        return any(cs.writes for cs in reports[-1].change_sets), aborted

    def _tell_started(self, wave: str, fleet: DesiredFleet) -> None:
        """``rollout-started`` before a wave applies, when no cluster records the revision yet."""
        if not any(
            self.records.states[c].revision == fleet.revision
            for c in fleet.clusters
            if c in self.records.states
        ):
            self.records.listener(PassEvent(Step.ROLLOUT_STARTED, wave, revision=fleet.revision))

    def _tell_finished(self, fleet: DesiredFleet, waves: int, judged: bool) -> None:
        """``rollout-finished`` when the last wave passed its gate in this pass (``judged``)."""
        if judged:
            done = f"{waves} wave(s) healthy"
            self.records.listener(PassEvent(Step.ROLLOUT_FINISHED, revision=fleet.revision, reason=done))

    def _wait_for(
        self,
        wave: Wave,
        fleet: DesiredFleet,
        fleets: FleetsOf,
        done: tuple[tuple[WaveReport, ...], tuple[ChangeSet, ...]],
    ) -> RolloutReport:
        """A wave with clusters that cannot be used: the ones that answer are judged as a wave of their
        own (and fail or roll back as one) unless they passed before, then the wave waits for the
        rest, with the reason."""
        reports, change_sets = done
        blocked = [c for c in wave.clusters if c in self.records.unreachable]
        reachable = tuple(c for c in wave.clusters if c not in self.records.unreachable)
        part = replace(wave, clusters=reachable)
        if reachable and not wave_passed(reachable, self.records.states, fleet.revision):
            verdict = self.gate.decide(part, fleet)
            if verdict.decision in {Decision.HALT, Decision.ROLLBACK}:
                failed = WaveReport(
                    wave.name, reachable, verdict.decision, verdict.reason, change_sets, verdict.reasons
                )
                return roll_back_wave(self.parts, part, fleet, fleets, (verdict.decision, (*reports, failed)))
        reason = "waiting for " + "; ".join(f"{c}: {self.records.unreachable[c]}" for c in blocked)
        self.records.listener(PassEvent(Step.GATE_WAIT, wave.name, revision=fleet.revision, reason=reason))
        waiting = WaveReport(wave.name, wave.clusters, Decision.WAIT, reason, change_sets)
        return RolloutReport(fleet.revision, RolloutOutcome.WAITING, (*reports, waiting), reason)

    # -- drift repair -----------------------------------------------------------------------------

    def heal(self, fleet: DesiredFleet, *, read: bool = True) -> tuple[ChangeSet, ...]:
        """The drift job: every cluster that finished ``fleet``'s revision goes through
        ``repair_drift`` (the one path of drift repair, which asks whether the cluster may be written
        now). Clusters still rolling out, and clusters whose state cannot be read, are left out.
        The states are read first (``read``; else the ones read last are used). Returns the change
        sets that wrote or failed."""
        states = self.records.read_states() if read else dict(self.records.states)
        repaired: list[ChangeSet] = []
        for name in fleet.clusters:
            state = states.get(name)
            if state is None or not is_done(state, fleet.revision):
                continue
            result = self.applier.repair_drift(fleet, name)
            if result is not None:
                repaired.append(result)
        return tuple(repaired)
