"""The health part of a rollout: the looks at a wave's gate (each cluster's health checked and
recorded, a person's abort, a sharded replica's clusters elsewhere, the analyses measured, the sleep
between looks: the effects of ``syncer.rollout.gate_wait``, which decides) and the watch over a wave
that has passed.

A wave whose clusters all recorded the revision healthy has passed: its gate is not judged again.
Later unhealthiness there is degradation, not a failed rollout: the cluster's health is recorded and
reported (``cluster-degraded`` / ``cluster-recovered``) and what drifted is re-applied, but the
revision is never marked bad for it and nothing halts.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from syncer.domain.changeset import ChangeSet
from syncer.domain.health import Health, ObjectHealth
from syncer.domain.objects import DesiredFleet
from syncer.domain.progress import PassEvent, Step
from syncer.domain.sync_state import SyncPhase
from syncer.engine.analysis_gate import AnalysisGate, QueryFn
from syncer.engine.live import live_health
from syncer.engine.rollout_apply import WaveApplier
from syncer.engine.rollout_model import WaveReport
from syncer.engine.rollout_state import RolloutStates
from syncer.errors import FactOutOfTurn, KubeError
from syncer.rollout import ClusterProgress, Decision, GateVerdict, Wave, failed_apply, judge_abort
from syncer.rollout.gate_wait import gate_step, open_gate
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
from syncer.rollout.recorded import recorded_progress
from syncer.tracing import traced


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
    def decide(self, wave: Wave, fleet: DesiredFleet, rollback: bool, *, analysed: bool) -> GateVerdict:
        """The gate of a wave going back (``failed_wave``): its effects run until it decides (or the
        agent is asked to stop); ``analysed``: a healthy, baked wave is measured by its analysis.
        The gate itself decides (``syncer.rollout.gate_wait``); the rollout's own gate runs in the
        rollout machine (``rollout_run``)."""
        gate, effects, end = open_gate(wave, fleet.revision, whole=False, analysed=analysed)
        while True:
            fact: GateFact | None = None
            for effect in effects:
                fact = self.run(effect, fleet, rollback) or fact
            if end is not None and end.verdict is not None:
                return end.verdict
            if fact is None:
                raise FactOutOfTurn(f"the gate of {wave.name} asked for nothing and did not decide")
            gate, effects, end = gate_step(gate, fact)

    def run(self, effect: Effect, fleet: DesiredFleet, rollback: bool | None = None) -> GateFact | None:
        """Run one effect of a wave's gate: a look, an analysis, a sleep (on the stop event), or a
        word told; ``rollback``: whether a failed wave may roll back (None: the rollout policy's)."""
        match effect:
            case Tell(event):
                self.records.listener(event)
                return None
            case CheckGate():
                allowed = self.records.options.rollout.rollback if rollback is None else rollback
                return self.look(effect, fleet, allowed)
            case Analyse(wave, background):
                return self._background(wave, fleet) if background else self._analysed(wave, fleet)
            case Sleep(seconds):
                return Slept(self.records.stop.wait(seconds))
        raise FactOutOfTurn(f"no way to run {effect!r} at a gate")

    def look(self, check: CheckGate, fleet: DesiredFleet, rollback: bool) -> GateLooked:
        """One look at a wave's gate (see ``CheckGate``): what was observed, at the time it was."""
        wave, revision, records = check.wave, fleet.revision, self.records
        poll = records.options.health_poll
        if records.sharded:
            self.applier.apply_wave(wave, fleet, taking_over=True)  # clusters gained meanwhile
            if check.whole and records.newer():
                return GateLooked(records.clock(), poll, newer=True)
        progress = tuple(self._progress(wave, fleet, revision).values())
        now, stop = records.clock(), records.stop.is_set()
        abort = self._aborted(wave, revision, learn=check.again) if check.whole else None
        if abort is not None:
            return GateLooked(now, poll, progress, stop, abort=abort, rollback=rollback)
        elsewhere = self._elsewhere(wave, revision)
        held = self.applier.held_now(self._not_on(wave, revision), fleet, wave.name) if elsewhere else None
        still = self._still_healthy(wave, revision)
        return GateLooked(
            now, poll, progress, stop, elsewhere=elsewhere, held=held or None, still=still, rollback=rollback
        )

    def _aborted(self, wave: Wave, revision: str, *, learn: bool) -> GateVerdict | None:
        """The end of ``wave`` when a person aborted ``revision``; with ``learn`` (the gate waited
        since the states were read) the acts are read again first: a wave that bakes writes nothing
        that would learn them."""
        for name in wave.clusters if learn else ():
            if name in self.records.states and name not in self.records.unreachable:
                self.records.learn_acts(name)
        return judge_abort(wave, self.records.states, revision)

    def _analysed(self, wave: Wave, fleet: DesiredFleet) -> AnalysisLooked:
        """What the wave's analysis found when it looked (``engine.analysis_gate``); the counts are
        recorded first."""
        looked = self.analysis.look(wave, fleet, self.records.states, self.records.owns)
        for name, state in looked.states.items():
            self.records.save(name, state)
        return AnalysisLooked(looked.verdict, wave.clusters)

    def _background(self, wave: Wave, fleet: DesiredFleet) -> AnalysisLooked:
        """What the rollout's background analysis found when it looked at every cluster on the
        revision (their counts recorded first); nothing when it has no metrics or no cluster is on
        the revision yet. A sharded replica reads the clusters it does not own afresh first: their
        owners measure them."""
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
            return AnalysisLooked(None)
        watched = replace(wave, clusters=on, gate=replace(wave.gate, analysis=policy))
        looked = self.analysis.look(watched, fleet, self.records.states, self.records.owns, background=True)
        for name, state in looked.states.items():
            self.records.save(name, state)
        return AnalysisLooked(looked.verdict, on)

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

    def _elsewhere(self, wave: Wave, revision: str) -> tuple[str, ...]:
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
        return tuple(found)

    def _still_healthy(self, wave: Wave, revision: str) -> bool:
        """Every cluster of ``wave`` was already recorded healthy on ``revision`` (a pass that found
        nothing to do)."""
        return all(
            (state := self.records.states.get(name)) is not None
            and state.phase is SyncPhase.HEALTHY
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
