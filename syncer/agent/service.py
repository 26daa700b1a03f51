"""One agent: the engine's pass wired to git and the clusters, and the counters of each pass.

``Agent.sync_once`` is one call of ``syncer.engine.fleet_pass.FleetPass.run_pass`` and ``Agent.heal``
one of ``FleetPass.heal``; neither runs twice at the same time. While the pass runs, its events go
to ``syncer.status.report.EventReporter`` (logs, wave metrics, Kubernetes Events), to the notifier
of the config's receivers (``syncer.notify``), to the fleet page (``syncer.agent.fleet_page``) and
to an optional listener (the CLI's progress lines); once it has returned, the agent counts what it
did and tells the page the states it ended with. What a pass
wrote is told by its events (``PassTally``): a pass whose only writes re-applied drift on clusters
already on the revision counts as ``repaired``, not ``applied``.
"""

from __future__ import annotations

import logging
import socket
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from syncer.agent.fleet_page import FleetPage
from syncer.config import AgentConfig, ClusterAccess
from syncer.config.settings import AgentSettings
from syncer.domain.changeset import ChangeSet
from syncer.domain.progress import Listener, PassEvent, Step, to_all
from syncer.domain.rollout_records import rebuild, records_of
from syncer.engine.cluster_reads import ClusterReads
from syncer.engine.connections import KubeconfigConnections
from syncer.engine.fleet_pass import FleetPass, PassResult, PassScope, git_revisions
from syncer.engine.guarding import RevisionGuard
from syncer.engine.revision import PollOutcome, Stage
from syncer.engine.rollout_model import RolloutOptions
from syncer.errors import VerificationError
from syncer.kube import ClientOptions, KubeApi
from syncer.leader.fence import FenceOf
from syncer.notify.notifier import RESULTS, Notifier
from syncer.rollout.moves import RolloutOutcome
from syncer.status.metrics import SyncerMetrics
from syncer.status.report import EventReporter

__all__ = ["Agent", "PassResult", "Writing"]

log = logging.getLogger("syncer.agent")


class PassTally:
    """The objects one pass wrote, from its events: applied as part of a revision's rollout, and
    re-applied where they had drifted from the revision a cluster already runs."""

    def __init__(self) -> None:
        self.applied = 0
        self.repaired = 0

    def __call__(self, event: PassEvent) -> None:
        if event.step is Step.APPLIED:
            self.applied += event.objects
        elif event.step is Step.DRIFT_REPAIRED:
            self.repaired += event.objects

    def result(self, outcome: RolloutOutcome) -> str:
        """The ``syncer_sync_total`` result of a pass that ended with ``outcome``: ``repaired`` when
        its only writes were drift repairs, else the outcome itself."""
        if outcome is RolloutOutcome.APPLIED and not self.applied and self.repaired:
            return "repaired"
        return str(outcome)


def _only(tells: Callable[[PassEvent], bool] | None, listener: Listener) -> Listener:
    """``listener`` told only the events ``tells`` passes (all without it)."""
    if tells is None:
        return listener

    def told(event: PassEvent) -> None:
        if tells(event):
            listener(event)

    return told


def replica_identity(configured: str) -> str:
    """This replica's name: the one configured, else the host name and a random suffix."""
    return configured or f"{socket.gethostname()}-{uuid.uuid4().hex[:8]}"


@dataclass(frozen=True)
class Writing:
    """How an agent writes to the fleet, given whole when it is built. ``fences``: the fence of each
    cluster's writes (the leader Lease's, each cluster's owner Lease for a sharded replica, or
    ``NO_LEASE`` for an agent run without leader election); ``client``: the options of its
    connections (its user agent names it in the apiservers' audit logs); a sharded replica's
    ``scope`` (the clusters it owns, the revision in force), ``events`` (the clusters its Kubernetes
    Events go to, from the connected ones) and ``tells`` (the notices that are its to send)."""

    fences: FenceOf
    client: ClientOptions = field(default_factory=ClientOptions)
    scope: PassScope | None = None
    events: Callable[[Mapping[str, KubeApi]], Mapping[str, KubeApi]] | None = None
    tells: Callable[[PassEvent], bool] | None = None


class Agent:
    """Everything one agent process needs to take revisions from git to the fleet, built whole:
    ``writing`` says how it writes (its fences first). ``identity`` names this replica (its Lease
    holder, its user agent, who the clusters' history says applied)."""

    def __init__(
        self,
        config: AgentConfig,
        settings: AgentSettings,
        metrics: SyncerMetrics,
        stop: threading.Event,
        writing: Writing,
        *,
        listener: Listener | None = None,
        identity: str = "",
    ) -> None:
        self.config = config
        self.settings = settings
        self.metrics = metrics
        self.stop = stop
        self.writing = writing
        self.identity = replica_identity(identity or settings.shards.identity)
        options = RolloutOptions(
            rollout=config.rollout,
            state_namespace=settings.state_namespace,
            health_poll=settings.health_poll,
            two_person=config.trust.two_person,
            history_keep=config.history_keep,
            actor=f"agent {self.identity}",
        )
        self.connections = KubeconfigConnections(config.clusters, settings.kubeconfig, writing.client)
        # The clusters' connections and states, read once per pass, each write fenced: built first,
        # the gate judges a tip from them (the revisions they record and, with guards, the tip
        # planned as the sync would plan it) and the pass rolls out from the same reads.
        clients: dict[str, KubeApi] = {}  # the pass's connections, opened as it needs them
        reads = ClusterReads(
            self.connections, writing.fences, options, known=tuple(config.clusters), clients=clients
        )
        judge = None if config.guards.empty else RevisionGuard(config.guards, reads.plan_live).require
        self.gate = git_revisions(config.source, config.trust, reads.recorded_revisions, judge)
        waves = self.waves = tuple(wave.name for wave in config.rollout.waves)
        events = writing.events(clients) if writing.events is not None else clients
        self.reporter = EventReporter(metrics, events, settings.state_namespace, waves)
        self.tally = PassTally()
        self.notifier = self._notifier()
        # The fleet page (/ui) follows the same events and the states each pass ends with.
        self.page = FleetPage(waves, config.clusters, lambda: self.gate.current, config.tracing)
        notices = _only(writing.tells, self.notifier) if self.notifier is not None else None
        listeners = to_all(self.reporter, listener, self._tell_tally, notices, self.page.tell)
        self.fleet_pass = FleetPass(self.gate, reads, options, listeners, scope=writing.scope or PassScope())
        self._lock = threading.Lock()
        self.passes = 0

    # -- connections ------------------------------------------------------------------------------

    @property
    def clients(self) -> dict[str, KubeApi]:
        """The clusters connected so far, by name."""
        return self.fleet_pass.clients

    def access(self, cluster: str) -> ClusterAccess:
        return self.connections.access(cluster)

    def _notifier(self) -> Notifier | None:
        """The notifier of the config's receivers (None without any), its counters made at 0."""
        notifications = self.config.notifications
        if not notifications.receivers:
            return None
        counter = self.metrics.notifications
        for name in notifications.receivers:
            for result in RESULTS:
                counter.labels(receiver=name, result=result)
        contexts = {name: access.context for name, access in self.config.clusters.items()}
        return Notifier(notifications, contexts, lambda name, result: counter.labels(name, result).inc())

    def close(self) -> None:
        if self.notifier is not None:
            self.notifier.close(self.config.notifications.settings.timeout)
        self.page.close()
        self.reporter.flush()
        self.connections.close()
        self.fleet_pass.clients.clear()

    # -- passes -----------------------------------------------------------------------------------

    def _tell_tally(self, event: PassEvent) -> None:
        self.tally(event)

    def sync_once(self, stop: threading.Event | None = None) -> PassResult:
        """One pass: poll, verify and render a new tip, and roll the revision in force out; ``stop``
        (default: the agent's) ends it at the next safe point (the leader lost its Lease)."""
        with self._lock:
            self.passes += 1
            self.tally = PassTally()
            started = time.monotonic()
            result = self.fleet_pass.run_pass(stop or self.stop)
            self._count(result, time.monotonic() - started)
            # The rollout's status the clusters record: the page and syncer_wave_state agree with
            # syncer status, also after a restart.
            rollout = rebuild(self.waves, records_of(result.states, result.histories))
            self.reporter.settle(rollout)
            self.page.after_pass(result, rollout)
            return result

    def heal(self, stop: threading.Event | None = None) -> tuple[ChangeSet, ...]:
        """Repair drift on the clusters already on the revision in force (``stop`` as in ``sync_once``)."""
        with self._lock:
            repaired = self.fleet_pass.heal(stop or self.stop)
            self._count_objects(repaired)
            return repaired

    # -- counters ---------------------------------------------------------------------------------

    def _count(self, result: PassResult, seconds: float) -> None:
        """The counters of one pass: the poll, the verification, the sync and each cluster's health."""
        advance, rejection = result.advance, result.advance.rejection
        if rejection is not None and rejection.stage is Stage.SOURCE:
            poll = "error"
        elif advance.outcome is PollOutcome.UNCHANGED or (rejection is not None and not result.new_rejection):
            poll = "unchanged"
        else:
            poll = "changed"
        self.metrics.git_poll.labels(result=poll).inc()
        if rejection is not None and result.new_rejection:
            # A revision judged bad is rejected; git that could not be asked is an error, not a verdict.
            counted = "error" if rejection.stage is Stage.SOURCE else "rejected"
            self.metrics.sync_total.labels(result=counted).inc()
            if rejection.stage is Stage.VERIFY:
                verdict = rejection.error.verdict if isinstance(rejection.error, VerificationError) else ""
                self.metrics.signature_verification.labels(result=verdict or "untrusted").inc()
        if advance.outcome is PollOutcome.ACCEPTED and advance.current is not None:
            self.metrics.signature_verification.labels(result="trusted").inc()
        report = result.report
        if report is None:
            return
        for wave in report.waves:
            self._count_objects(wave.change_sets)
        counted = self.tally.result(report.outcome)
        self.metrics.sync_total.labels(result=counted).inc()
        self.metrics.sync_duration.observe(seconds)
        for name, state in result.states.items():
            self.metrics.cluster_healthy.labels(cluster=name).set(1 if state.health == "healthy" else 0)
            self.metrics.cluster_reachable.labels(cluster=name).set(1)
            self.metrics.cluster_suspended.labels(cluster=name).set(1 if state.suspension.active else 0)
            self.metrics.cluster_pinned.labels(cluster=name).set(1 if state.pin.active else 0)
        for name in result.unreachable:
            suspended = name in result.states and result.states[name].suspension.active
            self.metrics.cluster_reachable.labels(cluster=name).set(1 if suspended else 0)
        if result.synced:
            self.metrics.set_revision(report.revision)
        log.info("sync %s", counted, extra={"revision": report.revision, "detail": report.message})

    def _count_objects(self, change_sets: tuple[ChangeSet, ...]) -> None:
        for change_set in change_sets:
            for action, count in change_set.counts().items():
                self.metrics.apply_objects.labels(cluster=change_set.cluster, action=action).inc(count)
