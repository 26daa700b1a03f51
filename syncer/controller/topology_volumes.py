"""Nodes that come back with a volume of another shape are judged before they are met.

A pod whose claim was kept (replicas or shards scaled down and up again, a RedisCluster re-created
from retained claims, a claim of a former cluster of the same name) starts with the nodes.conf and
the data files it had. Such a node may know only itself, hold keys the cluster has since changed,
claim the slots it holds keys of (redis-server takes unassigned slots it has keys in when it loads
its data) and carry epochs that could win against the cluster's own claims.

Owns: ``outsiders`` (pure: which kept nodes stand outside the group the cluster forms, as ``topology_members``
finds it, and are not fresh, each with whether it may be emptied or why not), ``confirmed`` and
``departure_refusal`` (pure: the evidence a destructive command needs), ``judge_returning`` (emptying those
before they are met), ``retire`` (emptying a departing node) and ``wipe`` (emptying a node for good: memory,
the RDB and append-only files, and a new node id with CLUSTER RESET HARD, so a restart brings nothing back and
no node still remembers, or bans after CLUSTER FORGET, its old id).

Destructive commands need positive evidence, never a missing answer: a count of keys is a number
the node answered (a timeout or any other reply is not "no key"); a node is emptied only when it
answers, right before, with the id it was judged by (an address can be another node's by then); an
outsider is flushed only when two looks, one right before the wipe, both judge it one; a departing
node is reset only when it says, at that moment, that it serves no slot, and a master that it holds
no key. ``FLUSHALL`` is sent only to such an outsider; a departing master is reset without it, so
Redis itself refuses when a key is there after all.

Must not: empty a node of the cluster's own group, or a node whose keys could be the only copy (the
cluster does not serve every slot); every wait has a deadline.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from syncer.controller.topology_client import Connections, observe
from syncer.controller.topology_members import main_group
from syncer.controller.topology_model import NodeView, RedisNode, TopologyError, TopologyOptions
from syncer.controller.topology_parse import SLOT_COUNT, parse_cluster_nodes, replication_state


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
    group = main_group(views)
    main, covered = group.nodes, group.slots
    # Two groups alike (a one-node cluster and one node back from it, say): which one holds the
    # current keys cannot be told, so no key is emptied.
    alike = bool(group.alike)
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


def key_count(reply: object) -> int | None:
    """DBSIZE's reply as a count of keys, or None when it is not one: never read as "no key"."""
    if isinstance(reply, bool) or not isinstance(reply, int) or reply < 0:
        return None
    return reply


def confirmed(first: Sequence[Outsider], second: Sequence[Outsider]) -> tuple[list[Outsider], list[str]]:
    """The outsiders both looks judge may be emptied, as the same node id with the same count of
    keys; and why each other one judged so in the first look is not (it is looked at again in the
    next pass). A node seen alone in one look and in the cluster's group in the other (a view read
    while it was being met, or a slow answer) is never emptied."""
    later = {o.node: o for o in second}
    sure: list[Outsider] = []
    doubts: list[str] = []
    for outsider in first:
        if not outsider.wipe:
            continue
        again = later.get(outsider.node)
        if again is None:
            doubts.append(f"{outsider} is not emptied: a second look finds it in the cluster or fresh")
        elif not again.wipe or again.node_id != outsider.node_id or again.keys != outsider.keys:
            doubts.append(f"{outsider} is not emptied: a second look found {again}")
        else:
            sure.append(again)
    return sure, doubts


@dataclass(frozen=True)
class SelfLook:
    """What a node says of itself right before it is emptied; None where it gave no answer."""

    node_id: str | None
    role: str  # replication_state of its ROLE reply: master, a replica's link state, or unknown
    keys: int | None
    slots: int | None


def departure_refusal(node: RedisNode, node_id: str, look: SelfLook) -> str:
    """Why a departing ``node`` (judged by ``node_id``) must not be reset now, or "" when it may:
    it answers with that id, says whether it is a master or a replica, serves no slot and, as a
    master, holds no key, each told by the node itself at that moment."""
    if look.node_id != node_id:
        found = "gives no id" if look.node_id is None else f"answers as node {look.node_id[:12]}"
        return f"{node} is leaving as node {node_id[:12]} but now {found}: it is not reset"
    if look.role == "unknown":
        return f"{node} is leaving but did not say whether it is a master or a replica: it is not reset"
    if look.slots is None or look.slots:
        if look.slots is None:
            return f"{node} is leaving but did not say which slots it serves: it is not reset"
        return f"{node} is leaving but still serves {look.slots} slot(s)"
    if look.role == "master" and look.keys != 0:
        if look.keys is None:
            return f"{node} is leaving but did not say how many keys it holds"
        return f"{node} is leaving but still holds {look.keys} key(s)"
    return ""


@dataclass(frozen=True)
class Returned:
    """What judging the returning nodes did: the nodes emptied, those left out (with the reason)
    and what failed; ``unread`` when a node's keys could not be counted (nothing was judged)."""

    emptied: tuple[str, ...] = ()
    refused: tuple[str, ...] = ()
    problems: tuple[str, ...] = ()
    unread: bool = False

    @property
    def holding(self) -> bool:
        """Nothing else may change in this pass: a node is left out, could not be read, was judged
        differently by two looks or could not be emptied; none of them may be met."""
        return bool(self.refused or self.problems or self.unread)


def judge_returning(
    conns: Connections,
    options: TopologyOptions,
    views: Mapping[RedisNode, NodeView],
    kept: Sequence[RedisNode],
) -> Returned:
    """Empty and reset each kept outsider that may be emptied, once a second look confirms it; leave
    out the others."""
    keys, problem = _count_keys(conns, kept)
    if problem:
        return Returned(problems=(problem,), unread=True)
    first = outsiders(views, keys, kept)
    refused = tuple(f"{o} is left out of the cluster: it {o.reason}" for o in first if not o.wipe)
    if not any(o.wipe for o in first):
        return Returned(refused=refused)
    again = {node: observe(conns, node) for node in views}
    keys, problem = _count_keys(conns, kept)
    unanswered = [v.error for v in again.values() if v.error]
    if problem or unanswered:
        return Returned(refused=refused, problems=(problem or unanswered[0],), unread=True)
    sure, doubts = confirmed(first, outsiders(again, keys, kept))
    emptied: list[str] = []
    problems = list(doubts)
    for outsider in sure:
        try:
            wipe(conns, outsider.node, options, outsider.node_id, flush=True)
        except TopologyError as err:
            problems.append(f"emptying {outsider}: {err}")
            continue
        emptied.append(str(outsider))
    return Returned(tuple(emptied), refused, tuple(problems))


def _count_keys(conns: Connections, nodes: Sequence[RedisNode]) -> tuple[dict[RedisNode, int], str]:
    """Each node's DBSIZE, or why one could not be counted."""
    keys: dict[RedisNode, int] = {}
    for node in nodes:
        try:
            reply = conns.call(node, "DBSIZE")
        except TopologyError as err:
            return keys, str(err)
        count = key_count(reply)
        if count is None:
            return keys, f"{node}: DBSIZE: unexpected reply {reply!r}, so no key count"
        keys[node] = count
    return keys, ""


def retire(conns: Connections, options: TopologyOptions, node: RedisNode, node_id: str) -> str:
    """Empty a departing node for good; why it cannot be, or "". A replica holds a copy of its
    master's keys; a master must hold no key any more (nothing may leave with it)."""
    try:
        refusal = departure_refusal(node, node_id, self_look(conns, node))
        if refusal:
            return refusal
        wipe(conns, node, options, node_id, flush=False)
    except TopologyError as err:
        return f"emptying {node} as it leaves: {err}"
    return ""


def self_look(conns: Connections, node: RedisNode) -> SelfLook:
    """The node's own id, role, keys and slots, each None (role "unknown") when it did not answer."""

    def ask(*args: str) -> object:
        try:
            return conns.call(node, *args)
        except TopologyError:
            return None

    nodes = ask("CLUSTER", "NODES")
    try:
        me = next((e for e in parse_cluster_nodes(str(nodes)) if e.is_myself), None) if nodes else None
    except ValueError:
        me = None
    return SelfLook(
        me.node_id if me is not None else None,
        replication_state(ask("ROLE")),
        key_count(ask("DBSIZE")),
        me.slot_count if me is not None else None,
    )


def wipe(conns: Connections, node: RedisNode, options: TopologyOptions, node_id: str, *, flush: bool) -> None:
    """Empty ``node`` for good and give it a new id, once it answers as ``node_id``: CLUSTER RESET
    HARD (first, on a replica, which refuses FLUSHALL and empties itself), FLUSHALL only with
    ``flush`` (an outsider's stale keys; a departing master is reset without it, so Redis refuses if
    it holds a key), CLUSTER RESET HARD, then SAVE (an empty RDB file in place of one a full sync
    wrote) and, with the append-only file on, BGREWRITEAOF until it has finished."""
    # Replies are not looked at: a refusal is a TopologyError.
    answered = conns.run(node, "CLUSTER", "MYID")
    if answered != node_id:
        raise TopologyError(str(node), f"answers as node {answered[:12]}, not {node_id[:12]}: not emptied")
    if replication_state(conns.call(node, "ROLE")) != "master":
        conns.call(node, "CLUSTER", "RESET", "HARD")
    if flush:
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
