"""Pods that come back with the volume they had before (persistence on, claims kept), under a client
that never stops writing: every acknowledged write is kept, a client that starts from a returning pod
(as one would through the Service) reads the whole keyset from it without an error, and the cluster
is Ready within a stated bound.

Real redis-servers run behind the pods of the loopback fleet; each pod name keeps its data directory
(nodes.conf and the append-only file) across pods, as a PersistentVolumeClaim would."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from syncer.controller.model import API_VERSION, KIND
from syncer.controller.topology import RedisNode
from tests.integration.controller.rediskit import NAME, Scene, SceneStarter, check
from tests.support.waiting import eventually

pytestmark = pytest.mark.integration

# Ready after the spec asks the pods back: pod start, judging the returning nodes, meeting them and
# a replica's full sync of the preloaded keys.
RETURN_BOUND = 30.0


def back_within(s: Scene, what: str, bound: float, **changes: object) -> float:
    """Apply ``changes`` and wait until Ready, at most ``bound`` seconds; the time it took."""
    started = time.monotonic()
    s.apply(**changes)
    s.wait_ready(timeout=bound)
    took = time.monotonic() - started
    print(f"{what}: Ready after {took:.1f}s (bound {bound:.0f}s)", flush=True)
    return took


def returning(s: Scene, pods: list[str]) -> list[RedisNode]:
    return [s.pods.node_of(pod) for pod in pods]


def came_back_fresh(s: Scene) -> None:
    """The departed nodes left their volumes empty: nothing had to be emptied when they returned."""
    assert s.events("ReturningNodesReset") == [], "a returning node brought data back"


def never_claimed_slots(s: Scene, nodes: list[RedisNode]) -> None:
    """The returning nodes serve no slot of their own: they came back as replicas."""
    mine = {e.name: e for e in s.myselves()}
    for node in nodes:
        entry = mine[str(node)]
        assert entry.is_replica, f"{node} came back as {sorted(entry.flags)}"
        assert not entry.slots, f"{node} serves slots"


@pytest.mark.timeout(900)
def test_replicas_back_after_zero_with_kept_disks_join_empty(redis_scene: SceneStarter) -> None:
    with redis_scene(persistence=True, shards=3, replicasPerShard=1) as s:
        s.change_while_writing("replicas 1 -> 0", bulk=20000, replicasPerShard=0)
        assert len(s.cluster_nodes()) == 3

        traffic = s.traffic(bulk=20000)
        back_within(s, "replicas 0 -> 1 with kept disks", RETURN_BOUND, replicasPerShard=1)
        back = returning(s, [f"cache-shard-{i}-1" for i in range(3)])
        never_claimed_slots(s, back)
        came_back_fresh(s)
        assert len(s.cluster_nodes()) == 6
        # Every acknowledged key, read through a client that knows only the returning pods.
        check(traffic.stop(back), "replicas 0 -> 1, read from the returning pods")


@pytest.mark.timeout(900)
def test_a_shard_back_with_kept_disks_joins_within_the_bound(redis_scene: SceneStarter) -> None:
    with redis_scene(persistence=True, shards=3, replicasPerShard=1) as s:
        s.change_while_writing("shards 3 -> 2", bulk=20000, shards=2)
        assert len(s.cluster_nodes()) == 4

        traffic = s.traffic(bulk=20000)
        back_within(s, "shards 2 -> 3 with kept disks", RETURN_BOUND, shards=3)
        back = returning(s, ["cache-shard-2-0", "cache-shard-2-1"])
        counts = s.masters()
        assert len(counts) == 3, counts
        assert max(counts.values()) - min(counts.values()) <= 1, counts
        came_back_fresh(s)
        check(traffic.stop(back), "shards 2 -> 3, read from the returning pods")


def pods_of(s: Scene, namespace: str = "") -> dict[str, str]:
    items = s.kube.list("v1", "Pod", namespace=namespace or s.namespace).items
    return {p["metadata"]["name"]: (p.get("status") or {}).get("podIP", "") for p in items}


@contextmanager
def squatters(s: Scene, former: set[str], most: int = 96) -> Iterator[None]:
    """Pods of another namespace (no redis-server behind them) made until they hold every address
    in ``former`` (the fleet hands freed addresses out again), so the pods made next get addresses
    this cluster never had; deleted on exit."""
    namespace = f"{s.namespace}-squat"
    s.kube.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
    try:
        made = 0
        while not former <= set(pods_of(s, namespace).values()):
            assert made < most, f"{made} pods did not get the addresses {sorted(former)}"
            for i in range(made, made + 8):
                meta = {"name": f"squatter-{i}", "namespace": namespace}
                spec = {"containers": [{"name": "idle", "image": "registry.k8s.io/pause:3.10"}]}
                s.kube.apply({"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec})
            made += 8
            eventually("the squatters' addresses", lambda: all(pods_of(s, namespace).values()), 60)
        yield
    finally:
        s.kube.delete("v1", "Namespace", namespace)


@pytest.mark.timeout(900)
def test_a_cluster_recreated_from_retained_claims_comes_back_with_its_keys(redis_scene: SceneStarter) -> None:
    with redis_scene(persistence=True, shards=3, replicasPerShard=1) as s:
        traffic = s.traffic(bulk=20000, durable=True)
        eventually("some acknowledged writes", lambda: traffic.writes > 500, 60)
        check(traffic.stop(s.nodes()), "before the RedisCluster is deleted")
        before = pods_of(s)
        s.kube.delete(API_VERSION, KIND, NAME, s.namespace)
        eventually("the RedisCluster and its pods gone", lambda: not pods_of(s), 120)
        assert s.events("VolumesRetained"), "the claims should have been kept"

        with squatters(s, set(before.values())):
            back_within(s, "re-created from retained claims", RETURN_BOUND)
            after = pods_of(s)
        print(f"addresses before: {sorted(before.values())}, after: {sorted(after.values())}", flush=True)
        assert not set(before.values()) & set(after.values()), "a pod came back on a former address"
        assert s.events("ReturningNodesReset") == [], "the cluster's own nodes must keep their data"
        assert len(s.cluster_nodes()) == 6
        # Every key acknowledged before the deletion is there, read from the re-created pods.
        check(traffic.stop(s.nodes()), "re-created from retained claims")
