"""Watch loops -> work queue -> workers, until a stop event is set.

Watched: RedisClusters, the children they own (StatefulSets, Services, ConfigMaps, PDBs, found by their
controller owner reference) and the Secrets they name. Every event becomes the key ``namespace/name``
of the RedisCluster concerned; the queue de-duplicates keys and backs failed ones off exponentially.

With leader election the replica acts only while it holds the Lease, proved before each act: every
write through the ``KubeApi`` seam passes the Lease's fence (``syncer.leader.fence.FencedKube``), and so
does every command to a Redis server (``TopologyOptions.fence``). The fence measures the Lease on this
process's monotonic clock, so a leader frozen (SIGSTOP) past its Lease finds it lost the moment it runs
again. The first ``FencedOut`` stops every worker and watch: the replica writes nothing more.

An agent's embedded controllers do not elect a leader of their own: each follows a fence the agent
keeps for its cluster (``run_controller``'s ``follow``: the agent's leader Lease, or the cluster's
owner Lease of a sharded replica), through the same ``FencedKube`` and ``TopologyOptions.fence``. It
runs only while that fence is open (``syncer.leader.follow``), and a new one is started each time the
agent leads (or owns the cluster) again.
"""

from __future__ import annotations

import logging
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from prometheus_client import CollectorRegistry

from syncer.controller.logs import ContextLogger
from syncer.controller.metrics import Metrics
from syncer.controller.model import API_VERSION, FIELD_MANAGER, KIND, ControllerOptions
from syncer.controller.queue import WorkQueue
from syncer.controller.reconciler import Reconciler
from syncer.controller.status import TopologyVerdict
from syncer.errors import FencedOut, KubeError
from syncer.kube import ClientOptions, ClusterClient, KubeApi
from syncer.leader import LeaderElector
from syncer.leader.fence import UNFENCED, Fence, FencedKube
from syncer.leader.follow import follow as follow_fence

if TYPE_CHECKING:
    from syncer.controller.health_probe import HealthWatch

log = logging.getLogger("syncer.controller")

CHILD_KINDS = (
    ("apps/v1", "StatefulSet"),
    ("v1", "Service"),
    ("v1", "ConfigMap"),
    ("policy/v1", "PodDisruptionBudget"),
)
KeysOf = Callable[[Mapping[str, Any]], Iterable[str]]


def _key(namespace: str, name: str) -> str:
    return f"{namespace}/{name}"


def owner_keys(obj: Mapping[str, Any]) -> list[str]:
    """The RedisCluster that controls ``obj``, as a queue key."""
    meta = obj.get("metadata") or {}
    return [
        _key(meta.get("namespace", ""), ref["name"])
        for ref in meta.get("ownerReferences") or ()
        if ref.get("kind") == KIND and str(ref.get("apiVersion", "")).startswith("redis.syncer.dev/")
    ]


class Controller:
    """The controller's moving parts for one cluster; ``run`` blocks until ``stop`` is set."""

    def __init__(
        self,
        kube: KubeApi,
        options: ControllerOptions = ControllerOptions(),
        registry: CollectorRegistry | None = None,
        clock: Callable[[], float] = time.time,
        fence: Fence = UNFENCED,
    ) -> None:
        self._kube = kube
        self._options = options
        self.queue = WorkQueue()
        # With the topology on, Redis itself is watched between reconciles: an outage wakes its key.
        self.health = self._health_watch() if options.topology else None
        self.reconciler = Reconciler(kube, options, clock, fence, self.health)
        # Set at the first FencedOut: this replica may no longer act, every loop ends.
        self.fenced_out = threading.Event()
        self.metrics = Metrics(registry) if registry is not None else None
        self._secret_users: dict[str, set[str]] = {}
        self._lock = threading.Lock()
        self._cluster = options.cluster or options.context or kube.cluster
        self._log = ContextLogger(log, {"cluster": self._cluster})

    # -- event to key ----------------------------------------------------------------------------

    def _cluster_keys(self, obj: Mapping[str, Any]) -> list[str]:
        meta = obj.get("metadata") or {}
        key = _key(meta.get("namespace", ""), meta.get("name", ""))
        spec = obj.get("spec") or {}
        names = {
            ((spec.get(field) or {}).get("secretRef") or {}).get("name") for field in ("auth", "tls")
        } - {None}
        with self._lock:
            for users in self._secret_users.values():
                users.discard(key)
            for name in names:
                self._secret_users.setdefault(_key(meta.get("namespace", ""), str(name)), set()).add(key)
        return [key]

    def _secret_keys(self, obj: Mapping[str, Any]) -> list[str]:
        meta = obj.get("metadata") or {}
        with self._lock:
            return sorted(self._secret_users.get(_key(meta.get("namespace", ""), meta.get("name", "")), ()))

    def _health_watch(self) -> HealthWatch:
        from syncer.controller.health_probe import HealthWatch, ProbeOptions

        options = self._options
        probe = ProbeOptions(
            interval=options.health_interval,
            timeout=options.health_timeout,
            fail_rounds=options.health_fail_rounds,
            recover_rounds=options.health_recover_rounds,
        )
        return HealthWatch(probe, self._outage)

    def _outage(self, key: str, outage: TopologyVerdict | None) -> None:
        """The health watch saw an outage start, change or end: its status at once (a reconcile of
        the key may be busy converging), then a reconcile."""
        if outage is not None:
            namespace, _, name = key.partition("/")
            fields = {"namespace": namespace, "rediscluster": name}
            try:
                self.reconciler.tell_outage(namespace, name, outage, ContextLogger(log, fields))
            except FencedOut as err:
                self.fenced_out.set()
                self._log.warning("stopping: %s", err)
                return
            except KubeError as err:
                self._log.warning("could not write the outage of %s: %s", key, err)
        self.queue.add(key)

    # -- loops -----------------------------------------------------------------------------------

    def run(self, stop: threading.Event) -> None:
        watches: list[tuple[str, Callable[[threading.Event], None]]] = [
            ("watch-rediscluster", lambda s: self._watch(API_VERSION, KIND, self._cluster_keys, s)),
            ("watch-secret", lambda s: self._watch("v1", "Secret", self._secret_keys, s)),
        ]
        for api_version, kind in CHILD_KINDS:
            watches.append((f"watch-{kind.lower()}", self._child_watch(api_version, kind)))
        joined: list[tuple[str, Callable[[threading.Event], None]]] = [
            (f"worker-{i}", self._work) for i in range(max(self._options.workers, 1))
        ]
        joined.append(("resync", self._resync))
        if self.health is not None:
            joined.append(("health", self.health.run))

        halted = threading.Event()  # ``stop``, or this replica fenced out

        def thread(name: str, fn: Callable[[threading.Event], None]) -> threading.Thread:
            return threading.Thread(target=fn, args=(halted,), name=f"controller-{name}", daemon=True)

        watching = [thread(n, fn) for n, fn in watches]
        working = [thread(n, fn) for n, fn in joined]
        self._log.info("controller starting", extra={"watch_namespace": self._options.watch_namespace or "*"})
        for started in (*watching, *working):
            started.start()
        while not self.fenced_out.is_set() and not stop.wait(0.1):
            pass
        halted.set()
        self.queue.shutdown()
        # Workers finish the reconcile in hand; watches blocked on the server are not waited for: they
        # are daemon threads that see the stop at their next event or when the server ends the watch.
        deadline = time.monotonic() + 15
        for worker in working:
            worker.join(max(deadline - time.monotonic(), 0.1))
        self._log.info("controller stopped")

    def _child_watch(self, api_version: str, kind: str) -> Callable[[threading.Event], None]:
        def loop(stop: threading.Event) -> None:
            self._watch(api_version, kind, owner_keys, stop)

        return loop

    def _watch(self, api_version: str, kind: str, keys_of: KeysOf, stop: threading.Event) -> None:
        namespace = self._options.watch_namespace
        while not stop.is_set():
            try:
                listed = self._kube.list(api_version, kind, namespace=namespace)
                for item in listed.items:
                    for key in keys_of(item):
                        self.queue.add(key)
                version = listed.resource_version
                while not stop.is_set():
                    for event in self._kube.watch(
                        api_version,
                        kind,
                        namespace=namespace,
                        resource_version=version,
                        timeout_seconds=self._options.watch_timeout_seconds,
                    ):
                        version = (event.object.get("metadata") or {}).get("resourceVersion") or version
                        if event.type != "BOOKMARK":
                            for key in keys_of(event.object):
                                self.queue.add(key)
                        if stop.is_set():
                            break
            except KubeError as err:
                self._log.warning("watch of %s ended: %s; listing again", kind, err)
                stop.wait(1.0)

    def _resync(self, stop: threading.Event) -> None:
        while not stop.wait(self._options.resync_seconds):
            try:
                listed = self._kube.list(API_VERSION, KIND, namespace=self._options.watch_namespace)
            except KubeError as err:
                self._log.warning("resync failed: %s", err)
                continue
            for item in listed.items:
                for key in self._cluster_keys(item):
                    self.queue.add(key)

    def _work(self, stop: threading.Event) -> None:
        while True:
            key = self.queue.get(timeout=0.5)
            if key is None:
                if stop.is_set():
                    return
                continue
            try:
                self.process(key)
            finally:
                self.queue.done(key)

    def process(self, key: str) -> None:
        """Reconcile one key, record metrics, and requeue it as the outcome (or failure) says."""
        namespace, _, name = key.partition("/")
        reconcile_id = uuid.uuid4().hex[:12]
        fields = {"reconcile_id": reconcile_id, "namespace": namespace, "rediscluster": name}
        adapter = ContextLogger(log, {"cluster": self._cluster, **fields})
        started = time.monotonic()
        if self.fenced_out.is_set():
            return
        try:
            outcome = self.reconciler.reconcile(namespace, name, adapter)
        except FencedOut as err:
            self.fenced_out.set()
            adapter.error("stopping: %s", err)
            return
        except Exception as err:  # a worker must survive any one object's failure
            delay = self.queue.add_rate_limited(key)
            adapter.error(
                "reconcile failed, retrying in %.2fs: %s", delay, err, exc_info=not isinstance(err, KubeError)
            )
            if self.metrics is not None:
                self.metrics.observe("sync", "error", time.monotonic() - started)
            return
        if outcome.ready or outcome.requeue_after is None:
            self.queue.forget(key)
            if outcome.requeue_after is not None:
                self.queue.add_after(key, outcome.requeue_after)
        else:
            # Not Ready yet: what it waits for (servers starting, gossip, a replica's sync) sends
            # no Kubernetes event, so it is looked at again soon, then less often up to its interval.
            self.queue.add_backing_off(key, outcome.requeue_after)
        if self.metrics is not None:
            self.metrics.observe(outcome.phase, outcome.result, time.monotonic() - started)
            if outcome.phase in ("absent", "finalize"):
                self.metrics.forget(namespace, name)
            elif outcome.status is not None:
                self.metrics.set_status(namespace, name, outcome.status, outcome.desired_pods)
        adapter.debug("reconciled: %s %s", outcome.phase, outcome.result)


def _following(
    kube: KubeApi,
    options: ControllerOptions,
    stop: threading.Event,
    registry: CollectorRegistry | None,
    fence: Fence,
) -> None:
    """A controller (a new one each time) while ``fence`` is open, until ``stop``."""
    fenced = FencedKube(kube, fence)
    metrics = Metrics(registry) if registry is not None else None

    def lead(halt: threading.Event) -> None:
        controller = Controller(fenced, options, None, fence=fence)
        controller.metrics = metrics
        controller.run(halt)

    cluster = options.cluster or options.context or kube.cluster
    follow_fence(fence, stop, lead, options.lease.retry_period, f"the controller of {cluster}")


def run_controller(
    options: ControllerOptions,
    stop: threading.Event,
    registry: CollectorRegistry | None = None,
    follow: Fence | None = None,
) -> None:
    """Run the controller against ``options.context`` of ``options.kubeconfig`` until ``stop`` is set.

    With ``follow`` it acts only while that fence (kept by someone else: its agent) is open, and every
    write passes it; else with ``leader_elect`` it first waits for the Lease, and returns when it
    loses it. Safe to start in a thread; it builds and closes its own client.
    """
    identity = options.identity or f"{socket.gethostname()}-{uuid.uuid4().hex[:8]}"
    options = replace(options, identity=identity)
    client = ClientOptions(user_agent=f"{FIELD_MANAGER}/{identity}")
    kube = ClusterClient.from_kubeconfig(options.kubeconfig, options.context, options=client)
    try:
        if follow is not None:
            _following(kube, options, stop, registry, follow)
            return
        if not options.leader_elect:
            Controller(kube, options, registry).run(stop)
            return
        # The Lease's own client must write regardless of the fence; every other write passes it.
        lease_kube = ClusterClient.from_kubeconfig(options.kubeconfig, options.context, options=client)
        try:
            elector = LeaderElector(lease_kube, options.lease, identity)
            fence = elector.fence(options.lease.duration - options.lease.renew_deadline)
            controller = Controller(FencedKube(kube, fence), options, registry, fence=fence)
            elector.run(stop, controller.run)
        finally:
            lease_kube.close()
    finally:
        kube.close()
