"""What the revision gate and the pass both read of the clusters: ``ClusterReads``.

It owns the connections to the clusters (each write through them passes the cluster's fence) and
each cluster's sync state, read at most once per pass (``begin`` starts a pass, ``end`` forgets its
reads). From those reads it answers the two questions the revision gate asks while it judges a tip:
the revisions the clusters record (``recorded_revisions``: every tip must descend from them) and a
tip's cluster planned as the sync would plan it (``plan_live``, for the guard policy). It is built
before both the gate and the pass and given to each, so the gate judges with what the clusters
record from its first poll, and the pass rolls out from the same reads.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Collection

from syncer.apply import with_retries
from syncer.domain.objects import ClusterManifests
from syncer.domain.plans import ClusterPlan
from syncer.engine.diff import plan_live_cluster
from syncer.engine.rollout_model import RolloutOptions
from syncer.errors import KubeError, SyncerError
from syncer.kube import KubeApi
from syncer.leader.fence import FencedKube, FenceOf
from syncer.status.state_store import LoadedState, StateStore

Connect = Callable[[str], KubeApi]
"""Opens the connection to one cluster, by name; SyncerError when it cannot."""


class ClusterReads:
    """The clusters' connections and sync states as one pass reads them (see the module docstring).

    ``connect`` opens the connection to one cluster; ``fences`` is each cluster's fence (required:
    ``NO_LEASE`` for a writer that holds no Lease); ``known`` are the agent config's clusters, whose
    records join the history check of every tip; ``clients`` is where the connections opened are
    kept (shared with who writes Events)."""

    def __init__(
        self,
        connect: Connect,
        fences: FenceOf,
        options: RolloutOptions,
        *,
        known: Collection[str] = (),
        clients: dict[str, KubeApi] | None = None,
    ) -> None:
        self.connect = connect
        self.fences = fences
        self.options = options
        self.known = tuple(known)
        self.clients: dict[str, KubeApi] = clients if clients is not None else {}
        self.stop = threading.Event()
        self.read: dict[str, LoadedState] = {}
        self.unread: dict[str, KubeError] = {}
        self.unconnected: dict[str, str] = {}
        self._opening = threading.RLock()  # clients and states are opened from the guard's threads too

    def begin(self, stop: threading.Event) -> None:
        """A new pass: every cluster is connected to and read afresh; ``stop`` ends a read's retries."""
        self.stop = stop
        self.read, self.unread, self.unconnected = {}, {}, {}

    def end(self) -> None:
        """The pass is over: its reads are not used again (the connections that failed stay told)."""
        self.read, self.unread = {}, {}

    def client(self, cluster: str) -> KubeApi:
        """The connection to ``cluster``, opened on first use and kept; each write through it passes
        the fence first."""
        with self._opening:
            if cluster not in self.clients:
                self.clients[cluster] = FencedKube(self.connect(cluster), self.fences(cluster))
            return self.clients[cluster]

    def connected(self, cluster: str) -> bool:
        """Open the connection to ``cluster`` (once per pass at most); False when it cannot be."""
        with self._opening:
            if cluster in self.unconnected:
                return False
            try:
                self.client(cluster)
            except SyncerError as err:
                self.unconnected[cluster] = f"cannot connect: {err}"
                return False
            return True

    def load(self, cluster: str) -> LoadedState | None:
        """``cluster``'s stored state, read at most once per pass (retried while its apiserver is
        busy); None when it cannot be read."""
        with self._opening:
            if cluster in self.read:
                return self.read[cluster]
            if cluster in self.unread or not self.connected(cluster):
                return None
            options = self.options
            store = StateStore(
                self.clients[cluster], options.state_namespace, self.fences(cluster), options.history_keep
            )
            kinds = [(k.api_version, k.kind) for k in options.diff.kinds]
            try:
                self.read[cluster] = with_retries(
                    functools.partial(store.load, kinds), options.apply.retry, self.stop
                )
            except KubeError as err:
                self.unread[cluster] = err
                return None
            return self.read[cluster]

    def plan_live(self, desired: ClusterManifests) -> ClusterPlan:
        """``desired`` planned against its cluster as the sync would plan it (its recorded inventory,
        the sync's rules); a cluster that cannot be reached gives a plan with ``error`` set."""
        name = desired.cluster
        loaded = self.load(name)
        if loaded is None:
            why = self.unconnected.get(name) or f"cannot read its sync state: {self.unread.get(name)}"
            return ClusterPlan(name, error=why)
        try:
            inventory = loaded.state.applied_inventory()
            rules = self.options.apply.rules
            return plan_live_cluster(self.clients[name], desired, self.options.diff, inventory, rules)
        except SyncerError as err:
            return ClusterPlan(name, error=str(err))

    def recorded_revisions(self, in_force: Collection[str] = ()) -> dict[str, str]:
        """The revisions the clusters record as applied or last good, each with the clusters recording
        it: the known clusters and ``in_force`` (those of the revision in force). The states read
        here are the ones the pass rolls out from: each is read once per pass. A cluster whose record
        cannot be read is left out of this answer and out of the pass (its wave waits); once it
        answers again, the revision in force goes to it only if it descends from what it records
        (``RolloutStates.hold_back``)."""
        found: dict[str, list[str]] = {}
        for name in sorted(set(self.known) | set(in_force)):
            loaded = self.load(name)
            if loaded is None:
                continue
            for revision in dict.fromkeys((loaded.state.revision, loaded.state.last_good)):
                if revision:
                    found.setdefault(revision, []).append(name)
        return {
            revision: f"the revision {', '.join(names)} record(s) as applied"
            for revision, names in found.items()
        }
