"""Bootstrap resumes a half-formed cluster: only the missing meets, slots and replicas are done."""

from __future__ import annotations

import pytest

from syncer.controller.topology import SlotRange, TopologyOptions, bootstrap, inspect
from tests.integration.topology.servers import RedisServers, cluster_command, knows, shards_of
from tests.support.waiting import eventually

pytestmark = pytest.mark.integration

OPTIONS = TopologyOptions(timeout=5.0, meet_timeout=20.0, ready_timeout=30.0)


def test_half_formed_cluster_is_completed_without_redoing_what_is_done(servers: RedisServers) -> None:
    nodes = servers.start(6)
    shards = shards_of(nodes, 3)
    (m0, r0), (m1, r1), (m2, r2) = shards
    # Half-formed by hand: m0 met m1 and r0 only; m0 serves its whole range, m1 a piece of its own;
    # r0 already follows m0. m2, r1 and r2 are still strangers.
    cluster_command(m0, "MEET", m1.host, m1.port)
    cluster_command(m0, "MEET", r0.host, r0.port)
    eventually(
        "the first meets",
        lambda: True if knows(r0, m0) and knows(m1, m0) and knows(m0, r0) else None,
        30.0,
        every=0.1,
    )
    cluster_command(m0, "ADDSLOTSRANGE", 0, 5460)
    cluster_command(m1, "ADDSLOTSRANGE", 6000, 7000)
    cluster_command(r0, "REPLICATE", cluster_command(m0, "MYID"))
    ids = {node: cluster_command(node, "MYID") for node in nodes}

    report = bootstrap(shards, OPTIONS)

    assert report.errors == ()
    assert report.healthy, report.summary()
    # Each pair that does not know each other is met by its earlier node; r0 and m1 may have met
    # through gossip already or not.
    order = [m0, r0, m1, r1, m2, r2]
    meets = sorted(
        f"{a}: CLUSTER MEET {b.host} {b.port}"
        for i, a in enumerate(order)
        for b in order[i + 1 :]
        if {a, b} not in ({m0, m1}, {m0, r0}, {r0, m1})
    )
    maybe = f"{r0}: CLUSTER MEET {m1.host} {m1.port}"
    assert sorted(a for a in report.actions if "MEET" in a and a != maybe) == meets
    assert sorted(a for a in report.actions if "MEET" not in a) == sorted(
        [
            f"{m1}: CLUSTER ADDSLOTSRANGE 5461 5999 7001 10922",
            f"{m2}: CLUSTER ADDSLOTSRANGE 10923 16383",
            f"{r1}: CLUSTER REPLICATE {ids[m1]}",
            f"{r2}: CLUSTER REPLICATE {ids[m2]}",
        ]
    )
    seen = inspect(nodes, 3, OPTIONS)
    assert seen.healthy, seen.summary()
    assert [(m.master, m.slot_ranges, m.replicas) for m in seen.masters_with_slots] == [
        (str(m0), (SlotRange(0, 5460),), (str(r0),)),
        (str(m1), (SlotRange(5461, 10922),), (str(r1),)),
        (str(m2), (SlotRange(10923, 16383),), (str(r2),)),
    ]
    assert bootstrap(shards, OPTIONS).actions == ()
