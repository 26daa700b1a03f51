"""One agent: the revision gate, the fleet rollout and everything they report (metrics, events, logs).

``Agent.sync_once`` is one pass: poll git, take a new tip through verification and the manifests, and
roll the revision in force out (or carry on with an interrupted rollout). ``Agent.heal`` re-plans the
clusters already on the revision and repairs drift. Neither runs twice at the same time.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from syncer.agent.settings import AgentSettings
from syncer.config import AgentConfig, ClusterAccess
from syncer.config.rollout import RolloutPolicy, load_rollout_policy
from syncer.domain.changeset import ChangeSet
from syncer.domain.objects import DesiredFleet
from syncer.engine.heal import heal_fleet
from syncer.engine.revision import Advance, Outcome, Rejection, RevisionGate, RevisionOptions, Stage, prepare
from syncer.engine.sync import FleetRollout, Progress, SyncOptions, SyncOutcome, SyncReport
from syncer.errors import ConfigError, KubeError, SourceError, SyncerError, VerificationError
from syncer.kube import ClusterClient
from syncer.source import GitSource, SourceOptions
from syncer.status.events import EventRecorder, Regarding
from syncer.status.metrics import SyncerMetrics
from syncer.status.state_store import STATE_CONFIGMAP, StateStore

log = logging.getLogger("syncer.agent")

_WARNING_STEPS = {"apply-failed", "gate-halt", "gate-rollback", "rolling-back", "state-rebuilt"}
_EVENT_REASONS = {
    "applied": "Applied",
    "apply-failed": "ApplyFailed",
    "gate-proceed": "WaveHealthy",
    "gate-halt": "RolloutHalted",
    "gate-rollback": "RolloutFailed",
    "rolling-back": "RollingBack",
    "state-rebuilt": "StateRebuilt",
}
_WAVE_STATES = {
    "pending": "pending",
    "applying": "applying",
    "gate-wait": "waiting",
    "gate-proceed": "done",
    "gate-halt": "halted",
    "gate-rollback": "halted",
    "rolling-back": "rolled-back",
}


@dataclass(frozen=True)
class PassResult:
    """What one pass did: the gate's answer and, when a rollout ran, its report."""

    advance: Advance
    report: SyncReport | None = None


class Agent:
    """Everything one agent process needs to take revisions from git to the fleet."""

    def __init__(
        self,
        config: AgentConfig,
        settings: AgentSettings,
        metrics: SyncerMetrics,
        stop: threading.Event,
        listener: Callable[[Progress], None] | None = None,
    ) -> None:
        self.config = config
        self.settings = settings
        self.metrics = metrics
        self.stop = stop
        self.extra_listener = listener
        policy = (
            load_rollout_policy(settings.rollout_policy)
            if settings.rollout_policy
            else RolloutPolicy.single_wave()
        )
        self.sync_options = SyncOptions(
            rollout=policy, state_namespace=settings.state_namespace, health_poll=settings.health_poll
        )
        source_options = SourceOptions.from_settings(
            config.source, allow_history_rewrite=config.trust.allow_history_rewrite
        )
        self.source = GitSource(source_options)
        self.gate = RevisionGate(
            self.source,
            config.trust,
            RevisionOptions(timeout=config.source.timeout),
            recorded=self.recorded_revisions,
        )
        self.clients: dict[str, ClusterClient] = {}
        self.recorders: dict[str, EventRecorder] = {}
        self._lock = threading.Lock()
        self.last_report: SyncReport | None = None
        self.passes = 0
        self._seen_rejection: Rejection | None = None

    # -- connections ------------------------------------------------------------------------------

    def access(self, cluster: str) -> ClusterAccess:
        return self.config.clusters.get(cluster) or ClusterAccess(context=cluster)

    def client(self, cluster: str) -> ClusterClient:
        if cluster not in self.clients:
            access = self.access(cluster)
            kubeconfig = str(access.kubeconfig) if access.kubeconfig else self.settings.kubeconfig
            self.clients[cluster] = ClusterClient.from_kubeconfig(kubeconfig, access.context, cluster)
            self.recorders[cluster] = EventRecorder(self.clients[cluster])
        return self.clients[cluster]

    def close(self) -> None:
        for recorder in self.recorders.values():
            recorder.flush()
        for client in self.clients.values():
            client.close()
        self.clients.clear()

    def recorded_revisions(self) -> dict[str, str]:
        """The revisions the clusters record as applied or last good, each with the clusters recording
        it: the config's clusters and those of the revision in force. A cluster whose record cannot
        be read is an error (a tip is never judged against part of the fleet's memory)."""
        current = self.gate.current.fleet.clusters if self.gate.current else {}
        found: dict[str, list[str]] = {}
        for name in sorted(set(self.config.clusters) | set(current)):
            try:
                state = StateStore(self.client(name), self.settings.state_namespace).load().state
            except (KubeError, ConfigError) as err:
                raise SourceError(f"cannot read the revision cluster {name} records: {err}") from err
            for revision in dict.fromkeys((state.revision, state.last_good)):
                if revision:
                    found.setdefault(revision, []).append(name)
        return {
            revision: f"the revision {', '.join(names)} record(s) as applied"
            for revision, names in found.items()
        }

    # -- reporting --------------------------------------------------------------------------------

    def _event(self, cluster: str, reason: str, note: str, warning: bool) -> None:
        recorder = self.recorders.get(cluster)
        if recorder is None:
            return
        regarding = Regarding("v1", "ConfigMap", STATE_CONFIGMAP, self.settings.state_namespace)
        recorder.emit(regarding, reason, note, warning=warning)

    def _on_progress(self, step: Progress) -> None:
        log.info("%s", step.step, extra={"wave": step.wave, "cluster": step.cluster, "detail": step.detail})
        if step.wave and step.step in _WAVE_STATES:
            state = _WAVE_STATES[step.step]
            if step.step == "gate-wait" and step.detail.startswith("baking"):
                state = "baking"
            self.metrics.set_wave(step.wave, state)
        reason = _EVENT_REASONS.get(step.step)
        if reason:
            targets = [step.cluster] if step.cluster else list(self.recorders)
            for cluster in targets:
                self._event(
                    cluster, reason, f"{step.wave}: {step.detail}".strip(": "), step.step in _WARNING_STEPS
                )
        if self.extra_listener:
            self.extra_listener(step)

    def _count_changes(self, report: SyncReport) -> None:
        for wave in report.waves:
            for change_set in wave.change_sets:
                for action, count in change_set.counts().items():
                    self.metrics.apply_objects.labels(cluster=change_set.cluster, action=action).inc(count)

    def _record_poll(self, advance: Advance, repeated: bool) -> None:
        rejection = advance.rejection
        if rejection is not None and rejection.stage is Stage.SOURCE:
            result = "error"
        elif advance.outcome is Outcome.UNCHANGED or repeated:
            result = "unchanged"
        else:
            result = "changed"
        self.metrics.git_poll.labels(result=result).inc()

    # -- passes -----------------------------------------------------------------------------------

    def sync_once(self) -> PassResult:
        """Poll, verify and render a new tip, and roll the revision in force out."""
        with self._lock:
            self.passes += 1
            started = time.monotonic()
            advance = self.gate.advance()
            repeated = advance.rejection is not None and advance.rejection is self._seen_rejection
            self._record_poll(advance, repeated)
            if advance.rejection is not None and not repeated:
                self._seen_rejection = advance.rejection
                self._rejected(advance)
            if advance.outcome is Outcome.ACCEPTED and advance.current is not None:
                self.metrics.signature_verification.labels(result="trusted").inc()
            current = advance.current
            if current is None:
                return PassResult(advance)
            for name in current.fleet.clusters:
                self.client(name)
            rollout = FleetRollout(
                self.clients, self.sync_options, stop=self.stop, listener=self._on_progress
            )
            report = rollout.sync(current.fleet, self._last_good(rollout, current.fleet))
            self.last_report = report
            self._count_changes(report)
            self.metrics.sync_total.labels(result=str(report.outcome)).inc()
            self.metrics.sync_duration.observe(time.monotonic() - started)
            for name, state in rollout.states.items():
                self.metrics.cluster_healthy.labels(cluster=name).set(1 if state.health == "healthy" else 0)
            if report.outcome in {SyncOutcome.APPLIED, SyncOutcome.UNCHANGED}:
                self.metrics.set_revision(current.revision)
                self.source.mark_synced(current.revision)
            log.info(
                "sync %s", report.outcome, extra={"revision": current.revision, "detail": report.message}
            )
            return PassResult(advance, report)

    def heal(self) -> tuple[ChangeSet, ...]:
        """Repair drift on the clusters already on the revision in force."""
        with self._lock:
            current = self.gate.current
            if current is None:
                return ()
            rollout = FleetRollout(
                self.clients, self.sync_options, stop=self.stop, listener=self._on_progress
            )
            repaired = heal_fleet(rollout, current.fleet)
            for change_set in repaired:
                for action, count in change_set.counts().items():
                    self.metrics.apply_objects.labels(cluster=change_set.cluster, action=action).inc(count)
                if change_set.error:
                    log.warning(
                        "drift repair failed",
                        extra={"cluster": change_set.cluster, "detail": change_set.error},
                    )
                elif change_set.writes:
                    log.info(
                        "drift repaired", extra={"cluster": change_set.cluster, "objects": change_set.writes}
                    )
                    self._event(
                        change_set.cluster,
                        "DriftRepaired",
                        f"{change_set.writes} object(s) re-applied",
                        False,
                    )
            return repaired

    def _rejected(self, advance: Advance) -> None:
        rejection = advance.rejection
        assert rejection is not None
        # A revision judged bad is rejected; git that could not be asked is an error, not a verdict.
        result = "error" if rejection.stage is Stage.SOURCE else "rejected"
        self.metrics.sync_total.labels(result=result).inc()
        if rejection.stage is Stage.VERIFY:
            verdict = rejection.error.verdict if isinstance(rejection.error, VerificationError) else ""
            self.metrics.signature_verification.labels(result=verdict or "untrusted").inc()
        log.warning(
            "%s", rejection.message, extra={"revision": rejection.revision, "stage": str(rejection.stage)}
        )
        if rejection.stage is not Stage.SOURCE:
            for cluster in list(self.recorders):
                self._event(cluster, "RevisionRejected", rejection.message, True)

    def _last_good(self, rollout: FleetRollout, fleet: DesiredFleet) -> DesiredFleet | None:
        """The desired fleet of the revision most clusters last had healthy (rebuilt from git)."""
        votes = Counter(s.last_good for s in rollout.load_states().values() if s.last_good)
        if not votes:
            return None
        revision = votes.most_common(1)[0][0]
        if revision == fleet.revision:
            return fleet
        try:
            return prepare(
                self.source, revision, self.config.trust, RevisionOptions(timeout=self.config.source.timeout)
            ).fleet
        except SyncerError as err:
            log.warning("cannot rebuild the last good revision %s: %s", revision, err)
            return None


def read_secret(path: Path | None) -> str:
    return path.read_text().strip() if path else ""
