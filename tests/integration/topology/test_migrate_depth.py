"""How long a slot move blocks the source, on real redis-fresh_servers: the source runs a round trip's
MIGRATE commands one after the other and serves no other client meanwhile, so no round trip carries
more than ``migrate_depth`` of them, and every key still moves."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from syncer.controller.topology import TopologyOptions
from syncer.controller.topology_client import Connections
from syncer.controller.topology_model import RedisNode
from syncer.controller.topology_reshard import Resharder
from tests.integration.topology.servers import RedisServers, client, cluster_command, master_and_newcomer

pytestmark = pytest.mark.integration


class CountingConnections(Connections):
    """Real connections that remember how many MIGRATE commands each round trip carried."""

    def __init__(self, options: TopologyOptions) -> None:
        super().__init__(options)
        self.migrates: list[int] = []

    def pipeline(self, node: RedisNode, commands: Sequence[Sequence[str | int | bytes]]) -> list[object]:
        count = sum(1 for c in commands if c[0] == "MIGRATE")
        if count:
            self.migrates.append(count)
        return super().pipeline(node, commands)


def test_no_round_trip_carries_more_migrates_than_the_depth(fresh_servers: RedisServers) -> None:
    options = TopologyOptions(timeout=5.0, ready_timeout=30.0, migrate_depth=3)
    a, b = master_and_newcomer(fresh_servers, 3000, options)
    ids = {node: cluster_command(node, "MYID") for node in (a, b)}
    slots = list(range(256))
    with client(a) as conn:
        moving = sum(int(conn.execute_command("CLUSTER", "COUNTKEYSINSLOT", s)) for s in slots)
    conns = CountingConnections(options)
    try:
        resharder = Resharder(conns, options, {ids[a]: a, ids[b]: b})
        assert resharder.move_group(ids[a], ids[b], slots), resharder.errors
    finally:
        conns.close()

    assert moving > 0
    assert resharder.keys_moved == moving
    with client(b) as conn:
        assert conn.dbsize() == moving
    assert conns.migrates
    assert max(conns.migrates) <= 3
