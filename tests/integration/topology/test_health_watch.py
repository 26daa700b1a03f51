"""The controller's health watch against real redis-servers: it keeps its connections from round to
round (four rounds a second must not cost every server a new connection and its handshake each
time), still sees a killed master as an outage, and reconnects to a server that came back."""

from __future__ import annotations

from syncer.controller.health_probe import MASTER_UNREACHABLE, HealthWatch, ProbeOptions
from syncer.controller.status import TopologyVerdict
from syncer.controller.topology import RedisNode, TopologyOptions, bootstrap
from tests.integration.topology.servers import RedisServers, client, shards_of
from tests.support.waiting import eventually

ACCESS = TopologyOptions(timeout=2.0, meet_timeout=20.0, ready_timeout=30.0)
PROBE = ProbeOptions(interval=0.25, timeout=0.5, fail_rounds=1, recover_rounds=1)
ROUNDS = 20


def accepted(node: RedisNode) -> int:
    """Connections the server accepted so far (this reading's own included)."""
    with client(node) as conn:
        return int(conn.info("stats")["total_connections_received"])


def test_the_watch_keeps_its_connections_sees_a_killed_master_and_reconnects(servers: RedisServers) -> None:
    nodes = servers.start(3)
    formed = bootstrap(shards_of(nodes, 3), ACCESS)
    assert formed.healthy, formed.summary()
    woken: list[TopologyVerdict | None] = []
    watch = HealthWatch(PROBE, lambda _key, outage: woken.append(outage))
    watch.track("cache", nodes, ACCESS)
    try:
        before = {node: accepted(node) for node in nodes}
        for _ in range(ROUNDS):
            watch.probe_once()
        assert watch.outage("cache") is None
        # One connection per server for every round, plus each reading's own.
        opened = {str(node): accepted(node) - before[node] - 1 for node in nodes}
        assert opened == dict.fromkeys(map(str, nodes), 1), opened

        victim = nodes[0]
        servers.kill(victim)
        watch.probe_once()
        outage = watch.outage("cache")
        assert outage is not None
        assert outage.reason == MASTER_UNREACHABLE
        assert str(victim) in outage.message

        servers.restart(victim)  # its nodes.conf kept: the same node, back in the cluster

        def recovered() -> bool:
            watch.probe_once()
            return watch.outage("cache") is None

        # The kept client reconnects to the server back (whose cluster state Redis turns ok itself).
        eventually("the outage to end", recovered, 30.0)
        assert woken[-1] is None
        watch.forget("cache")
        watch.probe_once()  # a cluster no longer watched has its connections closed
        with client(nodes[1]) as conn:
            names = [c.get("name") for c in conn.client_list()]
        assert len(names) == 1, names  # this reading's own connection only
    finally:
        watch.close()
