"""Nodes that come back with a volume of another shape are judged before they are met.

A pod whose claim was kept (replicas or shards scaled down and up again, a RedisCluster re-created
from retained claims, a claim of a former cluster of the same name) starts with the nodes.conf and
the data files it had. Such a node may know only itself, hold keys the cluster has since changed,
claim the slots it holds keys of (redis-server takes unassigned slots it has keys in when it loads
its data) and carry epochs that could win against the cluster's own claims.

Owns: ``outsiders`` (pure: which kept nodes stand outside the group the cluster forms and are not
fresh, each with whether it may be emptied or why not), ``judge_returning`` (emptying those before
they are met), ``retire`` (emptying a departing node) and ``wipe`` (emptying a node for good:
memory, the RDB and append-only files, and a new node id with CLUSTER RESET HARD, so a restart
brings nothing back and no node still remembers, or bans after CLUSTER FORGET, its old id).

Must not: empty a node of the cluster's own group, or a node whose keys could be the only copy (the
cluster does not serve every slot); every wait has a deadline.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from syncer.controller.topology_client import Connections
from syncer.controller.topology_model import NodeView, RedisNode, TopologyError, TopologyOptions
from syncer.controller.topology_parse import SLOT_COUNT, replication_state


@dataclass(frozen=True)
class Outsider:
    """A kept node outside the cluster's group, as it came back: its id, keys, own slots, the other
    nodes it knows and its epoch; ``wipe`` says it may be emptied, else ``reason`` says why not."""

    node: RedisNode
    node_id: str
    keys: int
    slots: int
    known: int
    epoch: int
    wipe: bool
    reason: str = ""

    def __str__(self) -> str:
        return (
            f"{self.node} (node {self.node_id[:12]}: {self.keys} key(s), {self.slots} slot(s) of its own, "
            f"{self.known} other node(s) known, epoch {self.epoch})"
        )


def groups(views: Mapping[RedisNode, NodeView]) -> list[list[RedisNode]]:
    """The nodes in groups that know each other (one listing the other's id is enough), in the
    order of their first node."""
    ids = {me.node_id: node for node, view in views.items() if (me := view.myself) is not None}
    parent = {node: node for node in views}

    def root(node: RedisNode) -> RedisNode:
        while parent[node] != node:
            node = parent[node]
        return node

    for node, view in views.items():
        for entry in view.entries:
            other = ids.get(entry.node_id)
            # Any flag but handshake: a member whose address is lost (noaddr) is still a member.
            if other is not None and other != node and "handshake" not in entry.flags:
                parent[root(other)] = root(node)
    found: dict[RedisNode, list[RedisNode]] = {}
    for node in views:
        found.setdefault(root(node), []).append(node)
    return list(found.values())


def served(views: Mapping[RedisNode, NodeView], group: Sequence[RedisNode]) -> set[int]:
    """The slots the masters of ``group`` claim as their own."""
    slots: set[int] = set()
    for node in group:
        me = views[node].myself
        if me is not None and me.is_master:
            for r in me.slots:
                slots.update(range(r.start, r.end + 1))
    return slots


def outsiders(
    views: Mapping[RedisNode, NodeView], keys: Mapping[RedisNode, int], kept: Sequence[RedisNode]
) -> list[Outsider]:
    """The kept nodes that are neither in the cluster's group nor fresh, each with its verdict.

    The cluster's group is the biggest, then the one whose masters serve most slots, then the
    first. A fresh node (no key, no slot, nobody else known, epoch 0) is simply met. Any other node
    outside the group is emptied when it holds no key, or when the group serves every slot (its keys
    are stale copies); one holding keys while the group lacks slots, or while another group looks
    just like the cluster's, is left out.
    """
    found = groups(views)
    weights = [(len(g), len(served(views, g))) for g in found]
    main = found[weights.index(max(weights))]
    covered = len(served(views, main))
    # Two groups alike (a one-node cluster and one node back from it, say): which one holds the
    # current keys cannot be told, so no key is emptied.
    alike = weights.count(max(weights)) > 1
    result: list[Outsider] = []
    for node in kept:
        view = views[node]
        me = view.myself
        if node in main or me is None or view.info is None:
            continue
        known = sum(1 for e in view.entries if "handshake" not in e.flags and not e.is_myself)
        epoch = max(view.info.current_epoch, view.info.my_epoch)
        held = keys.get(node, 0)
        if not held and not me.slots and not known and not epoch:
            continue
        reason = ""
        if held and covered < SLOT_COUNT:
            reason = (
                f"holds {held} key(s) while the cluster serves {covered}/{SLOT_COUNT} slots: they may be "
                "the only copy, so it is neither emptied nor met"
            )
        elif held and alike:
            reason = (
                f"holds {held} key(s) and its group looks like the cluster's ({len(main)} node(s), "
                f"{covered} slots): which one has the current keys cannot be told, so it is neither "
                "emptied nor met"
            )
        result.append(Outsider(node, me.node_id, held, me.slot_count, known, epoch, not reason, reason))
    return result


@dataclass(frozen=True)
class Returned:
    """What judging the returning nodes did: the nodes emptied, those left out (with the reason)
    and what failed; ``unread`` when a node's keys could not be counted (nothing was judged)."""

    emptied: tuple[str, ...] = ()
    refused: tuple[str, ...] = ()
    problems: tuple[str, ...] = ()
    unread: bool = False


def judge_returning(
    conns: Connections,
    options: TopologyOptions,
    views: Mapping[RedisNode, NodeView],
    kept: Sequence[RedisNode],
) -> Returned:
    """Empty and reset each kept outsider that may be emptied; leave out the others."""
    keys: dict[RedisNode, int] = {}
    for node in kept:
        try:
            reply = conns.call(node, "DBSIZE")
        except TopologyError as err:
            return Returned(problems=(str(err),), unread=True)
        keys[node] = int(reply) if isinstance(reply, int) else 0
    emptied: list[str] = []
    refused: list[str] = []
    problems: list[str] = []
    for outsider in outsiders(views, keys, kept):
        if not outsider.wipe:
            refused.append(f"{outsider} is left out of the cluster: it {outsider.reason}")
            continue
        try:
            wipe(conns, outsider.node, options)
        except TopologyError as err:
            problems.append(f"emptying {outsider}: {err}")
            continue
        emptied.append(str(outsider))
    return Returned(tuple(emptied), tuple(refused), tuple(problems))


def retire(conns: Connections, options: TopologyOptions, node: RedisNode, *, master: bool) -> str:
    """Empty a departing node for good; why it cannot be, or "". A replica holds a copy of its
    master's keys; a master must hold no key any more (nothing may leave with it)."""
    try:
        held = conns.call(node, "DBSIZE") if master else 0
        if held:
            return f"{node} is leaving but still holds {held} key(s)"
        wipe(conns, node, options)
    except TopologyError as err:
        return f"emptying {node} as it leaves: {err}"
    return ""


def wipe(conns: Connections, node: RedisNode, options: TopologyOptions) -> None:
    """Empty ``node`` for good and give it a new id: CLUSTER RESET HARD (first, on a replica, which
    refuses FLUSHALL), FLUSHALL, CLUSTER RESET HARD, then SAVE (an empty RDB file in place of one a
    full sync wrote) and, with the append-only file on, BGREWRITEAOF until it has finished."""
    # Replies are not looked at: a refusal is a TopologyError.
    if replication_state(conns.call(node, "ROLE")) != "master":
        conns.call(node, "CLUSTER", "RESET", "HARD")
    conns.call(node, "FLUSHALL")
    conns.call(node, "CLUSTER", "RESET", "HARD")
    conns.call(node, "SAVE")
    if _persistence(conns, node).get("aof_enabled") != 1:
        return
    conns.call(node, "BGREWRITEAOF")
    deadline = time.monotonic() + options.ready_timeout
    while True:
        found = _persistence(conns, node)
        if not found.get("aof_rewrite_in_progress") and not found.get("aof_rewrite_scheduled"):
            if found.get("aof_last_bgrewrite_status") != "ok":
                status = found.get("aof_last_bgrewrite_status")
                raise TopologyError(str(node), f"rewriting the append-only file failed ({status})")
            return
        if time.monotonic() >= deadline:
            message = f"the append-only file was not rewritten within {options.ready_timeout}s"
            raise TopologyError(str(node), message)
        time.sleep(options.poll_interval)


def _persistence(conns: Connections, node: RedisNode) -> Mapping[str, object]:
    reply = conns.call(node, "INFO", "persistence")
    if not isinstance(reply, Mapping):
        raise TopologyError(str(node), f"INFO persistence: unexpected reply {reply!r}")
    return reply
