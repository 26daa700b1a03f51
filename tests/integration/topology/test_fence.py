"""The Redis side of the controller's fence, on real redis-servers: a deposed leader's command caught
between its last fence check and the send is never run, once the new leader has been in touch with
the node (the Leases are the real elector's, on an in-memory cluster and a test clock)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest
import redis

from syncer.controller.model import CONTROLLER_LEASE
from syncer.controller.topology_client import Connections, client_name
from syncer.controller.topology_model import RedisNode, TopologyError, TopologyOptions
from syncer.errors import FencedOut
from syncer.leader.election import LeaderElector
from syncer.leader.fence import Fence
from tests.integration.topology.servers import RedisServers, client, cluster_command
from tests.support.memory_kube import MemoryKube

pytestmark = pytest.mark.integration

MARGIN = CONTROLLER_LEASE.duration - CONTROLLER_LEASE.renew_deadline


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class WrappedFence:
    """A leader's real fence, asked through a test's hook (``check``)."""

    def __init__(self, fence: Fence) -> None:
        self._fence = fence

    @property
    def token(self) -> int:
        return self._fence.token

    @property
    def lease(self) -> str:
        return self._fence.lease

    def check(self) -> None:
        self._fence.check()


class OvertakenAfterCheck(WrappedFence):
    """The deposed leader's fence: once armed, right after it lets a command out (the leader froze
    there), the Lease runs out, the standby takes it over and asks ``node`` something."""

    def __init__(self, fence: Fence, takeover: Clock, standby: LeaderElector, node: RedisNode) -> None:
        super().__init__(fence)
        self._clock, self._standby, self._node = takeover, standby, node
        self.armed = False

    @contextmanager
    def writing(self) -> Iterator[None]:
        self._fence.check()
        if self.armed:
            self.armed = False
            self._clock.now += CONTROLLER_LEASE.duration + 1
            assert self._standby.try_acquire_or_renew()
            newer = Connections(TopologyOptions(timeout=2.0, fence=self._standby.fence(MARGIN)))
            try:
                newer.run(self._node, "CLUSTER", "MYID")
            finally:
                newer.close()
        yield


def names(node: RedisNode) -> list[str]:
    with client(node) as conn:
        return [str(c.get("name") or "") for c in conn.client_list()]


def test_a_command_caught_between_the_fence_and_the_send_never_runs(servers: RedisServers) -> None:
    [node] = servers.start(1)
    kube, clock = MemoryKube("one"), Clock()
    leader = LeaderElector(kube, CONTROLLER_LEASE, "controller-0", clock=clock)
    standby = LeaderElector(kube, CONTROLLER_LEASE, "controller-1", clock=clock)
    assert leader.try_acquire_or_renew()
    assert not standby.try_acquire_or_renew()  # the standby sees the Lease held
    fence = OvertakenAfterCheck(leader.fence(MARGIN), clock, standby, node)
    stale = Connections(TopologyOptions(timeout=2.0, fence=fence))
    try:
        stale.run(node, "CLUSTER", "MYID")  # connected while it leads
        assert client_name(fence) in names(node)

        fence.armed = True
        with pytest.raises(TopologyError):
            stale.run(node, "CLUSTER", "ADDSLOTS", 100)
    finally:
        stale.close()

    assert "cluster_slots_assigned:0" in cluster_command(node, "INFO"), "the deposed leader's command ran"
    assert standby.token > leader.token
    assert client_name(fence) not in names(node)


def test_connections_of_the_same_holder_and_of_other_clients_are_left_alone(servers: RedisServers) -> None:
    [node] = servers.start(1)
    kube, clock = MemoryKube("one"), Clock()
    leader = LeaderElector(kube, CONTROLLER_LEASE, "controller-0", clock=clock)
    assert leader.try_acquire_or_renew()
    first = Connections(TopologyOptions(timeout=2.0, fence=leader.fence(MARGIN)))
    second = Connections(TopologyOptions(timeout=2.0, fence=leader.fence(MARGIN)))
    with client(node) as bystander:
        bystander.client_setname("someone-else")
        try:
            first.run(node, "CLUSTER", "MYID")
            second.run(node, "CLUSTER", "MYID")
            assert first.run(node, "CLUSTER", "MYID")  # not closed by its own holder's sweep
            assert bystander.ping()
        finally:
            first.close()
            second.close()


def handshakes(conn: redis.Redis) -> dict[str, int]:
    """How often the node behind ``conn`` accepted a connection and ran each handshake command."""
    stats = conn.info("commandstats")
    commands = ("hello", "client|setname")
    counted = {name: int(stats.get(f"cmdstat_{name}", {}).get("calls", 0)) for name in commands}
    return {"connections": int(conn.info("stats")["total_connections_received"]), **counted}


def test_a_leader_whose_connections_the_new_leader_closed_does_not_even_reconnect(
    servers: RedisServers,
) -> None:
    """A deposed leader that runs again after its Lease ran out finds its connections closed by the
    new leader's sweep; it asks the fence before it connects again, so not even the handshake (HELLO,
    CLIENT SETNAME) of a new connection reaches the node, for a single command or a pipeline."""
    [node] = servers.start(1)
    kube, clock = MemoryKube("one"), Clock()
    leader = LeaderElector(kube, CONTROLLER_LEASE, "controller-0", clock=clock)
    standby = LeaderElector(kube, CONTROLLER_LEASE, "controller-1", clock=clock)
    assert leader.try_acquire_or_renew()
    assert not standby.try_acquire_or_renew()  # the standby sees the Lease held
    stale = Connections(TopologyOptions(timeout=2.0, fence=leader.fence(MARGIN)))
    try:
        stale.run(node, "CLUSTER", "MYID")
        stale.pipeline(node, [("PING",)])  # both of its connections are open
        clock.now += CONTROLLER_LEASE.duration + 1
        assert standby.try_acquire_or_renew()
        newer = Connections(TopologyOptions(timeout=2.0, fence=standby.fence(MARGIN)))
        try:
            newer.run(node, "CLUSTER", "MYID")  # the first contact closes the old leader's connections
        finally:
            newer.close()
        assert client_name(leader.fence(MARGIN)) not in names(node)

        with client(node) as counter:
            before = handshakes(counter)
            with pytest.raises(FencedOut):
                stale.run(node, "CLUSTER", "ADDSLOTS", 100)
            with pytest.raises(FencedOut):
                stale.pipeline(node, [("CLUSTER", "ADDSLOTS", 101)])
            assert handshakes(counter) == before, "the deposed leader connected to the node again"
    finally:
        stale.close()
    assert "cluster_slots_assigned:0" in cluster_command(node, "INFO")


class RunsOutAfterOneCheck(WrappedFence):
    """A leader's fence that lets one question through, then its Lease runs out: the process froze
    right after that check, while it was opening a connection."""

    def __init__(self, fence: Fence, clock: Clock) -> None:
        super().__init__(fence)
        self._clock = clock
        self.asked = 0

    def check(self) -> None:
        self._fence.check()
        self.asked += 1
        if self.asked == 1:
            self._clock.now += CONTROLLER_LEASE.duration + 1

    @contextmanager
    def writing(self) -> Iterator[None]:
        self.check()
        yield


def test_a_leader_frozen_while_it_connects_sends_no_handshake_when_it_runs_again(
    servers: RedisServers,
) -> None:
    """The fence is asked once the socket is open and before the handshake (HELLO, CLIENT SETNAME)
    is sent: a connection begun before the Lease ran out sends nothing."""
    [node] = servers.start(1)
    kube, clock = MemoryKube("one"), Clock()
    leader = LeaderElector(kube, CONTROLLER_LEASE, "controller-0", clock=clock)
    assert leader.try_acquire_or_renew()
    fence = RunsOutAfterOneCheck(leader.fence(MARGIN), clock)
    stale = Connections(TopologyOptions(timeout=2.0, fence=fence))
    with client(node) as counter:
        before = handshakes(counter)
        try:
            with pytest.raises(FencedOut):
                stale.run(node, "CLUSTER", "MYID")
        finally:
            stale.close()
        after = handshakes(counter)
    assert fence.asked == 1, "the connection was begun while the Lease was held"
    assert {k: after[k] - before[k] for k in ("hello", "client|setname")} == {"hello": 0, "client|setname": 0}
