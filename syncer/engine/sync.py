"""One revision rolled out across the fleet in waves, gated on health, halting and rolling back.

Every decision is recorded in the clusters themselves (their sync-state ConfigMaps) before the next
step, so a rollout interrupted at any point (SIGTERM, a crash, a lost leader lease) resumes from the
clusters: finished waves are not redone, applied clusters are not re-applied, and health timeouts
and bake times count from the times recorded there.
"""

from __future__ import annotations

import contextlib
import functools
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from enum import StrEnum

from syncer.apply import ApplyPolicy, ClusterApplier, with_retries
from syncer.config.rollout import RolloutPolicy
from syncer.domain.applied import MANAGED_BY_SELECTOR
from syncer.domain.changeset import ChangeSet, Outcome
from syncer.domain.health import ClusterHealth, Health
from syncer.domain.objects import ClusterManifests, DesiredFleet
from syncer.domain.sync_state import ClusterSyncState, InventoryEntry, SyncPhase
from syncer.engine.diff import DiffOptions, plan_live_cluster
from syncer.errors import FencedOut, KubeError, NotFound
from syncer.health import cluster_health
from syncer.kube import KubeApi
from syncer.rollout import ClusterProgress, Decision, GateVerdict, Wave, judge_wave, plan_waves
from syncer.rollout.recorded import recorded_progress
from syncer.status.state_store import DEFAULT_NAMESPACE, StateStore


class SyncOutcome(StrEnum):
    APPLIED = "applied"
    UNCHANGED = "unchanged"
    HALTED = "halted"
    ROLLED_BACK = "rolled-back"
    INTERRUPTED = "interrupted"


@dataclass(frozen=True)
class SyncOptions:
    """How a revision is rolled out; ``health_poll`` is the longest wait between two health checks."""

    rollout: RolloutPolicy = field(default_factory=RolloutPolicy.single_wave)
    apply: ApplyPolicy = field(default_factory=ApplyPolicy)
    diff: DiffOptions = field(default_factory=DiffOptions)
    state_namespace: str = DEFAULT_NAMESPACE
    health_poll: float = 2.0


@dataclass(frozen=True)
class WaveReport:
    """What happened to one wave: the gate's last decision and why, and each cluster's change set."""

    name: str
    clusters: tuple[str, ...]
    decision: Decision
    reason: str
    change_sets: tuple[ChangeSet, ...] = ()


@dataclass(frozen=True)
class SyncReport:
    """How a sync ended. ``unsaved`` names the clusters whose sync state could not be written (their
    apiserver did not answer) with the last error: what they store is older than what happened."""

    revision: str
    outcome: SyncOutcome
    waves: tuple[WaveReport, ...] = ()
    message: str = ""
    unsaved: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Progress:
    """A step of the rollout, for whoever shows progress (CLI, logs, events, metrics)."""

    wave: str
    cluster: str
    step: str
    detail: str = ""


Listener = Callable[[Progress], None]


def _health_of(api: KubeApi, desired: ClusterManifests) -> ClusterHealth:
    kinds = sorted({(m.api_version, m.key.kind) for m in desired.manifests})
    live = []
    for api_version, kind in kinds:
        try:
            live += api.list(api_version, kind, label_selector=MANAGED_BY_SELECTOR).items
        except NotFound:
            continue
    return cluster_health(desired.cluster, [m.key.subject for m in desired.manifests], live)


def _inventory(desired: ClusterManifests, applied: ChangeSet) -> tuple[InventoryEntry, ...]:
    uids = {e.key: e.uid for e in applied.entries if e.outcome is Outcome.APPLIED}
    return tuple(
        sorted(
            InventoryEntry(m.api_version, m.key.kind, m.key.namespace, m.key.name, uids.get(m.key, ""))
            for m in desired.manifests
        )
    )


class FleetRollout:
    """Rolls revisions out to the clusters it has clients for."""

    def __init__(
        self,
        clients: Mapping[str, KubeApi],
        options: SyncOptions = SyncOptions(),
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

    def load_states(self) -> dict[str, ClusterSyncState]:
        """Every cluster's stored state; KubeError when a cluster's state cannot be read."""
        kinds = [(k.api_version, k.kind) for k in self.options.diff.kinds]
        for name, store in self.stores.items():
            loaded = with_retries(functools.partial(store.load, kinds), self.options.apply.retry, self.stop)
            self.states[name] = loaded.state
            self.unsaved.pop(name, None)
            if loaded.problem:
                self.listener(Progress("", name, "state-rebuilt", loaded.problem))
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
        self.listener(Progress(state.wave, cluster, "state-unsaved", problem))

    # -- the rollout ------------------------------------------------------------------------------

    def sync(self, fleet: DesiredFleet, last_good: DesiredFleet | None = None) -> SyncReport:
        """Roll ``fleet`` out wave by wave; on a failed wave halt, or roll it back to ``last_good``."""
        missing = sorted(set(fleet.clusters) - set(self.clients))
        if missing:
            return SyncReport(
                fleet.revision, SyncOutcome.HALTED, message=f"no connection for {', '.join(missing)}"
            )
        try:
            self.load_states()
        except KubeError as err:
            # Without every cluster's state the waves cannot be judged; nothing has been touched yet.
            return SyncReport(
                fleet.revision, SyncOutcome.HALTED, message=f"cannot read the sync state: {err}"
            )
        report = self._roll_out(fleet, last_good)
        return replace(report, unsaved=tuple(sorted(self.unsaved.items())))

    def _roll_out(self, fleet: DesiredFleet, last_good: DesiredFleet | None) -> SyncReport:
        labels = {name: c.labels for name, c in fleet.clusters.items()}
        waves = plan_waves(labels, self.options.rollout)
        reports: list[WaveReport] = []
        touched = False
        for wave in waves:
            if self.stop.is_set():
                return SyncReport(
                    fleet.revision, SyncOutcome.INTERRUPTED, tuple(reports), "stopped between waves"
                )
            refused = [
                c
                for c in wave.clusters
                if self.states[c].refuses(fleet.revision, fleet.clusters[c].content_hash)
            ]
            if refused:
                reason = (
                    f"revision (or the same objects under another commit) failed before on "
                    f"{', '.join(refused)}; not retried until they change"
                )
                reports.append(WaveReport(wave.name, wave.clusters, Decision.HALT, reason))
                return SyncReport(fleet.revision, SyncOutcome.HALTED, tuple(reports), reason)
            change_sets = self._apply_wave(wave, fleet)
            touched = touched or any(cs.writes for cs in change_sets)
            verdict = self._gate(wave, fleet)
            reports.append(
                WaveReport(wave.name, wave.clusters, verdict.decision, verdict.reason, change_sets)
            )
            if verdict.decision is Decision.WAIT:
                return SyncReport(
                    fleet.revision, SyncOutcome.INTERRUPTED, tuple(reports), "stopped while waiting"
                )
            if verdict.decision is not Decision.PROCEED:
                return self._fail_wave(wave, fleet, last_good, verdict.decision, tuple(reports))
        outcome = SyncOutcome.APPLIED if touched else SyncOutcome.UNCHANGED
        return SyncReport(fleet.revision, outcome, tuple(reports))

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
                not self._done(c, fleet.revision)
                or (not taking_over and self._drifted(fleet.clusters[c], fleet.revision))
            )
        ]
        for name in wave.clusters:
            if name not in todo and self.owns(name) and not self.sharded:
                self.listener(Progress(wave.name, name, "already-applied", fleet.revision))
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

    def _done(self, cluster: str, revision: str) -> bool:
        state = self.states[cluster]
        return state.revision == revision and state.phase in {SyncPhase.APPLIED, SyncPhase.HEALTHY}

    def _apply_cluster(self, wave: Wave, desired: ClusterManifests, revision: str) -> ChangeSet:
        try:
            return self._apply_owned(wave, desired, revision)
        except FencedOut as err:
            # Lost the cluster to another replica mid-apply: it carries on from the cluster's state.
            self.listener(Progress(wave.name, desired.cluster, "not-owner", str(err)))
            return ChangeSet(desired.cluster, revision, error=str(err))

    def _apply_owned(self, wave: Wave, desired: ClusterManifests, revision: str) -> ChangeSet:
        name = desired.cluster
        api = self.clients[name]
        state = self.states[name]
        self.listener(Progress(wave.name, name, "applying", revision))
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
        self.listener(Progress(wave.name, name, "applied" if result.ok else "apply-failed", result.error))
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
            if state.phase is SyncPhase.FAILED and state.revision == revision:
                progress[name] = ClusterProgress(
                    name, state.applied_at, apply_error=state.last_error or "failed"
                )
                continue
            try:
                health = _health_of(self.clients[name], fleet.clusters[name])
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
            self.listener(Progress(wave.name, "", f"gate-{verdict.decision}", verdict.reason))
            if verdict.decision is Decision.PROCEED:
                for name in filter(self.owns, wave.clusters):
                    self._save(
                        name, replace(self.states[name], phase=SyncPhase.HEALTHY, last_good=fleet.revision)
                    )
            if verdict.decision is not Decision.WAIT or self.stop.wait(
                min(verdict.wait, self.options.health_poll)
            ):
                return verdict

    def _fail_wave(
        self,
        wave: Wave,
        fleet: DesiredFleet,
        last_good: DesiredFleet | None,
        decision: Decision,
        reports: tuple[WaveReport, ...],
    ) -> SyncReport:
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
        if decision is not Decision.ROLLBACK or last_good is None:
            return SyncReport(fleet.revision, SyncOutcome.HALTED, reports, reason)
        self.listener(Progress(wave.name, "", "rolling-back", last_good.revision))
        for name in filter(self.owns, wave.clusters):
            self._apply_cluster(wave, last_good.clusters[name], last_good.revision)
        verdict = self._gate(wave, last_good, rollback=False)
        for name in filter(self.owns, wave.clusters):
            self._save(name, replace(self.states[name], phase=self._after_rollback(name, verdict)))
        message = f"{reason}; rolled back to {last_good.revision[:12]}: {verdict.reason}"
        return SyncReport(fleet.revision, SyncOutcome.ROLLED_BACK, reports, message)

    def _after_rollback(self, cluster: str, verdict: GateVerdict) -> SyncPhase:
        """A cluster the last good revision was applied to is rolled back even when another cluster of
        the wave failed (e.g. could not be reached); it is failed when its own rollback failed."""
        if verdict.decision is Decision.PROCEED:
            return SyncPhase.ROLLED_BACK
        if cluster in verdict.failed or self.states[cluster].phase is SyncPhase.FAILED:
            return SyncPhase.FAILED
        return SyncPhase.ROLLED_BACK
