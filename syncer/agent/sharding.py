"""Sharded ``syncer run`` replicas: the replicas of one group split the clusters of the agent config
between them through Leases (``syncer.leader.shards``) and each acts only on the clusters it owns.

``ShardedReplica`` builds one replica and its agent whole: the fence of each cluster is its owner
Lease (each write fenced on it, and the cluster's state records that Lease's token), the pass's
rollout applies, checks and records only the clusters this replica owns (``PassScope.owns``) and judges
the others from the sync states their owners record, and Kubernetes Events are written only to
owned clusters. ``run`` renews the Leases every ``retry_period`` until stopped, then gives every
Lease up at once so the others take over without waiting. Clusters the config does not list are
never written by a sharded replica: they have no owner Lease.

Must not: decide anything about the rollout (that is the engine's) or talk to other replicas (all
they share is in Leases).
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import replace
from typing import Any

from syncer import __version__
from syncer.agent.service import Agent, Writing, replica_identity
from syncer.config import AgentConfig
from syncer.config.settings import AgentSettings
from syncer.domain.progress import Listener, PassEvent
from syncer.engine.connections import KubeconfigConnections
from syncer.engine.fleet_pass import PassScope
from syncer.engine.in_force import POLICY_NOTE, InForce, policy_fingerprint
from syncer.errors import Conflict, FencedOut, KubeError, NotFound
from syncer.kube import ApplyOptions, ClientOptions, ClusterClient, KubeApi, KubeObject
from syncer.leader.fence import UNFENCED, FencedKube
from syncer.leader.shards import ShardOptions, Shards, ShardView
from syncer.status.metrics import SyncerMetrics
from syncer.status.revision_record import RevisionRecord

log = logging.getLogger("syncer.agent")


def user_agent(identity: str) -> str:
    """The user agent of a writer's requests (a sharded replica, a ``sync --once`` pass): the
    apiserver's audit log names the writer."""
    return f"syncer/{__version__} replica/{identity}"


class _EventsKube(FencedKube):
    """A fenced client for Events: a write the fence refuses is one Event not written (the cluster
    moved to another replica meanwhile), not an error of the pass."""

    def create(self, body: Mapping[str, Any]) -> KubeObject:
        try:
            return self.inner.create(body)
        except FencedOut as err:
            raise KubeError(str(err), cluster=self.cluster) from err

    def replace(self, body: Mapping[str, Any]) -> KubeObject:
        try:
            return self.inner.replace(body)
        except FencedOut as err:
            raise KubeError(str(err), cluster=self.cluster) from err

    def apply(self, body: Mapping[str, Any], options: ApplyOptions = ApplyOptions()) -> KubeObject:
        try:
            return self.inner.apply(body, options)
        except FencedOut as err:
            raise KubeError(str(err), cluster=self.cluster) from err


class _Owned(Mapping[str, KubeApi]):
    """The connected clusters this replica owns at the moment of the lookup (for Events)."""

    def __init__(self, clients: Mapping[str, KubeApi], owns: Callable[[str], bool]) -> None:
        self._clients = clients
        self._owns = owns

    def __getitem__(self, cluster: str) -> KubeApi:
        if not self._owns(cluster):
            raise KeyError(cluster)
        return _EventsKube(self._clients[cluster], UNFENCED)

    def __iter__(self) -> Iterator[str]:
        return iter([c for c in list(self._clients) if self._owns(c)])

    def __len__(self) -> int:
        return sum(1 for _ in self)


class ShardedReplica:
    """One replica of a group, built whole: its Shards over the clusters of the agent config, and
    the agent whose passes act only on the clusters it owns (``agent``), renewed by ``run``."""

    def __init__(
        self,
        config: AgentConfig,
        settings: AgentSettings,
        metrics: SyncerMetrics,
        stop: threading.Event,
        listener: Listener | None = None,
    ) -> None:
        lease, group = settings.lease, settings.shards.group
        self.identity = replica_identity(settings.shards.identity)
        self.settings = settings
        names = sorted(config.clusters)
        if not names:
            raise KubeError(
                f"replica group {group}: a sharded replica splits the clusters listed under the config's "
                "clusters:, and it lists none"
            )
        # A write begun just before the fence closed must end before another replica may take the
        # cluster over: lease_duration - renew_deadline later. Requests time out well within that.
        margin = lease.duration - lease.renew_deadline
        client = ClientOptions(user_agent=user_agent(self.identity))
        client = replace(client, timeout=min(client.timeout, max(1.0, margin * 0.8)))
        # The Leases have clients of their own, never fenced; the pass's are each fenced on its
        # cluster's owner Lease.
        self._connections = KubeconfigConnections(config.clusters, settings.kubeconfig, client)
        self.raw = {name: self._connections(name) for name in names}
        home = settings.home
        self.home = ClusterClient.from_kubeconfig(
            home.kubeconfig or settings.kubeconfig, home.context, "home", client
        )
        options = ShardOptions(
            group=group,
            namespace=lease.namespace,
            owner_namespace=settings.state_namespace,
            identity=self.identity,
            lease_duration=lease.duration,
            renew_deadline=lease.renew_deadline,
            retry_period=lease.retry_period,
            notes={POLICY_NOTE: policy_fingerprint(config.rollout)},
        )
        self.shards = Shards(self.home, self.raw, options)
        self._ready: set[tuple[str, str]] = set()
        self.owned_metric = metrics.cluster_owner
        self._exported: set[tuple[str, str]] = set()
        # The replicas roll out one revision in force, recorded beside their Leases in the home cluster.
        record = RevisionRecord(self.home, lease.namespace, self.identity)
        in_force = InForce(record, policy_fingerprint(config.rollout), self._policies)
        # A cluster missing from the config has no owner Lease: its writes are always refused.
        writing = Writing(
            fences=self.shards.fence,
            client=client,
            scope=PassScope(owns=self.shards.holds, in_force=in_force),
            events=lambda clients: _Owned(clients, self.shards.holds),
            tells=self.tells,
        )
        self.agent = Agent(
            config, settings, metrics, stop, writing, listener=listener, identity=self.identity
        )

    def tells(self, event: PassEvent) -> bool:
        """Whether this replica tells people about ``event`` (each notice is sent by one replica):
        an event about a cluster when it holds the cluster, or the shared assignment gives the
        cluster to it (a cluster no replica can hold while it does not answer); an event about a
        wave or the fleet, which every replica sees, when the assignment gives it the fleet's first
        cluster. Before its first round, and while replicas see the members differently (one joins
        or leaves), a notice may be sent twice or, for the waves, by none."""
        cluster = event.cluster or min(self.raw)
        if event.cluster and self.shards.holds(cluster):
            return True
        return self.shards.view.assignment.get(cluster, self.identity) == self.identity

    def _policies(self) -> dict[str, str]:
        """The rollout policy fingerprint each live replica publishes, by identity."""
        return {member: notes.get(POLICY_NOTE, "") for member, notes in self.shards.view.notes.items()}

    # -- rounds -----------------------------------------------------------------------------------

    def _namespace(self, api: KubeApi, namespace: str) -> None:
        """Create ``namespace`` in a cluster once, when it is missing (a Lease needs it)."""
        if (api.cluster, namespace) in self._ready:
            return
        try:
            api.get("v1", "Namespace", namespace)
        except NotFound:
            with contextlib.suppress(Conflict):
                api.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
        self._ready.add((api.cluster, namespace))

    def round(self) -> ShardView:
        """One round of the Leases; the namespaces of the Leases this replica is about to take are made
        first (only in clusters assigned to it, so no other replica's cluster is written)."""
        with contextlib.suppress(KubeError):
            self._namespace(self.home, self.settings.lease.namespace)
        for cluster, owner in self.shards.view.assignment.items():
            if owner == self.identity and not self.shards.holds(cluster):
                try:
                    self._namespace(self.raw[cluster], self.settings.state_namespace)
                except KubeError as err:
                    log.warning("cannot prepare the owner lease of %s: %s", cluster, err)
        before = self.shards.view.held
        view = self.shards.round()
        if view.held != before:
            log.info(
                "replica %s holds %d of %d cluster(s)",
                self.identity,
                len(view.held),
                len(self.raw),
                extra={"detail": ",".join(sorted(view.held))},
            )
        self._export(view)
        return view

    def _export(self, view: ShardView) -> None:
        """``syncer_cluster_owner{cluster,replica}``: 1 for each cluster's owner as this replica sees it
        (itself for the clusters it holds, else the replica the shared assignment gives it to)."""
        now = {
            (cluster, self.identity if cluster in view.held else view.assignment.get(cluster, ""))
            for cluster in self.raw
        }
        for cluster, replica in self._exported - now:
            with contextlib.suppress(KeyError):
                self.owned_metric.remove(cluster, replica)
        for cluster, replica in now:
            self.owned_metric.labels(cluster=cluster, replica=replica).set(1)
        self._exported = now

    def run(self, stop: threading.Event) -> None:
        """Renew the Leases every ``retry_period`` until ``stop``; then give them all up."""
        period = self.settings.lease.retry_period
        try:
            while True:
                try:
                    self.round()
                except Exception:
                    log.exception("shard round failed")
                if stop.wait(period):
                    return
        finally:
            self.shards.leave()
            log.info("replica %s left group %s", self.identity, self.settings.shards.group)

    def close(self) -> None:
        self.home.close()
        self._connections.close()


@contextlib.contextmanager
def sharded(replica: ShardedReplica, stop: threading.Event) -> Iterator[ShardedReplica]:
    """``replica`` renewing its Leases while inside, in a thread from the first round on; on exit
    (after the caller's passes have ended, or ``stop``) every Lease is given up."""
    quit_renewing = threading.Event()
    replica.round()
    thread = threading.Thread(target=replica.run, args=(quit_renewing,), daemon=True, name="shards")
    thread.start()
    log.info("replica %s of group %s", replica.identity, replica.settings.shards.group)
    try:
        yield replica
    finally:
        quit_renewing.set()
        thread.join(timeout=replica.settings.lease.duration * 2)
