"""The controller acts only while it holds its Lease: past it, a reconcile writes nothing, no command
reaches a Redis server, and the controller stops (its own decisions, over an in-memory cluster and
the real elector on a test clock)."""

from __future__ import annotations

import socket

import pytest

from syncer.controller.model import CONTROLLER_LEASE, FINALIZER, ControllerOptions
from syncer.controller.runner import Controller
from syncer.controller.topology_client import Connections
from syncer.controller.topology_model import RedisNode, TopologyOptions
from syncer.errors import FencedOut
from syncer.leader.election import LeaderElector
from syncer.leader.fence import FencedKube
from tests.support.memory_kube import MemoryKube

MARGIN = CONTROLLER_LEASE.duration - CONTROLLER_LEASE.renew_deadline


def cluster(kube: MemoryKube) -> None:
    kube.create(
        {
            "apiVersion": "redis.syncer.dev/v1alpha1",
            "kind": "RedisCluster",
            "metadata": {
                "name": "cache",
                "namespace": "redis",
                "generation": 1,
                "uid": "u-1",
                "finalizers": [FINALIZER],
            },
            "spec": {"version": "7.2", "shards": 1, "replicasPerShard": 0},
        }
    )


def writes(kube: MemoryKube) -> list[tuple[str, str, str]]:
    return [call for call in kube.calls if call[0] not in {"get", "list", "watch"}]


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_controller_past_its_lease_writes_nothing_and_stops() -> None:
    kube, clock = MemoryKube("one"), Clock()
    cluster(kube)
    elector = LeaderElector(kube, CONTROLLER_LEASE, "controller-0", clock=clock)
    assert elector.try_acquire_or_renew()
    fence = elector.fence(MARGIN)
    controller = Controller(FencedKube(kube, fence), ControllerOptions(), fence=fence)
    kube.calls.clear()

    controller.process("redis/cache")
    assert ("apply-status", "RedisCluster", "cache") in writes(kube)
    assert not controller.fenced_out.is_set()

    # Frozen past the point where the Lease is surely held for the margin more.
    clock.now += CONTROLLER_LEASE.renew_deadline + 0.1
    kube.calls.clear()
    controller.process("redis/cache")
    assert writes(kube) == []
    assert controller.fenced_out.is_set()

    kube.calls.clear()
    controller.process("redis/cache")  # a fenced-out controller does not even look again
    assert list(kube.calls) == []


def test_a_fenced_out_connection_sends_no_command_to_a_server() -> None:
    kube, clock = MemoryKube("one"), Clock()
    elector = LeaderElector(kube, CONTROLLER_LEASE, "controller-0", clock=clock)
    assert elector.try_acquire_or_renew()
    clock.now += CONTROLLER_LEASE.duration
    with socket.create_server(("127.0.0.1", 0)) as server:
        server.setblocking(False)
        node = RedisNode("127.0.0.1", server.getsockname()[1])
        conns = Connections(TopologyOptions(timeout=1.0, fence=elector.fence(MARGIN)))
        with pytest.raises(FencedOut):
            conns.run(node, "CLUSTER", "SETSLOT", 1, "STABLE")
        with pytest.raises(FencedOut):
            conns.pipeline(node, [("MIGRATE", "127.0.0.1", 1, "", 0, 1000, "KEYS", b"k")])
        conns.close()
        with pytest.raises(BlockingIOError):
            server.accept()  # nobody connected
