"""Which first looks at a cluster mean its servers are still starting (and are waited for)."""

from __future__ import annotations

from syncer.controller.topology_converge import starting
from syncer.controller.topology_model import NodeView, RedisNode
from syncer.controller.topology_parse import ClusterNodeEntry, SlotRange

A, B = RedisNode("10.0.0.1", 6379), RedisNode("10.0.0.2", 6379)


def entry(node_id: str, *, myself: bool = True, slots: tuple[SlotRange, ...] = ()) -> ClusterNodeEntry:
    flags = frozenset({"myself", "master"} if myself else {"master"})
    return ClusterNodeEntry(node_id, "10.0.0.9:6379@16379", flags, "-", 0, "connected", slots)


REFUSED = NodeView(B, error="10.0.0.2:6379: unreachable: Connection refused.", unreachable=True)


def test_fresh_nodes_beside_one_that_refuses_connections_are_starting() -> None:
    assert starting([NodeView(A, entries=(entry("a"),)), REFUSED])
    assert starting([REFUSED])


def test_every_node_answering_is_not_waited_for() -> None:
    assert not starting([NodeView(A, entries=(entry("a"),)), NodeView(B, entries=(entry("b"),))])


def test_a_node_that_answers_with_an_error_is_not_starting() -> None:
    refused_auth = NodeView(B, error="10.0.0.2:6379: authentication failed: WRONGPASS")
    assert not starting([NodeView(A, entries=(entry("a"),)), refused_auth])


def test_a_cluster_already_formed_is_not_starting() -> None:
    knows_another = NodeView(A, entries=(entry("a"), entry("c", myself=False)))
    serves = NodeView(A, entries=(entry("a", slots=(SlotRange(0, 100),)),))
    assert not starting([knows_another, REFUSED])
    assert not starting([serves, REFUSED])
