"""Which nodes the Redis cluster counts as its own, judged from what the nodes said. Pure.

Owns: ``groups`` (nodes that know each other), ``served`` (the slots a group's masters claim),
``main_group`` (the group the cluster forms: the biggest, then the one serving most slots) and
``membership``: the nodes of that group that agree with it (members), the nodes judged outside it
(fresh and not met yet, back from another shape, another group, not agreeing yet), and by
omission the nodes nothing can be said of (no answer, or two groups alike). The controller labels
the pods of members so that the client Service lists only them (``syncer.controller.membership``).

Must not: open connections, sleep or talk to Kubernetes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from syncer.controller.topology_model import NodeView, RedisNode


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


@dataclass(frozen=True)
class MainGroup:
    """The group the cluster forms, the groups that weigh as much (``alike``: which of them is the
    cluster cannot be told) and the slots the group's masters serve."""

    nodes: tuple[RedisNode, ...]
    alike: tuple[tuple[RedisNode, ...], ...]
    slots: int


def main_group(views: Mapping[RedisNode, NodeView]) -> MainGroup:
    """The biggest group, then the one whose masters serve most slots, then the first."""
    found = groups(views)
    weights = [(len(g), len(served(views, g))) for g in found]
    heaviest = max(weights)
    main = found[weights.index(heaviest)]
    alike = tuple(tuple(g) for g, w in zip(found, weights, strict=True) if w == heaviest and g is not main)
    return MainGroup(tuple(main), alike, heaviest[1])


@dataclass(frozen=True)
class Membership:
    """``members``: nodes of the cluster's group that agree with it; ``outside``: nodes judged not
    to be (yet); a node in neither was not judged (it did not answer, or its group and another
    weigh the same)."""

    members: frozenset[RedisNode] = frozenset()
    outside: frozenset[RedisNode] = frozenset()


def membership(views: Mapping[RedisNode, NodeView]) -> Membership:
    """Members are the nodes of the cluster's group (``main_group``, once it serves a slot) whose
    own ``cluster_state`` is ok, or that say what every node of the group says (a cluster that is
    down as a whole keeps its members: no node of it would serve a client better). A node that
    just joined and has not taken the slot map in yet, a fresh node nobody met, a node back from
    another shape and any node of another group are outside. Only the nodes that answered are
    judged; when another group weighs as much as the cluster's, their nodes are not judged."""
    readable = {n: v for n, v in views.items() if v.info is not None and v.myself is not None and not v.error}
    if not readable:
        return Membership()
    main = main_group(readable)
    undecided = {node for group in main.alike for node in group}
    if main.alike:
        undecided |= set(main.nodes)
    if not main.slots:
        return Membership(outside=frozenset(readable))
    states = {node: info.state if (info := readable[node].info) else "" for node in main.nodes}
    anyone_ok = "ok" in states.values()
    members = frozenset(
        node for node in main.nodes if node not in undecided and (states[node] == "ok" or not anyone_ok)
    )
    outside = frozenset(readable) - members - undecided
    return Membership(members, outside)
