"""Which kept nodes came back from another shape, and whether each is emptied or left out."""

from __future__ import annotations

from syncer.controller.topology_members import groups
from syncer.controller.topology_model import NodeView, RedisNode
from syncer.controller.topology_parse import parse_cluster_info, parse_cluster_nodes
from syncer.controller.topology_volumes import outsiders

A, B, C = RedisNode("10.0.0.1", 6379), RedisNode("10.0.0.2", 6379), RedisNode("10.0.0.3", 6379)
IDS = {A: "a" * 40, B: "b" * 40, C: "c" * 40}


def line(node: RedisNode, flags: str, slots: str = "", master: str = "-", epoch: int = 1) -> str:
    return f"{IDS[node]} {node}@16379 {flags} {master} 0 0 {epoch} connected {slots}".rstrip()


def view(node: RedisNode, lines: list[str], epoch: int = 2) -> NodeView:
    info = f"cluster_state:ok\r\ncluster_known_nodes:{len(lines)}\r\ncluster_current_epoch:{epoch}\r\n"
    return NodeView(node, info=parse_cluster_info(info), entries=parse_cluster_nodes("\n".join(lines)))


def pair(served: str = "0-16383") -> dict[RedisNode, NodeView]:
    """A master (A) serving ``served`` with its replica (B)."""
    return {
        A: view(A, [line(A, "myself,master", served), line(B, "slave", master=IDS[A])]),
        B: view(B, [line(A, "master", served), line(B, "myself,slave", master=IDS[A])]),
    }


def test_a_node_back_alone_with_stale_keys_and_slots_is_emptied_when_the_cluster_serves_every_slot() -> None:
    views = {**pair(), C: view(C, [line(C, "myself,master", "0-5460", epoch=7)], epoch=7)}
    [found] = outsiders(views, {A: 100, B: 100, C: 70000}, [A, B, C])
    assert found.node == C
    assert found.wipe
    assert (found.keys, found.slots, found.known, found.epoch) == (70000, 5461, 0, 7)


def test_a_node_back_with_keys_while_the_cluster_lacks_slots_is_left_out_with_the_reason() -> None:
    views = {**pair("0-8191"), C: view(C, [line(C, "myself,master", "8192-16383")])}
    [found] = outsiders(views, {A: 10, B: 10, C: 5}, [A, B, C])
    assert not found.wipe
    assert "8192/16384 slots" in found.reason


def test_a_node_with_keys_that_looks_like_the_cluster_is_left_out() -> None:
    # A one-node cluster (A) and a node back alone from it (C), both serving every slot.
    views = {
        A: view(A, [line(A, "myself,master", "0-16383")]),
        C: view(C, [line(C, "myself,master", "0-16383", epoch=3)], epoch=3),
    }
    [found] = outsiders(views, {A: 10, C: 10}, [A, C])
    assert found.node == C
    assert not found.wipe
    assert "cannot be told" in found.reason
    # Without keys it is emptied all the same: nothing can be lost.
    [empty] = outsiders(views, {A: 10, C: 0}, [A, C])
    assert empty.wipe


def test_the_bigger_group_is_the_cluster_even_when_a_node_claims_more_slots() -> None:
    views = {**pair("0-8191"), C: view(C, [line(C, "myself,master", "0-16383")])}
    [found] = outsiders(views, {A: 10, B: 10, C: 10}, [A, B, C])
    assert found.node == C


def test_a_node_back_empty_with_its_old_id_and_epoch_is_emptied_too() -> None:
    # What CLUSTER RESET SOFT leaves: no key, no slot, nobody known, but its epochs (and its id, which
    # the cluster banned for 60 s when it forgot it).
    views = {**pair(), C: view(C, [line(C, "myself,master", epoch=3)], epoch=3)}
    [found] = outsiders(views, {A: 1, B: 1, C: 0}, [A, B, C])
    assert found.wipe


def test_fresh_nodes_and_members_are_not_outsiders() -> None:
    fresh = view(C, [line(C, "myself,master", epoch=0)], epoch=0)
    assert outsiders({**pair(), C: fresh}, {A: 1, B: 1, C: 0}, [A, B, C]) == []
    # A fresh cluster: every node alone and empty.
    alone = {n: view(n, [line(n, "myself,master", epoch=0)], epoch=0) for n in (A, B, C)}
    assert outsiders(alone, dict.fromkeys(alone, 0), [A, B, C]) == []


def test_a_member_whose_address_is_lost_is_still_in_the_group() -> None:
    views = pair()
    views[B] = view(B, [line(A, "master,noaddr", "0-16383"), line(B, "myself,slave", master=IDS[A])])
    assert groups(views) == [[A, B]]
    assert outsiders(views, {A: 1, B: 1}, [A, B]) == []
