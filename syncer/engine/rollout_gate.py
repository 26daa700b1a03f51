"""The health part of a rollout: the gate of a wave being rolled out (each cluster's health checked
and recorded until the gate proceeds, halts or rolls back) and the watch over a wave that has passed.

A wave whose clusters all recorded the revision healthy has passed: its gate is not judged again.
Later unhealthiness there is degradation, not a failed rollout: the cluster's health is recorded and
reported (``cluster-degraded`` / ``cluster-recovered``) and what drifted is re-applied, but the
revision is never marked bad for it and nothing halts.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from syncer.domain.analysis import AnalysisVerdict
from syncer.domain.changeset import ChangeSet
from syncer.domain.health import Health, ObjectHealth
from syncer.domain.objects import DesiredFleet
from syncer.domain.progress import PassEvent, Step, Waiting
from syncer.domain.sync_state import SyncPhase
from syncer.engine.analysis_gate import AnalysisGate, QueryFn
from syncer.engine.live import live_health
from syncer.engine.rollout_apply import WaveApplier
from syncer.engine.rollout_model import WaveReport
from syncer.engine.rollout_state import RolloutStates
from syncer.errors import KubeError
from syncer.rollout import (
    ClusterProgress,
    Decision,
    GateVerdict,
    Wave,
    failed_apply,
    judge_abort,
    judge_wave,
)
from syncer.rollout.recorded import recorded_progress
from syncer.tracing import traced


class Superseded(Exception):
    """A newer verified revision takes over while a wave waits (a sharded replica's gate)."""


_GATE_STEPS = {
    Decision.WAIT: Step.GATE_WAIT,
    Decision.PROCEED: Step.GATE_PROCEED,
    Decision.HALT: Step.GATE_HALT,
    Decision.ROLLBACK: Step.GATE_ROLLBACK,
}


class HealthGate:
    """Judges and watches the health of waves (see the module docstring): the clusters' ``records``
    are read and written, the ``applier`` applies clusters a sharded replica gains while it waits,
    and ``query`` asks Prometheus for a wave's analysis."""

    def __init__(self, records: RolloutStates, applier: WaveApplier, query: QueryFn) -> None:
        self.records = records
        self.applier = applier
        self.analysis = AnalysisGate(query, records.clock, records.listener)

    def _health(self, name: str, fleet: DesiredFleet) -> tuple[Health, str]:
        """A cluster's health now (told to the listener as it is judged, for the health gauge)."""
        objects: tuple[ObjectHealth, ...] = ()
        try:
            health = live_health(self.records.clients[name], fleet.clusters[name])
            verdict, detail, objects = health.health, health.summary(), health.objects
        except KubeError as err:
            verdict, detail = Health.PROGRESSING, f"health check failed: {err}"
        self.records.listener(
            PassEvent(
                Step.HEALTH_CHECKED, cluster=name, reason=detail, health=verdict, objects_health=objects
            )
        )
        return verdict, detail

    def observe(self, wave: Wave, fleet: DesiredFleet) -> WaveReport:
        """Watch a wave that passed: re-apply what drifted on its clusters, record their health, and
        report a cluster that turned unhealthy (degraded) or healthy again."""
        degraded = []
        repairs: list[ChangeSet] = []
        for name in wave.clusters:
            if name in self.records.unreachable or not self.records.owns(name):
                continue
            # What the cluster records of its window stays current, so that status never shows a
            # window that has since opened or closed.
            self.applier.closed_windows((name,), fleet, pending_only=False, changes_only=True)
            repaired = self.applier.repair_drift(fleet, name, wave.name)
            repairs.extend([repaired] if repaired is not None else [])
            state = self.records.states[name]
            verdict, detail = self._health(name, fleet)
            if verdict is not Health.HEALTHY:
                degraded.append(f"{name}: {verdict}: {detail}")
            if (state.health == str(Health.HEALTHY)) != (verdict is Health.HEALTHY):
                step = Step.CLUSTER_RECOVERED if verdict is Health.HEALTHY else Step.CLUSTER_DEGRADED
                reason = detail if verdict is not Health.HEALTHY else "healthy again"
                self.records.listener(
                    PassEvent(step, wave.name, name, fleet.revision, reason=reason, health=verdict)
                )
            since = (state.healthy_since or self.records.clock()) if verdict is Health.HEALTHY else 0.0
            self.records.save(
                name, replace(state, health=str(verdict), health_detail=detail, healthy_since=since)
            )
        reason = "passed; degraded since: " + "; ".join(degraded) if degraded else "passed"
        return WaveReport(wave.name, wave.clusters, Decision.PROCEED, reason, tuple(repairs))

    def _recorded(self, name: str, revision: str) -> ClusterProgress:
        """A cluster another replica owns: its progress as its owner last recorded it."""
        return recorded_progress(self.records.reload(name), revision)

    def _progress(self, wave: Wave, fleet: DesiredFleet, revision: str) -> dict[str, ClusterProgress]:
        progress = {}
        for name in wave.clusters:
            if name in self.records.unreachable:
                progress[name] = ClusterProgress(name)  # left out meanwhile: waited for, with why
                continue
            if not self.records.owns(name):
                progress[name] = self._recorded(name, revision)
                continue
            state = self.records.states[name]
            failed = failed_apply(state, revision)
            if failed is not None:
                progress[name] = failed
                continue
            verdict, detail = self._health(name, fleet)
            now = self.records.clock()
            since = (state.healthy_since or now) if verdict is Health.HEALTHY else 0.0
            self.records.save(
                name, replace(state, health=str(verdict), health_detail=detail, healthy_since=since)
            )
            progress[name] = ClusterProgress(
                name, state.applied_at or None, "", verdict, since or None, detail
            )
        return progress

    @traced("syncer.health.wait")
    def decide(
        self,
        wave: Wave,
        fleet: DesiredFleet,
        rollback: bool | None = None,
        *,
        rolling_out: bool = False,
        analysed: bool = True,
    ) -> GateVerdict:
        """Check the wave's health until the gate decides (or the agent is asked to stop).

        A sharded replica also waits for clusters other replicas own; while it waits it applies the
        clusters it gains, and (``rolling_out``) a newer verified revision takes over at once
        (``Superseded``); a cluster its owner does not put on the revision within the wave's health
        timeout ends the wait with the reason (the next pass looks again), and one that may not be
        changed now (``held_now``: a person's suspension or pin, its window) ends it at once, saying
        so. A wave healthy and baked is then judged by its analysis (``analysed``; a rollback's gate
        is not). A wave that proceeds is not recorded passed here: the rollout machine's
        ``RecordPassed`` writes that (``rollout_run``), and a rollback records its own end."""
        allowed = self.records.options.rollout.rollback if rollback is None else rollback
        entered = self.records.clock()
        waited = False  # the person's acts read with the states are current until the gate waits
        while True:
            if self.records.sharded:
                self.applier.apply_wave(wave, fleet, taking_over=True)  # clusters gained meanwhile
                if rolling_out and self.records.newer():
                    raise Superseded
            progress = self._progress(wave, fleet, fleet.revision)
            aborted = self._aborted(wave, fleet.revision, learn=waited) if rolling_out else None
            if aborted is not None:
                return aborted
            waited = True
            verdict = judge_wave(wave, progress, self.records.clock(), rollback=allowed)
            elsewhere = self._elsewhere(wave, fleet.revision)
            if verdict.decision is Decision.WAIT and elsewhere:
                # A cluster a person holds (or its window) cannot change until that ends: no wait.
                held = self.applier.held_now(self._not_on(wave, fleet.revision), fleet, wave.name)
                late = self.records.clock() - entered >= wave.gate.health_timeout
                lines = (*held.suspended, *held.pinned, *held.closed) if held else elsewhere
                reason = "waiting for " + "; ".join(lines)
                verdict = replace(verdict, reason=reason, decision=Decision.WAIT)
                if held or late:
                    waits = held.waiting if held else None
                    self.records.listener(
                        PassEvent(
                            Step.GATE_WAIT, wave.name, revision=fleet.revision, reason=reason, waiting=waits
                        )
                    )
                    timed = "" if held else f" (for {wave.gate.health_timeout:g}s)"
                    return replace(verdict, reason=f"{reason}{timed}", waiting=waits)
            still = verdict.decision is Decision.PROCEED and self._still_healthy(wave, fleet.revision)
            if verdict.decision is Decision.PROCEED and analysed and wave.gate.analysis.metrics and not still:
                verdict = self._analysed(wave, fleet, verdict, allowed)
            if rolling_out and not still and verdict.decision in {Decision.WAIT, Decision.PROCEED}:
                verdict = self._background(wave, fleet, verdict, allowed)
            step = _GATE_STEPS[verdict.decision]
            if still:
                step = Step.GATE_STILL_HEALTHY
            self.records.listener(
                PassEvent(
                    step,
                    wave.name,
                    revision=fleet.revision,
                    reason=verdict.reason,
                    waiting=verdict.waiting,
                    analysis=verdict.analysis,
                    clusters=verdict.failed,
                )
            )
            if verdict.decision is not Decision.WAIT or self.records.stop.wait(
                min(verdict.wait, self.records.options.health_poll)
            ):
                return verdict

    def _aborted(self, wave: Wave, revision: str, *, learn: bool) -> GateVerdict | None:
        """The end of ``wave`` when a person aborted ``revision``; with ``learn`` (the gate waited
        since the states were read) the acts are read again first: a wave that bakes writes nothing
        that would learn them."""
        for name in wave.clusters if learn else ():
            if name in self.records.states and name not in self.records.unreachable:
                self.records.learn_acts(name)
        verdict = judge_abort(wave, self.records.states, revision)
        if verdict is not None:
            why = verdict.reason
            self.records.listener(PassEvent(Step.ROLLOUT_ABORTED, wave.name, revision=revision, reason=why))
        return verdict

    def _analysed(self, wave: Wave, fleet: DesiredFleet, healthy: GateVerdict, rollback: bool) -> GateVerdict:
        """The verdict on a healthy, baked wave once its analysis looked (``engine.analysis_gate``):
        wait for the next measurement, proceed, fail (halt or roll back) or halt for a person when it
        is inconclusive (``syncer retry`` measures again). The counts are recorded first."""
        looked = self.analysis.look(wave, fleet, self.records.states, self.records.owns)
        for name, state in looked.states.items():
            self.records.save(name, state)
        found = looked.verdict
        if found.verdict is AnalysisVerdict.RUNNING:
            return GateVerdict(Decision.WAIT, found.reason, found.wait, waiting=Waiting.ANALYSIS)
        if found.verdict is AnalysisVerdict.SUCCESSFUL:
            return replace(healthy, reason=f"{healthy.reason}; {found.reason}", analysis=found.verdict)
        failed = tuple(name for name, _ in found.clusters)
        if found.verdict is AnalysisVerdict.FAILED:
            decision = Decision.ROLLBACK if rollback else Decision.HALT
            return GateVerdict(
                decision, found.reason, failed=failed, reasons=found.clusters, analysis=found.verdict
            )
        reason = f"{found.reason}; waiting for a person: syncer retry measures again"
        return GateVerdict(
            Decision.HALT, reason, failed=failed, reasons=found.clusters, analysis=found.verdict
        )

    def _background(
        self, wave: Wave, fleet: DesiredFleet, verdict: GateVerdict, rollback: bool
    ) -> GateVerdict:
        """``verdict`` once the rollout's background analysis looked at every cluster on the
        revision (their counts recorded first): unchanged while it runs or passed (a waiting gate
        asks again by the next measurement due), else the wave fails with every cluster on the
        revision (``across``): rolled back or halted like a failed wave analysis, or halted for a
        person when it is inconclusive (``syncer retry`` measures again). A sharded replica reads
        the clusters it does not own afresh first: their owners measure them."""
        policy = self.records.options.rollout.background
        for name in fleet.clusters if policy.metrics and self.records.sharded else ():
            if (
                name in self.records.states
                and name not in self.records.unreachable
                and not self.records.owns(name)
            ):
                self.records.reload(name)  # judged by the counts its owner records, read fresh
        on = tuple(
            name
            for name in fleet.clusters
            if name not in self.records.unreachable
            and (state := self.records.states.get(name)) is not None
            and state.revision == fleet.revision
            and state.applied_at
        )
        if not policy.metrics or not on:
            return verdict
        watched = replace(wave, clusters=on, gate=replace(wave.gate, analysis=policy))
        looked = self.analysis.look(watched, fleet, self.records.states, self.records.owns, background=True)
        for name, state in looked.states.items():
            self.records.save(name, state)
        found = looked.verdict
        if found.verdict is AnalysisVerdict.RUNNING:
            waits = verdict.wait if verdict.decision is Decision.PROCEED else min(verdict.wait, found.wait)
            return replace(verdict, wait=waits)
        if found.verdict is AnalysisVerdict.SUCCESSFUL:
            return verdict
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
        return GateVerdict(
            decision, reason, failed=failed, reasons=reasons, analysis=found.verdict, across=on
        )

    def _not_on(self, wave: Wave, revision: str) -> tuple[str, ...]:
        """The clusters of ``wave`` another replica owns that do not record ``revision``."""
        return tuple(
            name
            for name in wave.clusters
            if not self.records.owns(name)
            and name not in self.records.unreachable
            and (state := self.records.states.get(name)) is not None
            and state.revision != revision
        )

    def _elsewhere(self, wave: Wave, revision: str) -> list[str]:
        """The clusters of ``wave`` another replica owns that do not record ``revision``, with what
        they record instead, and those left out meanwhile, with why."""
        found = []
        for name in wave.clusters:
            state = self.records.states.get(name)
            if name in self.records.unreachable:
                found.append(f"{name}: {self.records.unreachable[name]}")
                continue
            if self.records.owns(name) or state is None or state.revision == revision:
                continue
            recorded = state.revision[:12] or "nothing yet"
            found.append(f"{name}: its owner has not put it on {revision[:12]} (it records {recorded})")
        return found

    def _still_healthy(self, wave: Wave, revision: str) -> bool:
        """Every cluster of ``wave`` was already recorded healthy on ``revision`` (a pass that found
        nothing to do)."""
        return all(
            (state := self.records.states[name]).phase is SyncPhase.HEALTHY
            and state.revision == revision
            and state.last_good == revision
            for name in wave.clusters
        )


@dataclass(frozen=True)
class RolloutParts:
    """The collaborators of a fleet rollout, as the rollback of a failed wave and the manual gates
    use them: the clusters' ``records``, the ``applier`` and the ``gate``."""

    records: RolloutStates
    applier: WaveApplier
    gate: HealthGate
