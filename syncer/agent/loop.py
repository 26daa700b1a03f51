"""The agent process: HTTP endpoints always, the scheduled jobs only while holding the leader lease
(or, for a replica of a shard group, at once, acting on the clusters it owns: ``syncer.agent.sharding``).

While leading, apscheduler runs two jobs: ``poll`` (every ``interval`` seconds with ``jitter``, and at
once when the git webhook fires) and ``drift`` (every ``drift_interval`` seconds). A webhook that
comes while a poll's pass runs is queued and told so: the poll job runs another pass as soon as its
pass ends, once however many webhooks came. Losing the lease
or a stop request (SIGTERM) stops the jobs: a rollout in progress halts at the next safe point (between
clusters or while waiting on a gate), its decisions already recorded in the clusters.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from apscheduler.schedulers.background import BackgroundScheduler

from syncer.agent.http import POLL_STARTS, AgentServer, Endpoints, HookAnswer, ProbeServer
from syncer.agent.service import Agent, Writing, replica_identity
from syncer.agent.sharding import ShardedReplica, sharded
from syncer.agent.ui import PageRoutes
from syncer.config import AgentConfig
from syncer.config.loading import read_agent_file
from syncer.config.settings import AgentSettings
from syncer.controller.model import CONTROLLER_LEASE, ControllerOptions
from syncer.controller.runner import run_controller
from syncer.errors import ConfigError, Conflict, KubeError, NotFound
from syncer.kube import ClusterClient
from syncer.leader.election import LeaderElector
from syncer.leader.fence import NO_LEASE, Fence, everywhere
from syncer.status.metrics import SyncerMetrics

log = logging.getLogger("syncer.agent")

HOOK_QUEUED = HookAnswer(True, "a pass is running; the poll runs as soon as it ends")
HOOK_STANDBY = HookAnswer(False, "this replica does not lead; the leader polls on its own")


def start_controllers(agent: Agent, settings: AgentSettings, stop: threading.Event) -> list[threading.Thread]:
    """Start the embedded controllers the settings ask for, each in a thread that ends with ``stop``:
    one for the home cluster (leader-elected on a Lease of its own), or one per cluster of the config
    (local fleets), each acting only while the agent's fence of its cluster is open (the agent leads,
    or, for a sharded replica, owns the cluster) and passing it before every write."""
    chosen = settings.controller
    if not chosen.enabled:
        return []
    follows: list[Fence | None]
    if chosen.every_cluster:
        accesses = {name: agent.access(name) for name in agent.config.clusters}
        targets = [(agent.connections.kubeconfig_of(a), a.context, name) for name, a in accesses.items()]
        follows = [agent.writing.fences(name) for name in accesses]
    else:
        targets = [(settings.home.kubeconfig or settings.kubeconfig, settings.home.context, "")]
        follows = [None]
    threads = []
    # One metrics registry holds one controller's collectors; on a local fleet only the first reports.
    registries = [agent.metrics.registry] + [None] * (len(targets) - 1)
    for (kubeconfig, context, cluster), registry, fence in zip(targets, registries, follows, strict=True):
        options = ControllerOptions(
            kubeconfig=kubeconfig,
            context=context,
            cluster=cluster,
            watch_namespace=chosen.watch_namespace,
            workers=chosen.workers,
            topology=chosen.topology,
            leader_elect=fence is None,
            lease=replace(settings.lease, name=CONTROLLER_LEASE.name),
            # Its requests name the agent it runs in (the apiservers' audit logs tell agents apart).
            identity=agent.identity,
            # Local fleets: short watches so the process stops promptly when asked.
            watch_timeout_seconds=10 if chosen.every_cluster else 60,
        )
        thread = threading.Thread(
            target=run_controller,
            args=(options, stop, registry, fence),
            daemon=True,
            name=f"controller-{cluster or context or 'home'}",
        )
        thread.start()
        threads.append(thread)
    return threads


def ensure_lease_namespace(client: ClusterClient, namespace: str) -> None:
    """Create the Lease's namespace when it is missing: the elector cannot create a Lease without it
    (replicas racing to create it both succeed, one of them finding it already made)."""
    try:
        client.get("v1", "Namespace", namespace)
        return
    except NotFound:
        pass
    with contextlib.suppress(Conflict):
        client.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
        log.info("created the lease namespace %s", namespace)


def read_secret(path: Path | None) -> str:
    """The webhook's shared secret from its file ("" without one: no webhook); ``ConfigError`` naming
    the file when it is not a regular, small, UTF-8 file."""
    if path is None:
        return ""
    try:
        return read_agent_file(path).decode("utf-8").strip()
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: the webhook secret is not UTF-8 text") from None


@dataclass(frozen=True)
class Leadership:
    """How a leader-elected agent leads: its ``elector`` of the fleet's leader Lease, through the
    ``home`` cluster's client, and the ``fence`` every write of its agent passes (open while it
    holds the Lease for longer than the time the elector keeps leading without a renewal would
    leave: a frozen leader cannot write)."""

    home: ClusterClient
    elector: LeaderElector
    fence: Fence

    @classmethod
    def of(cls, settings: AgentSettings, identity: str) -> Leadership:
        home = settings.home
        client = ClusterClient.from_kubeconfig(home.kubeconfig or settings.kubeconfig, home.context)
        elector = LeaderElector(client, settings.lease, identity)
        margin = settings.lease.duration - settings.lease.renew_deadline
        return cls(client, elector, elector.fence(margin))


def agent_process(
    config: AgentConfig, settings: AgentSettings, metrics: SyncerMetrics, stop: threading.Event
) -> AgentProcess:
    """The agent process ``settings`` ask for, built whole: one replica of a sharded group, one
    agent leading by the fleet's Lease, or (without leader election) one agent holding no Lease
    (``NO_LEASE``: a cluster whose state records a fencing token refuses it)."""
    if settings.shards.group:
        replica = ShardedReplica(config, settings, metrics, stop)
        return AgentProcess(replica.agent, settings, stop, replica=replica)
    if not settings.leader_elect:
        agent = Agent(config, settings, metrics, stop, Writing(fences=everywhere(NO_LEASE)))
        return AgentProcess(agent, settings, stop)
    identity = replica_identity(settings.shards.identity)
    leadership = Leadership.of(settings, identity)
    fence = leadership.fence
    agent = Agent(config, settings, metrics, stop, Writing(fences=everywhere(fence)), identity=identity)
    return AgentProcess(agent, settings, stop, leadership=leadership)


class AgentProcess:
    """Runs an Agent until ``stop`` is set: as the ``replica`` of a sharded group, leading by its
    ``leadership``, or (neither) alone."""

    def __init__(
        self,
        agent: Agent,
        settings: AgentSettings,
        stop: threading.Event,
        *,
        replica: ShardedReplica | None = None,
        leadership: Leadership | None = None,
    ) -> None:
        self.agent = agent
        self.settings = settings
        self.stop = stop
        self.replica = replica
        self.leadership = leadership
        self.leading = threading.Event()
        self._scheduler: BackgroundScheduler | None = None
        self._threads: list[threading.Thread] = []
        # Whether the poll job runs a pass, and whether a webhook asked for another meanwhile.
        self._poll_lock = threading.Lock()
        self._polling = False
        self._queued = False

    # -- probes and webhook -----------------------------------------------------------------------

    def _healthy(self) -> tuple[bool, str]:
        return (not self.stop.is_set(), "stopping" if self.stop.is_set() else "alive")

    def _ready(self) -> tuple[bool, str]:
        if self.stop.is_set():
            return False, "stopping"
        role = "leader" if self.leading.is_set() else "standby"
        return True, f"{role}; {self.agent.passes} pass(es)"

    def _hook(self) -> HookAnswer:
        scheduler = self._scheduler
        if scheduler is None or not self.leading.is_set():
            return HOOK_STANDBY
        with self._poll_lock:
            if self._polling:
                self._queued = True
                return HOOK_QUEUED
        scheduler.modify_job("poll", next_run_time=dt.datetime.now(dt.UTC))
        return POLL_STARTS

    # -- jobs -------------------------------------------------------------------------------------

    def _guarded(self, name: str, job: Callable[[], object]) -> Callable[[], None]:
        def run() -> None:
            try:
                job()
            except Exception:
                log.exception("%s failed", name)

        return run

    def _poll(self, stop_leading: threading.Event) -> None:
        """The poll job: one pass, then one more at once while a webhook came during the last."""
        with self._poll_lock:
            self._polling, self._queued = True, False
        try:
            while True:
                self._guarded("poll", lambda: self.agent.sync_once(stop_leading))()
                with self._poll_lock:
                    if not self._queued or stop_leading.is_set():
                        return
                    self._queued = False
                log.info("polling again at once: a webhook came during the pass")
        finally:
            with self._poll_lock:
                self._polling = False

    def _lead(self, stop_leading: threading.Event) -> None:
        self.leading.set()
        self.agent.metrics.leader.set(1)
        scheduler = BackgroundScheduler(timezone=dt.UTC)
        scheduler.add_job(
            self._poll,
            "interval",
            args=(stop_leading,),
            seconds=self.settings.interval,
            jitter=self.settings.jitter or None,
            id="poll",
            next_run_time=dt.datetime.now(dt.UTC),
            max_instances=1,
            coalesce=True,
        )
        scheduler.add_job(
            self._guarded("drift", lambda: self.agent.heal(stop_leading)),
            "interval",
            seconds=self.settings.drift_interval,
            id="drift",
            max_instances=1,
            coalesce=True,
        )
        self._scheduler = scheduler
        scheduler.start()
        log.info("leading: polling every %ss", self.settings.interval)
        try:
            stop_leading.wait()
        finally:
            self._scheduler = None
            scheduler.shutdown(wait=True)
            self.agent.metrics.leader.set(0)
            self.leading.clear()
            log.info("stopped leading")

    # -- the process ------------------------------------------------------------------------------

    def _start_controllers(self) -> None:
        self._threads += start_controllers(self.agent, self.settings, self.stop)

    def run(self) -> None:
        secret = read_secret(self.settings.hook_secret_file)
        refused = self.agent.metrics.http_refused
        endpoints = Endpoints(
            self.agent.metrics.registry,
            self._healthy,
            self._ready,
            secret,
            self._hook,
            lambda reason: refused.labels(reason=reason).inc(),
            PageRoutes(self.agent.page, secret),
        )
        server = AgentServer(endpoints, self.settings.http)
        try:
            probes = ProbeServer(endpoints, self.settings.http)
        except ConfigError:
            server.stop()
            raise
        server.start()
        probes.start()
        log.info("serving /metrics, /healthz, /readyz and /hooks/git on port %s", server.port)
        log.info("serving the fleet page /ui on port %s", server.port)
        log.info("serving the probes /healthz and /readyz on port %s", probes.port)
        log.info("listening on %s", server.host)
        self._start_controllers()
        try:
            self._run()
        finally:
            self.agent.page.close()
            server.stop()
            probes.stop()
            for thread in self._threads:
                thread.join(timeout=70)
            self.agent.close()
            if self.replica is not None:
                self.replica.close()
            if self.leadership is not None:
                self.leadership.home.close()

    def _run(self) -> None:
        if self.replica is not None:
            # One replica of a group: act at once, on the clusters this replica owns.
            with sharded(self.replica, self.stop):
                self._lead(self.stop)
            return
        if self.leadership is None:
            self._lead(self.stop)  # one agent by the operator's word: no Lease
            return
        client, elector = self.leadership.home, self.leadership.elector
        while not self.stop.is_set():
            # Losing the Lease, or its cluster, returns this replica to standby; it keeps
            # serving HTTP and trying again, it never exits for it.
            try:
                ensure_lease_namespace(client, self.settings.lease.namespace)
                elector.run(self.stop, self._lead)
            except KubeError as err:
                log.warning("the Lease's cluster does not answer: %s; trying again", err)
                self.stop.wait(self.settings.lease.retry_period)
