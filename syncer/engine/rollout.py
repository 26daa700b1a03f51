"""``FleetRollout``: one revision rolled out across the fleet in waves, gated on health, halting and
rolling back; and drift repair of the clusters already on it (``FleetRollout.heal``).

The clusters' sync states are read once (``read_states``); from then on the rollout keeps them
current as it writes them. Every decision is recorded in the clusters themselves (their sync-state
ConfigMaps) before the next step, so a rollout interrupted at any point (SIGTERM, a crash, a lost
leader lease) resumes from the clusters: finished waves are not redone, applied clusters are not
re-applied, and health timeouts and bake times count from the times recorded there.
"""

from __future__ import annotations

import contextlib
import functools
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace

from syncer.apply import ClusterApplier, with_retries
from syncer.domain.changeset import ChangeSet, EntryOutcome
from syncer.domain.health import Health
from syncer.domain.objects import ClusterManifests, DesiredFleet
from syncer.domain.progress import Listener, PassEvent, Step
from syncer.domain.sync_state import ClusterSyncState, InventoryEntry, SyncPhase
from syncer.engine.diff import plan_live_cluster
from syncer.engine.live import live_health
from syncer.engine.rollout_model import RolloutOptions, RolloutOutcome, RolloutReport, WaveReport, unreadable
from syncer.errors import FencedOut, KubeError
from syncer.kube import KubeApi
from syncer.rollout import (
    ClusterProgress,
    Decision,
    GateVerdict,
    Wave,
    failed_apply,
    is_done,
    judge_wave,
    phase_after_rollback,
    plan_waves,
    refusing,
    rolls_back,
)
from syncer.rollout.recorded import recorded_progress
from syncer.status.state_store import LoadedState, StateStore

_GATE_STEPS = {
    Decision.WAIT: Step.GATE_WAIT,
    Decision.PROCEED: Step.GATE_PROCEED,
    Decision.HALT: Step.GATE_HALT,
    Decision.ROLLBACK: Step.GATE_ROLLBACK,
}


def _inventory(desired: ClusterManifests, applied: ChangeSet) -> tuple[InventoryEntry, ...]:
    uids = {e.key: e.uid for e in applied.entries if e.outcome is EntryOutcome.APPLIED}
    return tuple(
        sorted(
            InventoryEntry(m.api_version, m.key.kind, m.key.namespace, m.key.name, uids.get(m.key, ""))
            for m in desired.manifests
        )
    )


class FleetRollout:
    """Rolls revisions out to the clusters it has clients for, and repairs their drift."""

    def __init__(
        self,
        clients: Mapping[str, KubeApi],
        options: RolloutOptions = RolloutOptions(),
        *,
        stop: threading.Event | None = None,
        clock: Callable[[], float] = time.time,
        listener: Listener | None = None,
        owns: Callable[[str], bool] | None = None,
    ) -> None:
        self.clients = clients
        # Sharded replicas: ``owns(cluster)`` says whether this replica may write to a cluster now.
        # It applies, checks and records only those; the others' progress is what their owner recorded.
        self.owns = owns or (lambda _: True)
        self.sharded = owns is not None
        self.options = options
        self.stop = stop or threading.Event()
        self.clock = clock
        self.listener = listener or (lambda _: None)
        self.stores = {name: StateStore(api, options.state_namespace) for name, api in clients.items()}
        # One lock per cluster: a cluster whose apiserver hangs must not hold up the others' state writes.
        self._locks = {name: threading.Lock() for name in clients}
        self.states: dict[str, ClusterSyncState] = {}
        # Clusters whose latest state could not be written, with the error (cleared by a later write).
        self.unsaved: dict[str, str] = {}

    # -- state ------------------------------------------------------------------------------------

    def load_state(self, cluster: str) -> LoadedState:
        """One read of ``cluster``'s stored state (retried while the apiserver is busy); KubeError when
        it cannot be read."""
        kinds = [(k.api_version, k.kind) for k in self.options.diff.kinds]
        store = self.stores[cluster]
        return with_retries(functools.partial(store.load, kinds), self.options.apply.retry, self.stop)

    def read_states(self, preloaded: Mapping[str, LoadedState] | None = None) -> dict[str, ClusterSyncState]:
        """Every cluster's stored state, read once per pass (``preloaded`` ones, read earlier in the
        same pass, are not read again); the rollout keeps them current after. KubeError when a
        cluster's state cannot be read."""
        for name in self.stores:
            loaded = (preloaded or {}).get(name) or self.load_state(name)
            self.states[name] = loaded.state
            self.unsaved.pop(name, None)
            if loaded.problem:
                self.listener(PassEvent(Step.STATE_REBUILT, cluster=name, reason=loaded.problem))
        return dict(self.states)

    def _save(self, cluster: str, state: ClusterSyncState) -> None:
        """Record ``state`` as the cluster's state and write it to the cluster.

        A write that fails (the apiserver is unreachable) does not stop the rollout: the rollout goes
        on from ``state``, the error is kept in ``unsaved`` for the report, and the cluster keeps its
        last stored state, which is older but whole.
        """
        with self._locks[cluster]:
            if self.states.get(cluster) == state and cluster not in self.unsaved:
                return
            try:
                self.states[cluster] = self.stores[cluster].save(state, now=self.clock())
                self.unsaved.pop(cluster, None)
                return
            except FencedOut:
                # Another replica owns the cluster now: what it records is the cluster's state.
                self.states[cluster] = state
                return
            except KubeError as err:
                self.states[cluster] = state
                self.unsaved[cluster] = problem = str(err)
                cause = err
        self.listener(
            PassEvent(Step.STATE_UNSAVED, state.wave, cluster, state.revision, error=problem, cause=cause)
        )

    # -- the rollout ------------------------------------------------------------------------------

    def sync(self, fleet: DesiredFleet, last_good: DesiredFleet | None = None) -> RolloutReport:
        """Read the clusters' states, then roll ``fleet`` out (see ``roll_out``)."""
        try:
            self.read_states()
        except KubeError as err:
            return unreadable(fleet.revision, err)
        return self.roll_out(fleet, last_good)

    def roll_out(self, fleet: DesiredFleet, last_good: DesiredFleet | None = None) -> RolloutReport:
        """Roll ``fleet`` out wave by wave from the states read last; on a failed wave halt, or roll it
        back to ``last_good``."""
        missing = sorted(set(fleet.clusters) - set(self.clients))
        if missing:
            return RolloutReport(
                fleet.revision, RolloutOutcome.HALTED, message=f"no connection for {', '.join(missing)}"
            )
        unread = sorted(set(fleet.clusters) - set(self.states))
        if unread:
            raise ValueError(f"roll_out before read_states: no state for {', '.join(unread)}")
        report = self._roll_out(fleet, last_good)
        return replace(report, unsaved=tuple(sorted(self.unsaved.items())))

    def _roll_out(self, fleet: DesiredFleet, last_good: DesiredFleet | None) -> RolloutReport:
        labels = {name: c.labels for name, c in fleet.clusters.items()}
        waves = plan_waves(labels, self.options.rollout)
        reports: list[WaveReport] = []
        touched = False
        for wave in waves:
            if self.stop.is_set():
                return RolloutReport(
                    fleet.revision, RolloutOutcome.INTERRUPTED, tuple(reports), "stopped between waves"
                )
            refused = refusing(wave.clusters, fleet, self.states)
            if refused:
                reason = (
                    f"revision (or the same objects under another commit) failed before on "
                    f"{', '.join(refused)}; not retried until they change"
                )
                reports.append(WaveReport(wave.name, wave.clusters, Decision.HALT, reason))
                return RolloutReport(fleet.revision, RolloutOutcome.HALTED, tuple(reports), reason)
            change_sets = self._apply_wave(wave, fleet)
            touched = touched or any(cs.writes for cs in change_sets)
            verdict = self._gate(wave, fleet)
            reports.append(
                WaveReport(wave.name, wave.clusters, verdict.decision, verdict.reason, change_sets)
            )
            if verdict.decision is Decision.WAIT:
                return RolloutReport(
                    fleet.revision, RolloutOutcome.INTERRUPTED, tuple(reports), "stopped while waiting"
                )
            if verdict.decision is not Decision.PROCEED:
                return self._fail_wave(wave, fleet, last_good, verdict.decision, tuple(reports))
        outcome = RolloutOutcome.APPLIED if touched else RolloutOutcome.UNCHANGED
        return RolloutReport(fleet.revision, outcome, tuple(reports))

    def _apply_wave(
        self, wave: Wave, fleet: DesiredFleet, taking_over: bool = False
    ) -> tuple[ChangeSet, ...]:
        """Apply the wave to the clusters this replica owns that are not done (or drifted);
        ``taking_over``: only those not done, for clusters gained while waiting at the gate."""
        todo = [
            c
            for c in wave.clusters
            if self.owns(c)
            and (
                not is_done(self.states[c], fleet.revision)
                or (not taking_over and self._drifted(fleet.clusters[c], fleet.revision))
            )
        ]
        for name in wave.clusters:
            if name not in todo and self.owns(name) and not self.sharded:
                self.listener(PassEvent(Step.ALREADY_APPLIED, wave.name, name, fleet.revision))
        if not todo:
            return ()
        with ThreadPoolExecutor(max_workers=max(1, wave.gate.max_concurrent)) as pool:
            return tuple(
                pool.map(lambda c: self._apply_cluster(wave, fleet.clusters[c], fleet.revision), todo)
            )

    def _drifted(self, desired: ClusterManifests, revision: str) -> bool:
        """Whether a cluster that already runs ``revision`` no longer matches it (an object deleted or
        changed out of band): then the sync applies the revision again, which repairs it. A cluster
        that cannot be read now, or whose repair is blocked (a conflict under the report policy), is
        left as it is recorded: this check must not fail a good revision."""
        state = self.states[desired.cluster]
        api = self.clients[desired.cluster]
        try:
            plan = plan_live_cluster(
                api, desired, self.options.diff, state.applied_inventory(), self.options.apply.rules
            )
        except KubeError:
            return False
        return not plan.error and not plan.blocked and plan.has_changes

    def _apply_cluster(self, wave: Wave, desired: ClusterManifests, revision: str) -> ChangeSet:
        try:
            return self._apply_owned(wave, desired, revision)
        except FencedOut as err:
            # Lost the cluster to another replica mid-apply: it carries on from the cluster's state.
            self.listener(
                PassEvent(Step.NOT_OWNER, wave.name, desired.cluster, revision, error=str(err), cause=err)
            )
            return ChangeSet(desired.cluster, revision, error=str(err))

    def _apply_owned(self, wave: Wave, desired: ClusterManifests, revision: str) -> ChangeSet:
        name = desired.cluster
        api = self.clients[name]
        state = self.states[name]
        self.listener(PassEvent(Step.APPLYING, wave.name, name, revision))
        self._save(
            name, replace(state, revision=revision, phase=SyncPhase.APPLYING, wave=wave.name, last_error="")
        )
        inventory = state.applied_inventory()
        rules = self.options.apply.rules
        try:
            plan = with_retries(
                lambda: plan_live_cluster(api, desired, self.options.diff, inventory, rules),
                self.options.apply.retry,
                self.stop,
            )
        except KubeError as err:
            plan = None
            error = f"reading live state failed: {err}"
        if plan is not None:
            error = plan.error
        if plan is None or error:
            result = ChangeSet(name, revision, error=error)
        else:
            result = ClusterApplier(api, self.options.apply, self.stop).apply(desired, plan, revision)
        now = self.clock()
        if result.ok:
            applied = replace(
                self.states[name],
                phase=SyncPhase.APPLIED,
                applied_at=now,
                healthy_since=0.0,
                inventory=_inventory(desired, result),
            )
        else:
            applied = replace(
                self.states[name], phase=SyncPhase.FAILED, applied_at=now, last_error=result.error
            )
        self._save(name, applied)
        step = Step.APPLIED if result.ok else Step.APPLY_FAILED
        self.listener(PassEvent(step, wave.name, name, revision, error=result.error, objects=result.writes))
        return result

    def _recorded(self, name: str, revision: str) -> ClusterProgress:
        """A cluster another replica owns: its progress as its owner last recorded it."""
        with contextlib.suppress(KubeError):  # else judged from the state read last
            self.states[name] = self.stores[name].load().state
        return recorded_progress(self.states[name], revision)

    def _progress(self, wave: Wave, fleet: DesiredFleet, revision: str) -> dict[str, ClusterProgress]:
        progress = {}
        for name in wave.clusters:
            if not self.owns(name):
                progress[name] = self._recorded(name, revision)
                continue
            state = self.states[name]
            failed = failed_apply(state, revision)
            if failed is not None:
                progress[name] = failed
                continue
            try:
                health = live_health(self.clients[name], fleet.clusters[name])
                verdict, detail = health.health, health.summary()
            except KubeError as err:
                verdict, detail = Health.PROGRESSING, f"health check failed: {err}"
            now = self.clock()
            since = (state.healthy_since or now) if verdict is Health.HEALTHY else 0.0
            self._save(name, replace(state, health=str(verdict), health_detail=detail, healthy_since=since))
            progress[name] = ClusterProgress(
                name, state.applied_at or None, "", verdict, since or None, detail
            )
        return progress

    def _gate(self, wave: Wave, fleet: DesiredFleet, rollback: bool | None = None) -> GateVerdict:
        """Check the wave's health until the gate decides (or the agent is asked to stop)."""
        allowed = self.options.rollout.rollback if rollback is None else rollback
        while True:
            if self.sharded:
                self._apply_wave(wave, fleet, taking_over=True)  # clusters gained meanwhile
            progress = self._progress(wave, fleet, fleet.revision)
            verdict = judge_wave(wave, progress, self.clock(), rollback=allowed)
            step = _GATE_STEPS[verdict.decision]
            if step is Step.GATE_PROCEED and self._still_healthy(wave, fleet.revision):
                step = Step.GATE_STILL_HEALTHY
            self.listener(
                PassEvent(
                    step,
                    wave.name,
                    revision=fleet.revision,
                    reason=verdict.reason,
                    waiting=verdict.waiting,
                )
            )
            if verdict.decision is Decision.PROCEED:
                for name in filter(self.owns, wave.clusters):
                    self._save(
                        name, replace(self.states[name], phase=SyncPhase.HEALTHY, last_good=fleet.revision)
                    )
            if verdict.decision is not Decision.WAIT or self.stop.wait(
                min(verdict.wait, self.options.health_poll)
            ):
                return verdict

    def _still_healthy(self, wave: Wave, revision: str) -> bool:
        """Every cluster of ``wave`` was already recorded healthy on ``revision`` (a pass that found
        nothing to do)."""
        return all(
            (state := self.states[name]).phase is SyncPhase.HEALTHY
            and state.revision == revision
            and state.last_good == revision
            for name in wave.clusters
        )

    def _fail_wave(
        self,
        wave: Wave,
        fleet: DesiredFleet,
        last_good: DesiredFleet | None,
        decision: Decision,
        reports: tuple[WaveReport, ...],
    ) -> RolloutReport:
        reason = reports[-1].reason
        for name in filter(self.owns, wave.clusters):
            state = self.states[name]
            self._save(
                name,
                replace(
                    state.with_bad(fleet.revision, fleet.clusters[name].content_hash),
                    phase=SyncPhase.FAILED,
                    last_error=reason,
                ),
            )
        if not rolls_back(decision, last_good is not None) or last_good is None:
            return RolloutReport(fleet.revision, RolloutOutcome.HALTED, reports, reason)
        self.listener(PassEvent(Step.ROLLING_BACK, wave.name, revision=last_good.revision))
        for name in filter(self.owns, wave.clusters):
            self._apply_cluster(wave, last_good.clusters[name], last_good.revision)
        verdict = self._gate(wave, last_good, rollback=False)
        for name in filter(self.owns, wave.clusters):
            state = self.states[name]
            self._save(name, replace(state, phase=phase_after_rollback(state, verdict)))
        message = f"{reason}; rolled back to {last_good.revision[:12]}: {verdict.reason}"
        return RolloutReport(fleet.revision, RolloutOutcome.ROLLED_BACK, reports, message)

    # -- drift repair -----------------------------------------------------------------------------

    def heal(self, fleet: DesiredFleet) -> tuple[ChangeSet, ...]:
        """For every cluster that finished ``fleet``'s revision: plan it against live state and, when
        something drifted (another manager changed a field syncer owns, an object was deleted), apply
        the plan. Clusters still rolling out are left to the rollout, and those another replica owns
        to it. Returns the change sets that
        wrote or failed; KubeError when a cluster's state cannot be read."""
        states = self.read_states()
        repaired: list[ChangeSet] = []
        for name, desired in fleet.clusters.items():
            state = states.get(name)
            if state is None or not is_done(state, fleet.revision) or not self.owns(name):
                continue
            result = self._repair(self.clients[name], desired, state)
            if result is None:
                continue
            repaired.append(result)
            if result.error:
                step = Step.DRIFT_REPAIR_FAILED
            elif result.writes:
                step = Step.DRIFT_REPAIRED
            else:
                continue
            self.listener(
                PassEvent(
                    step,
                    cluster=name,
                    revision=fleet.revision,
                    reason=f"{result.writes} object(s) re-applied" if result.writes else "",
                    error=result.error,
                    objects=result.writes,
                )
            )
        return tuple(repaired)

    def _repair(self, api: KubeApi, desired: ClusterManifests, state: ClusterSyncState) -> ChangeSet | None:
        try:
            plan = plan_live_cluster(
                api, desired, self.options.diff, state.applied_inventory(), self.options.apply.rules
            )
        except KubeError as err:
            return ChangeSet(state.cluster, state.revision, error=f"drift check failed: {err}")
        if plan.error:
            return ChangeSet(state.cluster, state.revision, error=plan.error)
        if not plan.has_changes:
            return None
        return ClusterApplier(api, self.options.apply, self.stop).apply(desired, plan, state.revision)
