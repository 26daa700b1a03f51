"""Redis Cluster topology through redis-py: form a cluster (``bootstrap``) and judge one (``inspect``).

Owns: talking to the Redis servers of one RedisCluster -- CLUSTER MEET so every node knows every
other, CLUSTER ADDSLOTSRANGE for slots nobody serves, CLUSTER REPLICATE so replicas follow their
shard's master -- and reporting what the cluster really looks like. Every failed command is
reported with the node and Redis's own error text; nothing is swallowed.

Must not: move slots that some master already serves, forget or reset nodes, touch keys, or talk to
Kubernetes; every network call has a socket timeout and every wait has a deadline.
"""

from __future__ import annotations

import ipaddress
import socket
import time
from collections.abc import Callable, Sequence
from contextlib import closing
from dataclasses import replace

from syncer.controller.formation import FormationStep
from syncer.controller.topology_client import Connections, observe
from syncer.controller.topology_model import (
    NodeView,
    RedisNode,
    ShardReport,
    TopologyError,
    TopologyOptions,
    TopologyReport,
    judge,
    misplaced,
    unmet,
)
from syncer.controller.topology_parse import (
    SLOT_COUNT,
    ClusterInfo,
    ClusterNodeEntry,
    SlotRange,
    parse_cluster_info,
    parse_cluster_nodes,
    ranges_of,
    replication_state,
    split_slots,
)

__all__ = [
    "SLOT_COUNT",
    "ClusterInfo",
    "ClusterNodeEntry",
    "NodeView",
    "RedisNode",
    "ShardReport",
    "SlotRange",
    "TopologyError",
    "TopologyOptions",
    "TopologyReport",
    "bootstrap",
    "inspect",
    "judge",
    "parse_cluster_info",
    "parse_cluster_nodes",
    "split_slots",
]

Layout = tuple[tuple[RedisNode, ...], ...]


def bootstrap(
    shards: Sequence[Sequence[RedisNode]],
    options: TopologyOptions = TopologyOptions(),
    *,
    settle: bool = True,
) -> TopologyReport:
    """Form the cluster: each inner sequence is one shard, ``[master, replica, ...]``.

    Idempotent and resumable: only missing steps run (unknown nodes are met, unserved slots are
    assigned to their shard's master, replicas not yet following their master are told to). When a
    shard has failed over -- its listed master now follows another member -- that member is taken
    as the shard's master instead of forcing the roles back. The report's ``actions`` lists every
    command that changed something; it is empty when the cluster was already formed. It returns
    once the cluster is healthy, every node sees each replica following its master and every
    replica's replication link is up (ROLE ``connected``), or when ``ready_timeout`` runs out -- then
    the report says what is still pending. With ``settle`` False it does not wait and its ``errors``
    are only commands that failed (the caller judges the shape itself).
    """
    layout = _layout(shards)
    nodes = [node for shard in layout for node in shard]
    with closing(Connections(options)) as conns:
        run = Formation(conns, options)
        ids = run.node_ids(nodes)
        if ids is not None:
            run.claim_fresh(layout)
        if ids is not None and not run.errors and run.meet(nodes, ids):
            views = {v.node: v for v in run.observe(nodes)}
            run.errors.extend(v.error for v in views.values() if v.error)
            if not run.errors:
                masters = tuple(_shard_master(shard, views, ids) for shard in layout)
                run.assign_slots(layout, masters, views)
                run.replicate(layout, masters, views, ids)
                if settle:
                    return run.settle(layout, masters, ids)
        report = judge(run.observe(nodes), len(layout), run.errors)
        if not settle:
            # Gossip may not have spread what was just done; the caller judges the shape later.
            report = replace(report, errors=tuple(run.errors))
        return _with_actions(report, run.actions)


def inspect(
    nodes: Sequence[RedisNode], expected_shards: int, options: TopologyOptions = TopologyOptions()
) -> TopologyReport:
    """Read-only: CLUSTER INFO and CLUSTER NODES from every reachable node of ``nodes`` (every node
    the cluster should have: an entry that is none of them is not healthy), judged into a report."""
    if not nodes:
        raise ValueError("inspect needs at least one node")
    if expected_shards < 1:
        raise ValueError("expected_shards must be at least 1")
    with closing(Connections(options)) as conns:
        views = [observe(conns, node) for node in nodes]
        replication = replication_problems(conns, views)
        return judge(views, expected_shards, replication=replication, every_node=True)


def replication_problems(conns: Connections, views: Sequence[NodeView]) -> list[str]:
    """Replicas whose link is not up, or whose ROLE names another master than the cluster says."""
    addresses = {e.node_id: e.address for v in views for e in v.entries if e.address}
    problems: list[str] = []
    for view in views:
        me = view.myself
        if me is None or not me.is_replica or view.error:
            continue
        try:
            role = conns.call(view.node, "ROLE")
        except TopologyError as err:
            problems.append(str(err))
            continue
        state = replication_state(role)
        if state != "connected":
            problems.append(f"{view.node} is not in sync with its master (link {state})")
            continue
        following = _role_master(role)
        expected = addresses.get(me.master_id, "")
        if expected and following and following != expected:
            problems.append(f"{view.node} replicates {following} but the cluster says it follows {expected}")
    return problems


def _role_master(role: object) -> str:
    if isinstance(role, list | tuple) and len(role) >= 3:
        host, port = role[1], role[2]
        host = host.decode() if isinstance(host, bytes) else str(host)
        return f"{host}:{port}"
    return ""


class Formation:
    """The state of one ``bootstrap`` run: connections, errors met and actions taken."""

    def __init__(self, conns: Connections, options: TopologyOptions) -> None:
        self.conns = conns
        self.options = options
        self.errors: list[str] = []
        self.actions: list[str] = []

    def change(self, node: RedisNode, *args: str | int) -> bool:
        """Run a command that changes the cluster; record it as an action or as an error."""
        try:
            self.conns.run(node, *args)
        except TopologyError as err:
            self.errors.append(str(err))
            return False
        self.actions.append(f"{node}: {' '.join(str(a) for a in args)}")
        return True

    def observe(self, nodes: Sequence[RedisNode]) -> list[NodeView]:
        return [observe(self.conns, node) for node in nodes]

    def node_ids(self, nodes: Sequence[RedisNode]) -> dict[RedisNode, str] | None:
        """CLUSTER MYID of every node, or None (with errors recorded) when any cannot answer."""
        ids: dict[RedisNode, str] = {}
        for node in nodes:
            try:
                ids[node] = self.conns.run(node, "CLUSTER", "MYID")
            except TopologyError as err:
                self.errors.append(str(err))
        return ids if len(ids) == len(nodes) else None

    def meet(self, nodes: Sequence[RedisNode], ids: dict[RedisNode, str]) -> bool:
        """Introduce every pair of nodes that do not know each other yet (the earlier one meets the
        later one), then wait until every node knows all the others. Meeting each pair at once,
        instead of only the first node, leaves nothing for gossip to spread but the handshakes."""
        views = self.observe(nodes)
        self.errors.extend(v.error for v in views if v.error)
        if self.errors:
            return False
        known = {v.node: {e.node_id for e in v.entries if e.is_known} for v in views}
        sent = len(self.actions)
        for index, node in enumerate(nodes):
            for other in nodes[index + 1 :]:
                if ids[other] in known[node] and ids[node] in known[other]:
                    continue
                try:
                    host = _ip_of(other)
                except TopologyError as err:
                    self.errors.append(str(err))
                    continue
                self.change(node, "CLUSTER", "MEET", host, other.port)
        self._reintroduce(nodes, ids)
        if self.errors:
            return False
        missing = self._wait(self.options.meet_timeout, lambda: unmet(self.observe(nodes), ids))
        if missing:
            self.errors.append(
                f"nodes did not learn of each other within {self.options.meet_timeout}s: {missing[0]}"
                + (f" (and {len(missing) - 1} more)" if len(missing) > 1 else "")
            )
        elif len(self.actions) > sent:
            self.options.told(FormationStep.MET)
        return not missing

    def claim_fresh(self, layout: Layout) -> None:
        """On fresh nodes (each knows only itself, nobody serves a slot), give each shard's first
        node its slots before any MEET, as ``redis-cli --cluster create`` does: the handshakes then
        carry every master's slots to every node at once, instead of the slower regular pings
        spreading them after the meeting (``cluster_state`` turns ok only once every node knows
        every slot's master)."""
        views = {v.node: v for v in self.observe([node for shard in layout for node in shard])}
        if any(v.error or len(v.entries) != 1 or v.entries[0].slots for v in views.values()):
            return
        self.assign_slots(layout, tuple(shard[0] for shard in layout), views)

    def _reintroduce(self, nodes: Sequence[RedisNode], ids: dict[RedisNode, str]) -> None:
        """Two members that each flag the other ``noaddr`` (a pod came back on an address another
        pod had: the node there answered with another id) never learn the address again: Redis takes
        no gossip about a ``noaddr`` entry, and neither pings the other. Members that all came back
        on new addresses (a RedisCluster re-created from retained claims) each know the others only
        at their former addresses, so nobody reaches anybody. A MEET from the node holding such an
        entry ends it: the handshake finds the known id and takes its address."""
        members = {node_id: node for node, node_id in ids.items()}
        for view in self.observe(nodes):
            for entry in view.entries:
                peer = members.get(entry.node_id)
                if peer is None or peer == view.node or not _address_lost(entry, peer):
                    continue
                try:
                    host = _ip_of(peer)
                except TopologyError as err:
                    self.errors.append(str(err))
                    continue
                self.change(view.node, "CLUSTER", "MEET", host, peer.port)

    def assign_slots(
        self, layout: Layout, masters: Sequence[RedisNode], views: dict[RedisNode, NodeView]
    ) -> None:
        """Give each shard's master the slots of its range that no node serves yet.

        Only while no node holds a key: slots that lost their master in a cluster with data are
        reported, never handed to an empty master (their keys would be gone without a word).
        """
        served: set[int] = set()
        for view in views.values():
            for entry in view.entries:
                for r in entry.slots:
                    served.update(range(r.start, r.end + 1))
        if len(served) == SLOT_COUNT:
            return
        holding = [node for node in views if self._keys(node)]
        if holding:
            self.errors.append(
                f"{SLOT_COUNT - len(served)} slot(s) have no master while {holding[0]} holds keys: "
                "not assigning them to an empty master"
            )
            return
        batch = self.options.slot_batch
        done = True
        for master, wanted in zip(masters, split_slots(len(layout)), strict=True):
            missing = ranges_of(s for s in range(wanted.start, wanted.end + 1) if s not in served)
            for first in range(0, len(missing), batch):
                bounds = [b for r in missing[first : first + batch] for b in (r.start, r.end)]
                done = self.change(master, "CLUSTER", "ADDSLOTSRANGE", *bounds) and done
        if done:
            self.options.told(FormationStep.SLOTS_ASSIGNED)

    def _keys(self, node: RedisNode) -> int:
        try:
            reply = self.conns.call(node, "DBSIZE")
        except TopologyError as err:
            self.errors.append(str(err))
            return 1
        return int(reply) if isinstance(reply, int) else 1

    def replicate(
        self,
        layout: Layout,
        masters: Sequence[RedisNode],
        views: dict[RedisNode, NodeView],
        ids: dict[RedisNode, str],
    ) -> None:
        """Tell every member that is not its shard's master and does not follow it yet to replicate it.

        The master is first told how many replicas are about to ask for a full sync
        (``repl-diskless-sync-max-replicas``): it starts the transfer once they all wait instead of
        waiting out ``repl-diskless-sync-delay`` (5 s by default) for more to come."""
        sent = len(self.actions)
        for shard, master in zip(layout, masters, strict=True):
            told = [
                node
                for node in shard
                if node != master
                and not (
                    (me := views[node].myself) is not None and me.is_replica and me.master_id == ids[master]
                )
            ]
            if told:
                self._expect_replicas(master, len(told))
            for node in told:
                self.change(node, "CLUSTER", "REPLICATE", ids[master])
        if len(self.actions) > sent:
            self.options.told(FormationStep.REPLICAS_TOLD)

    def _expect_replicas(self, master: RedisNode, count: int) -> None:
        """A tuning, not a topology change: a Redis without the setting (before 7.0) or refusing it
        keeps its delay, and formation goes on."""
        try:
            self.conns.run(master, "CONFIG", "SET", "repl-diskless-sync-max-replicas", count)
        except TopologyError:
            return

    def settle(
        self, layout: Layout, masters: Sequence[RedisNode], ids: dict[RedisNode, str]
    ) -> TopologyReport:
        """Wait (up to ``ready_timeout``) for a healthy cluster in the intended shape and report it."""
        nodes = [node for shard in layout for node in shard]
        timeout = 0.0 if self.errors else self.options.ready_timeout
        last: list[TopologyReport] = []

        def pending() -> list[str]:
            views = self.observe(nodes)
            report = judge(views, len(layout), self.errors, every_node=True)
            last[:] = [report]
            if not report.healthy:
                return [report.summary()]
            self.options.told(FormationStep.CLUSTER_OK)
            return misplaced(views, layout, masters, ids) or self._unsynced(layout, masters)

        left = self._wait(timeout, pending)
        report = last[0]
        if left and not self.errors:
            more = f" (and {len(left) - 1} more)" if len(left) > 1 else ""
            reason = f"not converged within {timeout}s: {left[0]}{more}"
            report = replace(report, healthy=False, errors=(*report.errors, reason))
        return _with_actions(report, self.actions)

    def _unsynced(self, layout: Layout, masters: Sequence[RedisNode]) -> list[str]:
        """Replicas whose replication link to their master is not up yet (ROLE state not connected)."""
        problems: list[str] = []
        for shard, master in zip(layout, masters, strict=True):
            for node in shard:
                if node == master:
                    continue
                try:
                    state = replication_state(self.conns.call(node, "ROLE"))
                except TopologyError as err:
                    problems.append(str(err))
                    continue
                if state != "connected":
                    problems.append(f"{node} has not finished syncing from {master} (replication {state})")
        return problems

    def _wait(self, timeout: float, problems: Callable[[], list[str]]) -> list[str]:
        """Call ``problems`` until it returns nothing or ``timeout`` seconds passed; return the last."""
        deadline = time.monotonic() + timeout
        while True:
            found = problems()
            left = deadline - time.monotonic()
            if not found or left <= 0:
                return found
            time.sleep(min(self.options.poll_interval, left))


def _layout(shards: Sequence[Sequence[RedisNode]]) -> Layout:
    layout = tuple(tuple(shard) for shard in shards)
    if not layout or any(not shard for shard in layout):
        raise ValueError("bootstrap needs at least one shard and a master in every shard")
    if len(layout) > SLOT_COUNT:
        raise ValueError(f"at most {SLOT_COUNT} shards")
    nodes = [node for shard in layout for node in shard]
    if len(set(nodes)) != len(nodes):
        raise ValueError("a node appears more than once in the shards")
    return layout


def _address_lost(entry: ClusterNodeEntry, peer: RedisNode) -> bool:
    """No address, or another than the member's own (compared only for a member addressed by IP)."""
    try:
        ipaddress.ip_address(peer.host)
    except ValueError:
        return "noaddr" in entry.flags
    return entry.elsewhere(str(peer))


def _ip_of(node: RedisNode) -> str:
    """CLUSTER MEET takes an IP address: a host name is resolved here."""
    try:
        return str(ipaddress.ip_address(node.host))
    except ValueError:
        pass
    try:
        infos = socket.getaddrinfo(node.host, node.port, type=socket.SOCK_STREAM)
    except OSError as err:
        raise TopologyError(str(node), f"cannot resolve host for CLUSTER MEET: {err}") from err
    return str(infos[0][4][0])


def _shard_master(
    shard: Sequence[RedisNode], views: dict[RedisNode, NodeView], ids: dict[RedisNode, str]
) -> RedisNode:
    """The member that serves slots; else the listed master, unless it now follows another member
    that is a master (a failover). A member that came back empty is never preferred to one with
    slots, so it is made a replica and resyncs instead of taking over as an empty master."""
    for node in shard:
        me = views[node].myself
        if me is not None and me.is_master and me.slots:
            return node
    listed = views[shard[0]].myself
    if listed is not None and listed.is_replica:
        for other in shard[1:]:
            me = views[other].myself
            if ids[other] == listed.master_id and me is not None and me.is_master:
                return other
    return shard[0]


def _with_actions(report: TopologyReport, actions: Sequence[str]) -> TopologyReport:
    return replace(report, healthy=report.healthy and not report.errors, actions=tuple(actions))
