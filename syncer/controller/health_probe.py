"""Redis-level health between reconciles: each watched cluster's servers asked at a short interval.

Owns: probing every member of each watched RedisCluster (CLUSTER INFO and CLUSTER NODES with a short
socket timeout), judging one round (``judge_round``: a master that serves slots and does not answer,
a member that says ``cluster_state:fail``, a replica -- or any other member -- that does not
answer), the hysteresis that turns rounds into an outage (``Debounced``), waking its caller when the
outage starts, changes reason or ends, and a reconcile's look at Redis with the watch on (``look``:
which members are watched, and no converging pass while a master does not answer).

Must not: change the Redis cluster, write to Kubernetes or decide the status; the reconciler reads
``HealthWatch.outage`` and writes the status itself.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace

from syncer.controller import topology_link
from syncer.controller.model import ClusterSpec
from syncer.controller.status import TopologyVerdict
from syncer.controller.topology_client import Connections, client_name, observe
from syncer.controller.topology_converge import Progress
from syncer.controller.topology_model import NodeView, RedisNode, TopologyOptions
from syncer.kube import KubeApi, KubeObject

log = logging.getLogger("syncer.controller")

MASTER_UNREACHABLE = "MasterUnreachable"
CLUSTER_STATE_FAIL = "ClusterStateFail"
REPLICA_UNREACHABLE = "ReplicaUnreachable"


@dataclass(frozen=True)
class ProbeOptions:
    """How often and how patiently the members are asked, and how many rounds make a change.

    ``interval`` seconds between rounds; ``timeout`` bounds each call to one server (a frozen server
    costs one ``timeout`` per round); an outage is declared after ``fail_rounds`` bad rounds in a
    row and ended after ``recover_rounds`` good rounds in a row. The defaults are the controller's
    (``ControllerOptions.health_*``).
    """

    interval: float
    timeout: float
    fail_rounds: int
    recover_rounds: int

    def __post_init__(self) -> None:
        if self.interval <= 0 or self.timeout <= 0:
            raise ValueError("interval and timeout must be positive")
        if min(self.fail_rounds, self.recover_rounds) < 1:
            raise ValueError("fail_rounds and recover_rounds must be at least 1")


def _epoch(view: NodeView) -> int:
    return view.info.current_epoch if view.info is not None else -1


def judge_round(views: Sequence[NodeView], timeout: float) -> TopologyVerdict | None:
    """The outage one round shows, or None. Pure.

    A master serves slots in the freshest answering view (highest current epoch) and does not answer:
    ``MasterUnreachable`` (its slots take no writes). A member answers ``cluster_state`` other than ok:
    ``ClusterStateFail``. Any other member does not answer -- a replica, or a master that serves no
    slot (one Redis failed over): ``ReplicaUnreachable`` naming it (its shard has one copy fewer and
    no stand-in for a failover). Nobody answering at all counts as unreachable masters.
    """
    answering = [v for v in views if v.info is not None and not v.error]
    silent = {str(v.node): v for v in views if v.error}
    if not answering:
        if not silent:
            return None
        names = ", ".join(sorted(silent))
        return TopologyVerdict(False, f"no member answers within {timeout:g}s: {names}", MASTER_UNREACHABLE)
    reference = max(answering, key=_epoch)
    down = sorted(e.address for e in reference.entries if e.is_master and e.slots and e.address in silent)
    if down:
        served = sum(e.slot_count for e in reference.entries if e.address in down)
        message = (
            f"master {', '.join(down)} serving {served} slot(s) does not answer within {timeout:g}s "
            f"({silent[down[0]].error})"
        )
        return TopologyVerdict(False, message, MASTER_UNREACHABLE)
    failing = [v for v in answering if v.info is not None and v.info.state != "ok"]
    if failing:
        names = ", ".join(str(v.node) for v in failing)
        state = failing[0].info.state if failing[0].info is not None else "?"
        return TopologyVerdict(False, f"cluster_state:{state} on {names}", CLUSTER_STATE_FAIL)
    if silent:
        return _replicas_down(reference, silent, timeout)
    return None


def _replicas_down(reference: NodeView, silent: Mapping[str, NodeView], timeout: float) -> TopologyVerdict:
    """``ReplicaUnreachable`` for the members in ``silent`` (none of them a master serving slots),
    each named with its role as ``reference`` sees it."""
    by_id = {e.node_id: e for e in reference.entries}
    by_address = {e.address: e for e in reference.entries}
    named = []
    for address in sorted(silent):
        entry = by_address.get(address)
        if entry is not None and entry.is_replica:
            master = by_id.get(entry.master_id)
            named.append(f"replica {address} of {master.address if master else entry.master_id or '?'}")
        elif entry is not None and entry.is_master:
            named.append(f"master {address} serving no slot")
        else:
            named.append(f"member {address}")
    first = silent[sorted(silent)[0]].error
    message = f"{', '.join(named)} does not answer within {timeout:g}s ({first})"
    return TopologyVerdict(False, message, REPLICA_UNREACHABLE)


@dataclass(frozen=True)
class Debounced:
    """The outage in force after the rounds seen so far, and the current run of bad or good rounds."""

    outage: TopologyVerdict | None = None
    bad: int = 0
    good: int = 0

    def step(self, found: TopologyVerdict | None, options: ProbeOptions) -> Debounced:
        """The state after one more round. An outage in force takes the latest round's reason and
        message while rounds stay bad."""
        if found is not None:
            bad = self.bad + 1
            if self.outage is not None or bad >= options.fail_rounds:
                return Debounced(found, bad, 0)
            return Debounced(None, bad, 0)
        good = self.good + 1
        if self.outage is not None and good < options.recover_rounds:
            return Debounced(self.outage, 0, good)
        return Debounced(None, 0, good)


@dataclass(frozen=True)
class _Watched:
    nodes: tuple[RedisNode, ...]
    access: TopologyOptions
    state: Debounced
    silent: frozenset[RedisNode] = frozenset()  # members that did not answer the last round


class HealthWatch:
    """Probes every tracked cluster each ``interval``; ``wake(key, outage)`` when its outage starts,
    changes reason or ends (``outage`` None), and when a member that did not answer answers again
    (``outage`` as in force), so a recovery is looked at without waiting for the next poll. ``run``
    blocks until ``stop`` is set."""

    def __init__(self, options: ProbeOptions, wake: Callable[[str, TopologyVerdict | None], None]) -> None:
        self._options = options
        self._wake = wake
        self._lock = threading.Lock()
        self._watched: dict[str, _Watched] = {}
        # Each watched cluster's connections, kept from round to round (a round that opened new ones
        # would cost every server a connection and its handshake four times a second); only the
        # probing thread touches them.
        self._conns: dict[str, tuple[tuple[TopologyOptions, str | None], Connections]] = {}

    def track(self, key: str, nodes: Sequence[RedisNode], access: TopologyOptions) -> None:
        """Watch ``nodes`` (the members of a cluster found healthy) from now on, keeping its state."""
        probe = replace(access, timeout=self._options.timeout)
        with self._lock:
            found = self._watched.get(key) or _Watched((), probe, Debounced())
            self._watched[key] = replace(found, nodes=tuple(sorted(set(nodes))), access=probe)

    def narrow(self, key: str, nodes: Sequence[RedisNode]) -> None:
        """Stop watching the tracked members of ``key`` that are not among ``nodes`` (the members the
        spec keeps: a node on its way out is reset and says ``cluster_state:fail``)."""
        with self._lock:
            found = self._watched.get(key)
            if found is not None:
                self._watched[key] = replace(found, nodes=tuple(n for n in found.nodes if n in set(nodes)))

    def forget(self, key: str) -> None:
        with self._lock:
            self._watched.pop(key, None)

    def tracked(self, key: str) -> tuple[RedisNode, ...]:
        with self._lock:
            found = self._watched.get(key)
            return found.nodes if found is not None else ()

    def outage(self, key: str) -> TopologyVerdict | None:
        with self._lock:
            found = self._watched.get(key)
            return found.state.outage if found is not None else None

    def probe_once(self) -> None:
        """One round over every tracked cluster."""
        with self._lock:
            keys = list(self._watched.items())
        for gone in set(self._conns) - {key for key, _ in keys}:
            self._conns.pop(gone)[1].close()
        for key, watched in keys:
            conns = self._connections(key, watched.access)
            views = [observe(conns, node) for node in watched.nodes]
            found = judge_round(views, self._options.timeout)
            with self._lock:
                current = self._watched.get(key)
                if current is None or current.nodes != watched.nodes:
                    continue
                silent = frozenset(v.node for v in views if v.error)
                before = current.state.outage
                state = current.state.step(found, self._options)
                self._watched[key] = replace(current, state=state, silent=silent)
                after = state.outage
            if (before and before.reason) != (after and after.reason) or current.silent - silent:
                self._wake(key, after)

    def _connections(self, key: str, access: TopologyOptions) -> Connections:
        """The connections of ``key``'s last round, or new ones when its access changed (a password,
        TLS) or the Lease's token did (connections are named after it): a server that went away is
        reconnected to by its client at the next call."""
        held = self._conns.get(key)
        made_for = (access, client_name(access.fence))
        if held is not None and held[0] == made_for:
            return held[1]
        if held is not None:
            held[1].close()
        conns = Connections(access)
        self._conns[key] = (made_for, conns)
        return conns

    def close(self) -> None:
        """Close every kept connection (call from the probing thread, or once it has stopped)."""
        for _, conns in self._conns.values():
            conns.close()
        self._conns.clear()

    def run(self, stop: threading.Event) -> None:
        try:
            while not stop.wait(self._options.interval):
                try:
                    self.probe_once()
                except Exception as err:  # the watch must outlive any one round's failure
                    log.warning("health watch round failed: %s", err, exc_info=True)
        finally:
            self.close()


def look(
    kube: KubeApi,
    health: HealthWatch,
    spec: ClusterSpec,
    live: Mapping[int, KubeObject],
    access: TopologyOptions,
    *,
    progress: Progress,
) -> topology_link.TopologyPass:
    """A reconcile's look at Redis with the watch on: converge and judge, except while the watch sees
    a master that does not answer -- then only its verdict (Redis fails over on its own, and every
    command would wait on the silent master). The watch follows only the members the spec keeps (a
    departing node is reset on its way out), and starts on a cluster once it is found healthy."""
    key = f"{spec.namespace}/{spec.name}"
    pods = topology_link.list_pods(kube, spec)
    kept = [p.node for p in pods if p.ip and p.shard < spec.shards and p.ordinal < spec.pods_per_shard]
    health.narrow(key, kept)
    outage = health.outage(key)
    if outage is not None and outage.reason == MASTER_UNREACHABLE:
        return topology_link.TopologyPass(outage, pods=tuple(pods))
    found = topology_link.observe_and_converge(kube, spec, live, access, progress)
    if found.verdict.healthy:
        health.track(key, kept, access)
    return found
