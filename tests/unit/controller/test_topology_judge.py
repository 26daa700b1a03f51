"""Judging node views (parsed from captured redis-server 7.0 replies) into a topology report."""

from __future__ import annotations

from syncer.controller.topology_model import NodeView, RedisNode, judge
from syncer.controller.topology_parse import SlotRange, parse_cluster_info, parse_cluster_nodes
from tests.unit.controller.test_topology_parse import (
    FORMED_INFO,
    FORMED_NODES_SEEN_BY_MASTER,
    FORMED_NODES_SEEN_BY_REPLICA,
    FRESH_INFO,
    FRESH_NODES,
    M1,
    M3,
    PFAIL_AND_FAIL_NODES,
    PFAIL_INFO,
)

N1 = RedisNode("127.0.0.1", 17001)
N4 = RedisNode("127.0.0.1", 17004)


def view(node: RedisNode, nodes: str, info: str) -> NodeView:
    return NodeView(node, info=parse_cluster_info(info), entries=parse_cluster_nodes(nodes))


def formed() -> list[NodeView]:
    return [
        view(N1, FORMED_NODES_SEEN_BY_MASTER, FORMED_INFO),
        view(N4, FORMED_NODES_SEEN_BY_REPLICA, FORMED_INFO),
    ]


def test_formed_cluster_is_healthy_with_shards_and_replicas() -> None:
    report = judge(formed(), 3)
    assert report.healthy
    assert report.cluster_state == "ok"
    assert report.slots_covered == 16384
    assert report.errors == ()
    assert report.failed_nodes == ()
    assert [(m.master, m.slot_ranges, m.replicas) for m in report.masters] == [
        ("127.0.0.1:17001", (SlotRange(0, 5460),), ("127.0.0.1:17004",)),
        ("127.0.0.1:17002", (SlotRange(5461, 10922),), ("127.0.0.1:17005",)),
        ("127.0.0.1:17003", (SlotRange(10923, 16383),), ("127.0.0.1:17006",)),
    ]
    assert report.masters[0].node_id == M1
    assert report.summary() == (
        "healthy: cluster_state ok, 16384/16384 slots covered, 3/3 masters with slots, 3 replicas"
    )


def test_more_shards_expected_than_served_is_unhealthy() -> None:
    report = judge(formed(), 4)
    assert not report.healthy
    assert "3/4 masters with slots" in report.summary()


def test_failed_and_suspected_masters_make_it_unhealthy_even_when_state_is_ok() -> None:
    # 17003 failed and 17006 took its slots; 17002 is only suspected (fail?) so far.
    report = judge([view(N1, PFAIL_AND_FAIL_NODES, PFAIL_INFO)], 3)
    assert report.cluster_state == "ok"
    assert not report.healthy
    assert report.failed_nodes == ("127.0.0.1:17002", "127.0.0.1:17003")
    assert report.suspected_nodes == ("127.0.0.1:17002",)
    assert report.slots_covered == 16384 - 5462
    assert [m.master for m in report.masters_with_slots] == ["127.0.0.1:17001", "127.0.0.1:17006"]
    dead = next(m for m in report.masters if m.master == "127.0.0.1:17003")
    assert dead.failed
    assert dead.slots == 0
    assert "failed: 127.0.0.1:17002, 127.0.0.1:17003" in report.summary()


def test_the_most_recent_view_is_the_reference() -> None:
    # The pfail view has current epoch 6, the formed one 5: the newer picture wins.
    report = judge([*formed(), view(N1, PFAIL_AND_FAIL_NODES, PFAIL_INFO)], 3)
    assert report.slots_covered == 16384 - 5462
    assert not report.healthy


def test_unreachable_node_is_listed_and_named() -> None:
    dead = RedisNode("10.0.0.9", 6379)
    gone = NodeView(dead, error="10.0.0.9:6379: unreachable: Connection refused.", unreachable=True)
    report = judge([*formed(), gone], 3)
    assert not report.healthy
    assert report.unreachable == ("10.0.0.9:6379",)
    assert report.errors == ("10.0.0.9:6379: unreachable: Connection refused.",)
    assert "unreachable: 10.0.0.9:6379" in report.summary()
    assert "error: 10.0.0.9:6379: unreachable" in report.summary()


def test_unreadable_but_reachable_node_is_an_error_not_unreachable() -> None:
    wrong = NodeView(N4, error="127.0.0.1:17004: authentication failed: WRONGPASS invalid username-password")
    report = judge([formed()[0], wrong], 3)
    assert not report.healthy
    assert report.unreachable == ()
    assert report.errors == (wrong.error,)


def test_nothing_readable_means_unknown() -> None:
    report = judge([NodeView(N1, error="127.0.0.1:17001: unreachable: timeout", unreachable=True)], 3)
    assert report.cluster_state == "unknown"
    assert report.slots_covered == 0
    assert not report.healthy
    assert judge([], 3).errors == ("no node could be read",)


def test_a_node_reporting_fail_sets_the_state() -> None:
    fresh_stranger = FRESH_NODES.replace(M1, "f" * 40)
    report = judge([*formed(), view(RedisNode("127.0.0.1", 17009), fresh_stranger, FRESH_INFO)], 3)
    assert report.cluster_state == "fail"
    assert not report.healthy
    assert any("127.0.0.1:17009: node ffff" in e and "not a member" in e for e in report.errors)


def test_replica_of_an_unknown_master_is_an_error() -> None:
    lines = [line for line in FORMED_NODES_SEEN_BY_MASTER.splitlines() if not line.startswith(M3)]
    report = judge([view(N1, "\n".join(lines), FORMED_INFO)], 3)
    assert not report.healthy
    expected = f"replica 127.0.0.1:17006 follows {M3}, which is not a known master"
    assert any(expected in e for e in report.errors), report.errors


def test_extra_errors_make_it_unhealthy() -> None:
    busy = "127.0.0.1:17001: CLUSTER ADDSLOTSRANGE 0 5460: Slot 0 is already busy"
    report = judge(formed(), 3, [busy])
    assert not report.healthy
    assert report.summary().endswith(f"error: {busy}")


def test_the_same_error_is_reported_once() -> None:
    gone = NodeView(
        RedisNode("10.0.0.9", 6379), error="10.0.0.9:6379: unreachable: refused", unreachable=True
    )
    report = judge([*formed(), gone], 3, [gone.error])
    assert report.errors == (gone.error,)


def test_masters_without_slots_are_listed() -> None:
    nodes = FORMED_NODES_SEEN_BY_MASTER + FRESH_NODES.replace(M1, "f" * 40).replace(
        ":17001@27001 myself,master", "127.0.0.1:17009@27009 master"
    )
    report = judge([view(N1, nodes, FORMED_INFO)], 3)
    assert [m.master for m in report.masters_without_slots] == ["127.0.0.1:17009"]
    assert len(report.masters_with_slots) == 3
    assert report.healthy


def test_open_slots_ghosts_and_replication_make_it_unhealthy_with_a_reason() -> None:
    assert judge(formed(), 3).reason == "Healthy"
    broken = judge(formed(), 3, replication=["127.0.0.1:17004 is not in sync with its master (link sync)"])
    assert not broken.healthy
    assert broken.reason == "ReplicationBroken"
    assert "replication: 127.0.0.1:17004 is not in sync" in broken.summary()
    opened = FORMED_NODES_SEEN_BY_MASTER.replace("connected 0-5460", "connected 0-5460 [5->-" + M3 + "]")
    report = judge([view(N1, opened, FORMED_INFO), view(N4, FORMED_NODES_SEEN_BY_REPLICA, FORMED_INFO)], 3)
    assert report.open_slots == (5,)
    assert report.reason == "SlotsOpen"
    assert not report.healthy
    ghost = (
        FORMED_NODES_SEEN_BY_MASTER
        + "0000000000000000000000000000000000000009 :0@0 noaddr,master - 0 0 0 disconnected\n"
    )
    report = judge([view(N1, ghost, FORMED_INFO), view(N4, FORMED_NODES_SEEN_BY_REPLICA, FORMED_INFO)], 3)
    assert report.reason == "GhostNodes"
    assert report.ghost_nodes


def every_view(nodes: str, info: str = FORMED_INFO) -> list[NodeView]:
    """The view of each of the six nodes of ``nodes`` (as 17001 sees them): the same lines, each with
    its own line flagged myself."""
    views = []
    plain = nodes.replace("myself,", "")
    for port in range(17001, 17007):
        own = plain.replace(f"127.0.0.1:{port}@{port + 10000} ", f"127.0.0.1:{port}@{port + 10000} myself,")
        views.append(view(RedisNode("127.0.0.1", port), own, info))
    return views


STALE = "0000000000000000000000000000000000000007 127.0.0.1:17007@27007 slave " + M1 + " 0 0 1 disconnected\n"


def test_an_entry_that_is_none_of_the_nodes_is_unhealthy_when_the_views_are_of_every_node() -> None:
    assert judge(every_view(FORMED_NODES_SEEN_BY_MASTER), 3, every_node=True).healthy
    # A pod back with a new id: its former id stays listed, unflagged, until Redis' node timeout.
    views = every_view(FORMED_NODES_SEEN_BY_MASTER)
    views[2] = every_view(FORMED_NODES_SEEN_BY_MASTER + STALE)[2]
    report = judge(views, 3, every_node=True)
    assert not report.healthy
    assert report.reason == "GhostNodes"
    assert report.ghost_nodes == ("127.0.0.1:17007 (id 000000000000, no such node)",)
    # Views of some nodes only (or one not answering) cannot tell a stranger from an unread member.
    assert judge(views, 3).healthy
    down = NodeView(views[0].node, error="127.0.0.1:17001: unreachable: timeout", unreachable=True)
    assert "no such node" not in judge([down, *views[1:]], 3, every_node=True).summary()


def test_a_linked_entry_that_is_none_of_the_nodes_is_a_leaving_member_not_a_ghost() -> None:
    leaving = STALE.replace("disconnected", "connected")
    report = judge(every_view(FORMED_NODES_SEEN_BY_MASTER + leaving), 3, every_node=True)
    assert report.healthy, report.summary()
