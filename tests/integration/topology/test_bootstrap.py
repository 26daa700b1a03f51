"""Forming a 3-master, 3-replica cluster of real redis-servers, and forming it again."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from syncer.controller.topology import (
    RedisNode,
    SlotRange,
    TopologyOptions,
    TopologyReport,
    bootstrap,
    inspect,
    parse_cluster_info,
    parse_cluster_nodes,
)
from tests.integration.topology.servers import RedisServers, client, cluster_command, free_ports, shards_of

pytestmark = pytest.mark.integration

OPTIONS = TopologyOptions(timeout=5.0, meet_timeout=20.0, ready_timeout=30.0)


@dataclass(frozen=True)
class Formed:
    nodes: list[RedisNode]
    shards: list[list[RedisNode]]
    report: TopologyReport


@pytest.fixture(scope="module")
def formed(servers: RedisServers) -> Formed:
    nodes = servers.start(6)
    shards = shards_of(nodes, 3)
    return Formed(nodes, shards, bootstrap(shards, OPTIONS))


def snapshot(nodes: list[RedisNode]) -> dict[str, object]:
    """What each node says about itself: id, role, master, config epoch, slots; plus current epochs."""
    state: dict[str, object] = {}
    for node in nodes:
        me = next(e for e in parse_cluster_nodes(cluster_command(node, "NODES")) if e.is_myself)
        info = parse_cluster_info(cluster_command(node, "INFO"))
        state[str(node)] = (
            me.node_id,
            sorted(me.flags),
            me.master_id,
            me.config_epoch,
            me.slots,
            info.current_epoch,
        )
    return state


def test_three_masters_three_replicas_reach_ok_with_all_slots(formed: Formed) -> None:
    report = formed.report
    assert report.errors == ()
    assert report.healthy, report.summary()
    assert report.cluster_state == "ok"
    assert report.slots_covered == 16384
    assert report.failed_nodes == ()
    assert report.unreachable == ()
    served = report.masters_with_slots
    assert [m.master for m in served] == [str(shard[0]) for shard in formed.shards]
    assert [m.slot_ranges for m in served] == [
        (SlotRange(0, 5460),),
        (SlotRange(5461, 10922),),
        (SlotRange(10923, 16383),),
    ]
    assert [m.replicas for m in served] == [(str(shard[1]),) for shard in formed.shards]
    assert report.summary().startswith("healthy: cluster_state ok, 16384/16384 slots covered, 3/3 masters")
    verbs = sorted(a.split(": ", 1)[1].split()[1] for a in report.actions)
    # Every pair met at once (6 nodes: 15 pairs), so gossip has nothing to spread before the slots.
    assert verbs == ["ADDSLOTSRANGE"] * 3 + ["MEET"] * 15 + ["REPLICATE"] * 3


def test_each_master_starts_its_replica_sync_once_its_replicas_wait(formed: Formed) -> None:
    """Not after ``repl-diskless-sync-delay`` (5 s): the master was told how many replicas come."""
    for master, _ in formed.shards:
        with client(master) as conn:
            reply = conn.config_get("repl-diskless-sync-max-replicas")
        assert reply == {"repl-diskless-sync-max-replicas": "1"}


def test_each_replica_follows_its_shard_master_as_every_node_sees_it(formed: Formed) -> None:
    for master, replica in formed.shards:
        master_id = cluster_command(master, "MYID")
        replica_id = cluster_command(replica, "MYID")
        for node in formed.nodes:
            info = parse_cluster_info(cluster_command(node, "INFO"))
            assert info.state == "ok"
            assert info.slots_assigned == 16384
            entries = parse_cluster_nodes(cluster_command(node, "NODES"))
            entry = next(e for e in entries if e.node_id == replica_id)
            assert entry.is_replica, (node, entry)
            assert entry.master_id == master_id, (node, entry)


def test_bootstrap_again_changes_nothing(formed: Formed) -> None:
    before = snapshot(formed.nodes)
    again = bootstrap(formed.shards, OPTIONS)
    assert again.actions == ()
    assert again.errors == ()
    assert again.healthy, again.summary()
    assert snapshot(formed.nodes) == before


def test_inspect_reports_the_formed_cluster(formed: Formed) -> None:
    report = inspect(formed.nodes, 3, OPTIONS)
    assert report.healthy, report.summary()
    assert report.actions == ()
    assert [m.master for m in report.masters] == [str(shard[0]) for shard in formed.shards]
    assert report.replica_count == 3


def test_inspect_with_a_different_shard_count_is_unhealthy(formed: Formed) -> None:
    report = inspect(formed.nodes, 4, OPTIONS)
    assert not report.healthy
    assert report.cluster_state == "ok"
    assert report.slots_covered == 16384
    assert "3/4 masters with slots" in report.summary()


def test_unreachable_node_is_reported_with_its_address(formed: Formed) -> None:
    (port,) = free_ports(1)  # nothing listens there
    dead = RedisNode("127.0.0.1", port)
    report = inspect([*formed.nodes, dead], 3, OPTIONS)
    assert not report.healthy
    assert report.unreachable == (str(dead),)
    assert [e for e in report.errors if e.startswith(f"{dead}: unreachable")], report.errors
    assert f"unreachable: {dead}" in report.summary()


def test_bootstrap_with_an_unreachable_node_changes_nothing_and_names_it(formed: Formed) -> None:
    (port,) = free_ports(1)
    dead = RedisNode("127.0.0.1", port)
    before = snapshot(formed.nodes)
    report = bootstrap([*formed.shards, [dead]], OPTIONS)
    assert not report.healthy
    assert report.actions == ()
    assert str(dead) in report.unreachable
    assert any(e.startswith(f"{dead}: unreachable") and "Connection refused" in e for e in report.errors)
    assert snapshot(formed.nodes) == before
