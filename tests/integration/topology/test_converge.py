"""converge against real redis-fresh_servers, with a client writing and reading a keyset throughout:
scale-out rebalances by live migration, scale-in drains then forgets, a migration interrupted
half-way is finished, an import nothing was moved for is rolled back, a departing master fails over
to its kept replica, and a node that came back empty on a pod's address is forgotten and resynced."""

from __future__ import annotations

import pytest

from syncer.controller.topology import RedisNode, TopologyOptions, bootstrap, parse_cluster_nodes
from syncer.controller.topology_converge import converge
from tests.integration.topology.servers import RedisServers, client, cluster_command, shards_of
from tests.integration.topology.traffic import Traffic, TrafficResult
from tests.support.waiting import eventually

pytestmark = pytest.mark.integration


OPTIONS = TopologyOptions(timeout=2.0, meet_timeout=20.0, ready_timeout=30.0)


def slot_counts(node: RedisNode) -> dict[str, int]:
    entries = parse_cluster_nodes(cluster_command(node, "NODES"))
    return {e.name: e.slot_count for e in entries if e.is_master and e.slot_count}


def known(node: RedisNode) -> set[str]:
    return {e.name for e in parse_cluster_nodes(cluster_command(node, "NODES"))}


def role(node: RedisNode) -> str:
    with client(node) as conn:
        return str(conn.info("replication")["role"])


def assert_kept(result: TrafficResult) -> None:
    print(result.summary())
    assert result.lost == (), f"{len(result.lost)} keys lost: {result.lost[:5]}"
    assert result.stale_reads == 0
    assert result.writes > 0


def formed(fresh_servers: RedisServers, masters: int, replicas: int) -> list[list[RedisNode]]:
    nodes = fresh_servers.start(masters * (1 + replicas))
    shards = shards_of(nodes, masters)
    report = bootstrap(shards, OPTIONS)
    assert report.healthy, report.summary()
    return shards


def test_scale_out_then_in_moves_every_key_and_forgets_the_departed(fresh_servers: RedisServers) -> None:
    shards = formed(fresh_servers, 3, 1)
    new_shard = fresh_servers.start(2)
    traffic = Traffic([shards[0][0]]).start()

    grown = converge([*shards, new_shard], (), OPTIONS)
    assert grown.report.healthy, (grown.report.summary(), grown.problems)
    counts = slot_counts(shards[0][0])
    assert len(counts) == 4
    assert max(counts.values()) - min(counts.values()) <= 1, counts
    assert grown.keys_moved > 0
    assert any(reason == "SlotsMigrated" for reason, _ in grown.events)
    # Already even: a second pass moves nothing.
    again = converge([*shards, new_shard], (), OPTIONS)
    assert again.report.healthy
    assert again.keys_moved == 0
    assert again.events == ()

    shrunk = converge(shards[:2], [*shards[2], *new_shard], OPTIONS)
    assert shrunk.departed, shrunk.problems
    assert shrunk.report.healthy, shrunk.report.summary()
    counts = slot_counts(shards[0][0])
    assert len(counts) == 2, counts
    assert max(counts.values()) - min(counts.values()) <= 1, counts
    gone = {str(n) for n in (*shards[2], *new_shard)}
    for node in (*shards[0], *shards[1]):
        assert not known(node) & gone, f"{node} still knows departed nodes"
    assert_kept(traffic.stop([shards[0][0]]))


def test_an_interrupted_migration_is_finished_and_a_bare_import_rolled_back(
    fresh_servers: RedisServers,
) -> None:
    shards = formed(fresh_servers, 2, 0)
    a, b = shards[0][0], shards[1][0]
    traffic = Traffic([a], bulk=5000).start()
    ids = {n: cluster_command(n, "MYID") for n in (a, b)}
    with client(a) as conn:
        tag = next(f"t{i}" for i in range(100) if conn.execute_command("CLUSTER", "KEYSLOT", f"t{i}") < 8000)
        slot = conn.execute_command("CLUSTER", "KEYSLOT", tag)
        conn.mset({f"{{{tag}}}:{n}": str(n) for n in range(20)})
        traffic.acked.update({f"{{{tag}}}:{n}": str(n) for n in range(20)})
        keys = conn.execute_command("CLUSTER", "GETKEYSINSLOT", slot, 100)
    # What a controller killed in the middle of moving ``slot`` leaves behind: both sides open and
    # some of the keys already on the target.
    cluster_command(b, "SETSLOT", slot, "IMPORTING", ids[a])
    cluster_command(a, "SETSLOT", slot, "MIGRATING", ids[b])
    with client(a) as conn:
        conn.execute_command("MIGRATE", b.host, b.port, "", 0, 5000, "KEYS", *keys[:2])
    # And an import opened on b for another slot, with nothing moved yet.
    bare = slot + 1
    cluster_command(b, "SETSLOT", bare, "IMPORTING", ids[a])

    fixed = converge(shards, (), OPTIONS)
    assert any(reason == "OpenSlotsFixed" for reason, _ in fixed.events), fixed.events
    assert fixed.report.open_slots == ()
    assert fixed.report.healthy, fixed.report.summary()
    owner = {e.node_id: e for e in parse_cluster_nodes(cluster_command(a, "NODES"))}
    assert any(r.start <= slot <= r.end for r in owner[ids[b]].slots), "the migration was finished"
    assert any(r.start <= bare <= r.end for r in owner[ids[a]].slots), "the bare import was rolled back"
    assert_kept(traffic.stop([a]))


def test_a_departing_master_fails_over_to_its_kept_replica(fresh_servers: RedisServers) -> None:
    shards = formed(fresh_servers, 3, 2)
    traffic = Traffic([shards[0][0]], bulk=3000).start()
    # Make the pod that will be removed (the last of shard 0) its master first.
    leaving = shards[0][2]
    cluster_command(leaving, "FAILOVER")
    eventually("the failover", lambda: role(leaving) == "master", 30.0)

    kept = [shards[0][:2], [*shards[1]], [*shards[2]]]
    done = converge(kept, [leaving], OPTIONS)
    assert done.departed, done.problems
    assert "MasterFailedOver" in {r for r, _ in done.events}, done.events
    assert done.report.healthy, done.report.summary()
    assert str(leaving) not in known(shards[0][0])
    assert_kept(traffic.stop([shards[0][0]]))


def test_a_node_back_empty_on_its_address_is_resynced_and_its_ghost_forgotten(
    fresh_servers: RedisServers,
) -> None:
    shards = formed(fresh_servers, 3, 1)
    # The master is killed: only writes its replica acknowledged can survive that (see Traffic).
    traffic = Traffic([shards[0][0]], bulk=3000, durable=True).start()
    master, replica = shards[1]
    old_id = cluster_command(master, "MYID")
    fresh_servers.kill(master)
    # The replica takes over; the pod comes back on the same address with an empty data directory.
    eventually("the failover", lambda: role(replica) == "master", 30.0)
    fresh_servers.restart(master, fresh=True)
    assert cluster_command(master, "MYID") != old_id

    def healed() -> object | None:
        result = converge(shards, (), OPTIONS)
        return result if result.report.healthy else None

    result = eventually("the cluster to heal", healed, 60.0)
    assert result is not None
    entries = parse_cluster_nodes(cluster_command(replica, "NODES"))
    assert old_id not in {e.node_id for e in entries}
    me = next(e for e in parse_cluster_nodes(cluster_command(master, "NODES")) if e.is_myself)
    assert me.is_replica, "the empty node must follow the shard's master, never serve its slots"
    assert_kept(traffic.stop([shards[0][0]]))


def test_two_nodes_back_on_each_others_addresses_are_introduced_again(fresh_servers: RedisServers) -> None:
    """Pods with kept data directories come back on each other's former IPs: each node then meets,
    at the other's recorded address, a node with another id and flags that entry ``noaddr``; Redis
    never takes such an address from gossip, so without a MEET the two stay blind to each other."""
    shards = formed(fresh_servers, 3, 1)
    (m0, r0), (m1, r1), _ = shards
    ids = {r0: cluster_command(r0, "MYID"), r1: cluster_command(r1, "MYID")}
    fresh_servers.kill(r0)
    fresh_servers.kill(r1)
    for suffix in ("conf", "rdb"):
        names = [
            fresh_servers.root / f"{'nodes' if suffix == 'conf' else 'dump'}-{n.host}-{n.port}.{suffix}"
            for n in (r0, r1)
        ]
        swap = names[0].with_suffix(".swap")
        names[0].rename(swap)
        names[1].rename(names[0])
        swap.rename(names[1])
    fresh_servers.restart(r0)
    fresh_servers.restart(r1)
    assert cluster_command(r0, "MYID") == ids[r1]

    def noaddr() -> bool:
        return any(
            "noaddr" in e.flags for n in (r0, r1) for e in parse_cluster_nodes(cluster_command(n, "NODES"))
        )

    eventually("a noaddr entry", noaddr, 30.0)
    layout = [[m0, r1], [m1, r0], shards[2]]

    def healed() -> object | None:
        result = converge(layout, (), OPTIONS)
        return result if result.report.healthy else None

    assert eventually("the two to know each other again", healed, 90.0) is not None
    for node in (r0, r1):
        entries = parse_cluster_nodes(cluster_command(node, "NODES"))
        assert len(entries) == 6
        assert not any(e.is_ghost for e in entries), [(e.name, e.flags) for e in entries]


def test_a_node_back_with_a_new_id_on_a_new_address_is_healthy_only_once_its_former_id_is_gone(
    fresh_servers: RedisServers,
) -> None:
    """A replica's pod comes back empty on another IP: the others still list its former id,
    unflagged until Redis' node timeout. The cluster is healthy only once no node lists it, and the
    converge forgets it instead of waiting for Redis to flag it failed."""
    shards = formed(fresh_servers, 3, 1)
    master, replica = shards[2]
    old_id = cluster_command(replica, "MYID")
    fresh_servers.kill(replica)
    (back,) = fresh_servers.start(1)
    layout = [shards[0], shards[1], [master, back]]
    nodes = [n for shard in layout for n in shard]

    def healed() -> object | None:
        result = converge(layout, (), OPTIONS)
        return result if result.report.healthy else None

    result = eventually("the cluster to heal", healed, 60.0, every=0.0)
    assert result is not None
    for node in nodes:
        ids = [e.node_id for e in parse_cluster_nodes(cluster_command(node, "NODES"))]
        assert len(ids) == 6, (node, ids)
        assert old_id not in ids, node
    assert role(back) == "slave"
