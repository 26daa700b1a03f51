"""converge against real redis-fresh_servers when a node comes back with data of another shape: one that
left the way a departure did before (CLUSTER RESET SOFT, forgotten) and restarts on its kept files
loads its stale keys and claims their slots as a one-node cluster; it is emptied and reset before it
is met and joins as a replica, with a client writing and reading throughout. One holding keys while
the cluster does not serve every slot is left out and reported, never met."""

from __future__ import annotations

import pytest

from syncer.controller.topology import (
    ClusterNodeEntry,
    RedisNode,
    TopologyOptions,
    bootstrap,
    parse_cluster_nodes,
)
from syncer.controller.topology_converge import converge
from tests.integration.topology.servers import RedisServers, client, cluster_command, shards_of
from tests.integration.topology.traffic import Traffic
from tests.support.waiting import eventually

pytestmark = pytest.mark.integration

OPTIONS = TopologyOptions(timeout=2.0, meet_timeout=20.0, ready_timeout=30.0)


def myself(node: RedisNode) -> ClusterNodeEntry:
    return next(e for e in parse_cluster_nodes(cluster_command(node, "NODES")) if e.is_myself)


def keys_of(node: RedisNode) -> int:
    with client(node) as conn:
        return int(conn.dbsize())


def test_a_replica_back_with_stale_keys_of_a_one_node_cluster_is_emptied_and_joins(
    fresh_servers: RedisServers,
) -> None:
    shards = shards_of(fresh_servers.start(6), 3)
    assert bootstrap(shards, OPTIONS).healthy
    traffic = Traffic([shards[0][0]], bulk=5000).start()
    replica = shards[0][1]
    replica_id = cluster_command(replica, "MYID")
    # Its data on disk, as its append-only file holds it with persistence on: once its full sync has
    # brought the preloaded keys (on a busy machine that comes after bootstrap has returned).
    master = shards[0][0]
    eventually("the replica to hold its master's keys", lambda: 0 < keys_of(replica) == keys_of(master), 60)
    with client(replica) as conn:
        conn.save()
    # The departure of before: RESET SOFT empties memory only; the kept nodes forget it.
    cluster_command(replica, "RESET", "SOFT")
    for node in [n for shard in shards for n in shard if n != replica]:
        cluster_command(node, "FORGET", replica_id)
    fresh_servers.restart(replica)  # back on its kept files: the full sync's RDB file and nodes.conf
    came_back = myself(replica)
    assert keys_of(replica) > 0, "the returning node should hold its stale keys"
    assert came_back.is_master, "it should come back as a master"
    assert came_back.slot_count > 0, "it should claim the slots of its keys"

    result = converge(shards, (), OPTIONS)
    assert result.report.healthy, (result.report.summary(), result.problems)
    assert [reason for reason, _ in result.events if reason == "ReturningNodesReset"], result.events
    joined = myself(replica)
    assert joined.is_replica
    assert joined.slot_count == 0
    assert joined.node_id != replica_id, "a hard reset gives it a new id"
    # The pass ends with a look at every node: all of them members now (the client Service's pods).
    assert result.membership.members == {n for shard in shards for n in shard}
    outcome = traffic.stop([replica])  # read back through a client that starts from the returning node
    print(outcome.summary())
    assert outcome.lost == ()
    assert outcome.stale_reads == 0


def test_a_node_with_keys_while_slots_have_no_master_is_left_out(fresh_servers: RedisServers) -> None:
    master, gone, stranger = fresh_servers.start(3)
    assert bootstrap([[master], [gone]], OPTIONS).healthy
    fresh_servers.kill(gone)  # no replica, no persistence: its slots have no master now
    cluster_command(stranger, "ADDSLOTSRANGE", 8192, 16383)
    with client(stranger) as conn:
        conn.config_set("cluster-require-full-coverage", "no")
        eventually(
            "the stranger's cluster_state ok",
            lambda: "cluster_state:ok" in cluster_command(stranger, "INFO"),
            10,
        )
        conn.set("kept{x}", "only copy")  # a slot in 8192-16383

    result = converge([[master], [stranger]], (), OPTIONS)
    assert cluster_command(stranger, "MYID") not in cluster_command(master, "NODES"), "it was met"
    assert keys_of(stranger) == 1
    assert not result.report.healthy
    assert len(result.refused) == 1
    assert str(stranger) in result.refused[0]
    assert "left out" in result.refused[0]
    # Each serves half the slots alone: which is the cluster cannot be told, so neither is judged
    # (the master's pod keeps the label it has, the stranger's never gets one).
    assert stranger not in result.membership.members, "a node left out is not offered to clients"
    assert result.membership.members == result.membership.outside == frozenset()
