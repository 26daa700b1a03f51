"""Which nodes the cluster counts as its own: the pods the client Service may list."""

from __future__ import annotations

from syncer.controller.topology_members import Membership, membership
from syncer.controller.topology_model import NodeView, RedisNode
from syncer.controller.topology_parse import parse_cluster_info, parse_cluster_nodes

A, B, C = RedisNode("10.0.0.1", 6379), RedisNode("10.0.0.2", 6379), RedisNode("10.0.0.3", 6379)
IDS = {A: "a" * 40, B: "b" * 40, C: "c" * 40}


def line(node: RedisNode, flags: str, slots: str = "", master: str = "-", epoch: int = 1) -> str:
    return f"{IDS[node]} {node}@16379 {flags} {master} 0 0 {epoch} connected {slots}".rstrip()


def view(node: RedisNode, lines: list[str], state: str = "ok", epoch: int = 2) -> NodeView:
    info = f"cluster_state:{state}\r\ncluster_known_nodes:{len(lines)}\r\ncluster_current_epoch:{epoch}\r\n"
    return NodeView(node, info=parse_cluster_info(info), entries=parse_cluster_nodes("\n".join(lines)))


def pair(state_of_b: str = "ok", state_of_a: str = "ok") -> dict[RedisNode, NodeView]:
    """A master (A) serving every slot with its replica (B)."""
    return {
        A: view(A, [line(A, "myself,master", "0-16383"), line(B, "slave", master=IDS[A])], state_of_a),
        B: view(B, [line(A, "master", "0-16383"), line(B, "myself,slave", master=IDS[A])], state_of_b),
    }


def test_the_nodes_of_a_formed_cluster_are_members() -> None:
    assert membership(pair()) == Membership(frozenset({A, B}))


def test_a_fresh_node_nobody_met_is_outside() -> None:
    views = {**pair(), C: view(C, [line(C, "myself,master", epoch=0)], "fail", epoch=0)}
    assert membership(views) == Membership(frozenset({A, B}), frozenset({C}))


def test_a_node_back_with_a_one_node_cluster_of_its_own_is_outside() -> None:
    views = {**pair(), C: view(C, [line(C, "myself,master", "0-5460", epoch=7)], epoch=7)}
    assert membership(views) == Membership(frozenset({A, B}), frozenset({C}))


def test_a_node_being_met_is_outside_until_the_handshake_is_over() -> None:
    views = pair()
    meeting = [line(A, "myself,master", "0-16383"), line(B, "slave", master=IDS[A]), line(C, "handshake")]
    views[A] = view(A, meeting)
    views[C] = view(C, [line(C, "myself,master", epoch=0), line(A, "handshake")], "fail", epoch=0)
    assert membership(views) == Membership(frozenset({A, B}), frozenset({C}))


def test_a_node_that_joined_but_has_not_taken_the_slot_map_in_is_outside() -> None:
    assert membership(pair(state_of_b="fail")) == Membership(frozenset({A}), frozenset({B}))


def test_a_cluster_down_as_a_whole_keeps_its_members() -> None:
    assert membership(pair("fail", "fail")) == Membership(frozenset({A, B}))


def test_a_node_that_does_not_answer_is_not_judged() -> None:
    views = {**pair(), C: NodeView(C, error="10.0.0.3:6379: connection refused", unreachable=True)}
    assert membership(views) == Membership(frozenset({A, B}))


def test_two_groups_alike_are_not_judged() -> None:
    # A one-node cluster (A) and a node back alone from it (C): which is the cluster cannot be told.
    views = {
        A: view(A, [line(A, "myself,master", "0-16383")]),
        C: view(C, [line(C, "myself,master", "0-16383", epoch=3)], epoch=3),
    }
    assert membership(views) == Membership()


def test_before_any_slot_is_served_there_is_no_cluster_to_be_a_member_of() -> None:
    views = {n: view(n, [line(n, "myself,master", epoch=0)], "fail", epoch=0) for n in (A, B, C)}
    assert membership(views) == Membership(outside=frozenset({A, B, C}))
