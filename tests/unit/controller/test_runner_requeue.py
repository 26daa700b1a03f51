"""When the controller looks at a RedisCluster again: soon while it is not Ready (what it waits for
sends no Kubernetes event), backing off up to its interval (its own decisions, over an in-memory
cluster)."""

from __future__ import annotations

from syncer.controller.model import FINALIZER, ControllerOptions
from syncer.controller.queue import WorkQueue
from syncer.controller.runner import Controller
from tests.support.memory_kube import MemoryKube

KEY = "redis/cache"


def controller() -> Controller:
    kube = MemoryKube("one")
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
            "spec": {"version": "7.2", "shards": 1, "replicasPerShard": 1},
        }
    )
    return Controller(kube, ControllerOptions(topology=True, poll_seconds=5.0, topology_interval=10.0))


def test_a_cluster_not_ready_yet_is_looked_at_again_within_a_fraction_of_its_interval() -> None:
    made = controller()
    made.process(KEY)  # its pods have not started: not Ready
    assert made.queue.get(timeout=0.5) == KEY
    made.queue.done(KEY)


def test_backing_off_doubles_and_stops_at_the_ceiling_and_forget_starts_over() -> None:
    queue = WorkQueue()
    delays = [queue.add_backing_off("k", 0.3) for _ in range(4)]
    assert delays == [0.05, 0.1, 0.2, 0.3]
    queue.forget("k")
    assert queue.add_backing_off("k", 0.3) == 0.05
