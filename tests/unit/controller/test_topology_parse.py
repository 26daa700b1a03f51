"""Parsing CLUSTER NODES and CLUSTER INFO replies as redis-server 7.0 writes them."""

from __future__ import annotations

import pytest

from syncer.controller.topology_parse import (
    SlotRange,
    parse_cluster_info,
    parse_cluster_nodes,
    replication_state,
)

# Replies captured from redis-server 7.0.15 (cluster-node-timeout 1000): a fresh node, a formed
# 3+3 cluster, the cluster after one master was killed and failed over and a second one was killed,
# a MEET still in handshake, and two nodes announcing hostnames while slot 100 migrates.
FRESH_NODES = "3ef7324a3672c9248521b1693bb52780bddb5e26 :17001@27001 myself,master - 0 0 0 connected\n"
FRESH_INFO = (
    "cluster_state:fail\r\ncluster_slots_assigned:0\r\ncluster_slots_ok:0\r\ncluster_slots_pfail:0\r\n"
    "cluster_slots_fail:0\r\ncluster_known_nodes:1\r\ncluster_size:1\r\ncluster_current_epoch:0\r\n"
    "cluster_my_epoch:0\r\ncluster_stats_messages_sent:0\r\ncluster_stats_messages_received:0\r\n"
    "total_cluster_links_buffer_limit_exceeded:0\r\n"
)
FORMED_NODES_SEEN_BY_REPLICA = (
    "35a306197042eafa0e7fb137f4bd5e0713ba09c7 127.0.0.1:17006@27006 slave "
    "ec78e3d75cbbae8594fd6bc169b3b12d46a53c0c 0 1796200158112 2 connected\n"
    "53da57773f4794cee4c75c70e70132ee7a87b71e 127.0.0.1:17004@27004 myself,slave "
    "3ef7324a3672c9248521b1693bb52780bddb5e26 0 1796200158000 1 connected\n"
    "49e33265f1ee1b663a676d91a9b38a8b8d219f9b 127.0.0.1:17005@27005 slave "
    "eed18af3d2676f9310a6ecce20965eb8cde313c0 0 1796200158112 0 connected\n"
    "eed18af3d2676f9310a6ecce20965eb8cde313c0 127.0.0.1:17002@27002 master - 0 1796200158112 0 connected "
    "5461-10922\n"
    "3ef7324a3672c9248521b1693bb52780bddb5e26 127.0.0.1:17001@27001 master - 0 1796200158112 1 connected "
    "0-5460\n"
    "ec78e3d75cbbae8594fd6bc169b3b12d46a53c0c 127.0.0.1:17003@27003 master - 0 1796200158314 2 connected "
    "10923-16383\n"
)
FORMED_NODES_SEEN_BY_MASTER = (
    "eed18af3d2676f9310a6ecce20965eb8cde313c0 127.0.0.1:17002@27002 master - 0 1796200158112 0 connected "
    "5461-10922\n"
    "35a306197042eafa0e7fb137f4bd5e0713ba09c7 127.0.0.1:17006@27006 slave "
    "ec78e3d75cbbae8594fd6bc169b3b12d46a53c0c 0 1796200158314 2 connected\n"
    "53da57773f4794cee4c75c70e70132ee7a87b71e 127.0.0.1:17004@27004 slave "
    "3ef7324a3672c9248521b1693bb52780bddb5e26 0 1796200158112 1 connected\n"
    "ec78e3d75cbbae8594fd6bc169b3b12d46a53c0c 127.0.0.1:17003@27003 master - 0 1796200158000 2 connected "
    "10923-16383\n"
    "49e33265f1ee1b663a676d91a9b38a8b8d219f9b 127.0.0.1:17005@27005 slave "
    "eed18af3d2676f9310a6ecce20965eb8cde313c0 0 1796200158112 0 connected\n"
    "3ef7324a3672c9248521b1693bb52780bddb5e26 127.0.0.1:17001@27001 myself,master - 0 1796200158000 1 "
    "connected 0-5460\n"
)
FORMED_INFO = (
    "cluster_state:ok\r\ncluster_slots_assigned:16384\r\ncluster_slots_ok:16384\r\n"
    "cluster_slots_pfail:0\r\ncluster_slots_fail:0\r\ncluster_known_nodes:6\r\ncluster_size:3\r\n"
    "cluster_current_epoch:5\r\ncluster_my_epoch:1\r\ncluster_stats_messages_ping_sent:46\r\n"
    "cluster_stats_messages_pong_sent:51\r\ncluster_stats_messages_meet_sent:5\r\n"
    "cluster_stats_messages_sent:102\r\ncluster_stats_messages_ping_received:51\r\n"
    "cluster_stats_messages_pong_received:51\r\ncluster_stats_messages_received:102\r\n"
    "total_cluster_links_buffer_limit_exceeded:0\r\n"
)
PFAIL_AND_FAIL_NODES = (
    "eed18af3d2676f9310a6ecce20965eb8cde313c0 127.0.0.1:17002@27002 master,fail? - 1796200169891 "
    "1796200169387 0 disconnected 5461-10922\n"
    "35a306197042eafa0e7fb137f4bd5e0713ba09c7 127.0.0.1:17006@27006 master - 0 1796200170597 6 connected "
    "10923-16383\n"
    "53da57773f4794cee4c75c70e70132ee7a87b71e 127.0.0.1:17004@27004 slave "
    "3ef7324a3672c9248521b1693bb52780bddb5e26 0 1796200170597 1 connected\n"
    "ec78e3d75cbbae8594fd6bc169b3b12d46a53c0c 127.0.0.1:17003@27003 master,fail - 1796200163549 "
    "1796200163000 2 disconnected\n"
    "49e33265f1ee1b663a676d91a9b38a8b8d219f9b 127.0.0.1:17005@27005 slave "
    "eed18af3d2676f9310a6ecce20965eb8cde313c0 0 1796200170899 0 connected\n"
    "3ef7324a3672c9248521b1693bb52780bddb5e26 127.0.0.1:17001@27001 myself,master - 0 1796200170000 1 "
    "connected 0-5460\n"
)
PFAIL_INFO = (
    "cluster_state:ok\r\ncluster_slots_assigned:16384\r\ncluster_slots_ok:10922\r\n"
    "cluster_slots_pfail:5462\r\ncluster_slots_fail:0\r\ncluster_known_nodes:6\r\ncluster_size:3\r\n"
    "cluster_current_epoch:6\r\ncluster_my_epoch:1\r\ncluster_stats_messages_ping_sent:155\r\n"
    "cluster_stats_messages_pong_sent:154\r\ncluster_stats_messages_meet_sent:5\r\n"
    "cluster_stats_messages_fail_sent:4\r\ncluster_stats_messages_auth-ack_sent:1\r\n"
    "cluster_stats_messages_sent:319\r\ncluster_stats_messages_ping_received:154\r\n"
    "cluster_stats_messages_pong_received:159\r\ncluster_stats_messages_fail_received:1\r\n"
    "cluster_stats_messages_auth-req_received:1\r\ncluster_stats_messages_received:315\r\n"
    "total_cluster_links_buffer_limit_exceeded:0\r\n"
)
HANDSHAKE_NODES = (
    "20ca55ab254992fbee6bf352cd8ea1872045df89 127.0.0.1:17050@27050 handshake - 0 0 0 disconnected\n"
    "3ef7324a3672c9248521b1693bb52780bddb5e26 127.0.0.1:17001@27001 myself,master - 0 1796200170000 1 "
    "connected 0-5460\n"
)
HOSTNAME_MIGRATING_NODES = (
    "502dc9d08984e9f64b3c2662ad94124b4421bcda 127.0.0.1:17102@27102,redis-17102.cache.svc master - 0 "
    "1796200543794 1 connected 8192-16383\n"
    "87852491c9d313f1466c5ba91f5dfe35703f4a20 127.0.0.1:17101@27101,redis-17101.cache.svc myself,master - "
    "0 0 0 connected 0-8191 [100->-502dc9d08984e9f64b3c2662ad94124b4421bcda]\n"
)
HOSTNAME_IMPORTING_NODES = (
    "502dc9d08984e9f64b3c2662ad94124b4421bcda 127.0.0.1:17102@27102,redis-17102.cache.svc myself,master - "
    "0 0 1 connected 8192-16383 [100-<-87852491c9d313f1466c5ba91f5dfe35703f4a20]\n"
    "87852491c9d313f1466c5ba91f5dfe35703f4a20 127.0.0.1:17101@27101,redis-17101.cache.svc master - 0 "
    "1796200543795 0 connected 0-99 101-8191\n"
)

M1 = "3ef7324a3672c9248521b1693bb52780bddb5e26"
M2 = "eed18af3d2676f9310a6ecce20965eb8cde313c0"
M3 = "ec78e3d75cbbae8594fd6bc169b3b12d46a53c0c"


def test_fresh_node_knows_only_itself_without_address() -> None:
    (me,) = parse_cluster_nodes(FRESH_NODES)
    assert me.node_id == M1
    assert me.address == ""
    assert me.name == M1
    assert me.is_myself
    assert me.is_master
    assert not me.is_replica
    assert me.slots == ()
    assert me.config_epoch == 0


def test_formed_cluster_seen_by_a_replica() -> None:
    entries = {e.address: e for e in parse_cluster_nodes(FORMED_NODES_SEEN_BY_REPLICA)}
    assert len(entries) == 6
    me = entries["127.0.0.1:17004"]
    assert me.is_myself
    assert me.is_replica
    assert me.master_id == M1
    assert me.flags == frozenset({"myself", "slave"})
    assert entries["127.0.0.1:17001"].slots == (SlotRange(0, 5460),)
    assert entries["127.0.0.1:17001"].master_id == ""
    assert entries["127.0.0.1:17002"].slot_count == 5462
    assert entries["127.0.0.1:17003"].config_epoch == 2
    assert entries["127.0.0.1:17006"].master_id == M3
    assert all(e.link_state == "connected" for e in entries.values())


def test_fail_and_pfail_flags() -> None:
    entries = {e.address: e for e in parse_cluster_nodes(PFAIL_AND_FAIL_NODES)}
    suspect = entries["127.0.0.1:17002"]
    assert suspect.is_suspected
    assert not suspect.is_failed
    assert suspect.slots == (SlotRange(5461, 10922),)
    assert suspect.link_state == "disconnected"
    dead = entries["127.0.0.1:17003"]
    assert dead.is_failed
    assert not dead.is_suspected
    assert dead.slots == ()
    assert entries["127.0.0.1:17006"].is_master
    assert entries["127.0.0.1:17006"].slots == (SlotRange(10923, 16383),)


def test_handshake_entry_is_not_a_settled_member() -> None:
    entries = {e.address: e for e in parse_cluster_nodes(HANDSHAKE_NODES)}
    assert not entries["127.0.0.1:17050"].is_known
    assert entries["127.0.0.1:17001"].is_known


def test_hostnames_and_migration_markers() -> None:
    source = {e.address: e for e in parse_cluster_nodes(HOSTNAME_MIGRATING_NODES)}
    me = source["127.0.0.1:17101"]
    assert me.hostname == "redis-17101.cache.svc"
    assert me.slots == (SlotRange(0, 8191),)  # [100->-id] is a migration marker, not ownership
    target = {e.address: e for e in parse_cluster_nodes(HOSTNAME_IMPORTING_NODES)}
    assert target["127.0.0.1:17102"].slots == (SlotRange(8192, 16383),)
    assert target["127.0.0.1:17101"].slots == (SlotRange(0, 99), SlotRange(101, 8191))
    assert me.migrating == ((100, "502dc9d08984e9f64b3c2662ad94124b4421bcda"),)
    assert me.importing == ()
    importer = next(e for e in target.values() if e.is_myself)
    assert importer.importing == ((100, "87852491c9d313f1466c5ba91f5dfe35703f4a20"),)


def test_an_unknown_slot_marker_is_malformed() -> None:
    with pytest.raises(ValueError, match="unknown slot marker"):
        parse_cluster_nodes(f"{M1} 127.0.0.1:1@2 myself,master - 0 0 1 connected 0-5 [7-?-x]")


def test_ghost_entries() -> None:
    entries = parse_cluster_nodes(HANDSHAKE_NODES)
    assert any(e.is_ghost for e in entries)
    assert not any(e.is_ghost for e in parse_cluster_nodes(FORMED_NODES_SEEN_BY_MASTER))


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("abc 127.0.0.1:1@2 master -", "expected at least 8"),
        (f"{M1} 127.0.0.1:1@2 master - 0 0 x connected", "malformed"),
        (f"{M1} 127.0.0.1:1@2 master - 0 0 1 connected 10-5", "malformed"),
        (f"{M1} 127.0.0.1:1@2 master - 0 0 1 connected 16384", "malformed"),
    ],
)
def test_malformed_lines_are_refused_with_the_line(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message) as caught:
        parse_cluster_nodes(text)
    assert text.split(maxsplit=1)[0] in str(caught.value)


def test_cluster_info_fresh_formed_and_pfail() -> None:
    fresh = parse_cluster_info(FRESH_INFO)
    assert fresh.state == "fail"
    assert fresh.slots_assigned == 0
    assert fresh.known_nodes == 1
    formed = parse_cluster_info(FORMED_INFO)
    assert formed.state == "ok"
    assert (formed.slots_assigned, formed.slots_ok, formed.size) == (16384, 16384, 3)
    assert (formed.current_epoch, formed.my_epoch) == (5, 1)
    pfail = parse_cluster_info(PFAIL_INFO)
    assert pfail.state == "ok"
    assert (pfail.slots_ok, pfail.slots_pfail) == (10922, 5462)


def test_cluster_info_without_state_or_with_garbage_is_refused() -> None:
    with pytest.raises(ValueError, match="no cluster_state"):
        parse_cluster_info("cluster_slots_assigned:0\r\n")
    with pytest.raises(ValueError, match="cluster_size is not a number"):
        parse_cluster_info("cluster_state:ok\r\ncluster_size:three\r\n")


def test_replication_state_from_role() -> None:
    assert replication_state(["slave", "127.0.0.1", 17001, "connected", 1400]) == "connected"
    assert replication_state([b"slave", b"127.0.0.1", 17001, b"sync", -1]) == "sync"
    assert replication_state(["master", 1400, []]) == "master"
    assert replication_state("OK") == "unknown"
    assert replication_state([]) == "unknown"


def test_cluster_info_counts_the_failover_auth_requests_a_node_sent() -> None:
    # Redis lists a message type only once one was sent: none yet reads as 0.
    assert parse_cluster_info(PFAIL_INFO).auth_requests_sent == 0
    sent = PFAIL_INFO.replace("auth-ack_sent:1", "auth-req_sent:5")
    assert parse_cluster_info(sent).auth_requests_sent == 5
