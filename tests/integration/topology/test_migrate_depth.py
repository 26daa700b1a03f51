"""How long a slot move blocks the source, on real redis-servers: the source runs a round trip's
MIGRATE commands one after the other and serves no other client meanwhile, so no round trip carries
more than ``migrate_depth`` of them, and every key still moves."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from syncer.controller.topology import TopologyOptions, bootstrap
from syncer.controller.topology_client import Connections
from syncer.controller.topology_model import RedisNode
from syncer.controller.topology_reshard import Resharder
from tests.integration.topology.servers import RedisServers, client, cluster_command
from tests.support.waiting import eventually

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


@pytest.fixture
def servers(tmp_path: Path) -> Iterator[RedisServers]:
    started = RedisServers(tmp_path)
    try:
        yield started
    finally:
        assert started.stop() == []


def test_no_round_trip_carries_more_migrates_than_the_depth(servers: RedisServers) -> None:
    a, b = servers.start(2)
    options = TopologyOptions(timeout=5.0, ready_timeout=30.0, migrate_depth=3)
    assert bootstrap([[a]], options).healthy
    with client(a) as conn:
        pipe = conn.pipeline(transaction=False)
        for i in range(3000):
            pipe.set(f"key:{i}", "v")
        pipe.execute()
    cluster_command(a, "MEET", b.host, b.port)
    eventually("b to join", lambda: "cluster_state:ok" in cluster_command(b, "INFO"), 30, every=0.1)
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
