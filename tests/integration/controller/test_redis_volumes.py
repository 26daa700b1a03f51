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
import redis

from devfleet import fleet as devfleet
from syncer.controller.model import API_VERSION, KIND
from syncer.controller.topology import RedisNode, parse_cluster_nodes
from tests.integration.controller.endpoints import Endpoint, EndpointWatch, ready_endpoints
from tests.integration.controller.kit import controller_running
from tests.integration.controller.rediskit import NAME, Scene, SceneStarter, check, controller_options
from tests.integration.topology.servers import client, cluster_command
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


def keys_of(node: RedisNode) -> int:
    with client(node) as conn:
        return int(conn.dbsize())


def address(name: str) -> RedisNode:
    return RedisNode(name.rsplit(":", 1)[0], 6379)


def not_joined(node: RedisNode, master: RedisNode, stale_id: str) -> str:
    """Why the node at ``node`` is not (yet) a replica of ``master`` in its cluster, or ""."""
    try:
        node_id = cluster_command(node, "MYID")
        state = cluster_command(node, "INFO")
        seen = parse_cluster_nodes(cluster_command(master, "NODES"))
    except redis.RedisError as err:
        return f"a server does not answer ({err})"
    if node_id == stale_id:
        return "it is still the node of the stale volume"
    entry = next((e for e in seen if e.node_id == node_id), None)
    if entry is None or not entry.is_replica or "handshake" in entry.flags:
        return f"the shard's master does not list it as its replica ({entry and sorted(entry.flags)})"
    if "cluster_state:ok" not in state:
        return "it does not say cluster_state ok"
    return ""


def leave_as_an_older_departure_did(s: Scene) -> tuple[RedisNode, RedisNode, str]:
    """A replica (preloaded keys synced) reset SOFT and forgotten by the others, as an older
    controller's departure left it: its master, the replica and the replica's id."""
    shard = next(e for e in s.cluster_nodes() if e.is_master and e.slot_count)
    master = address(shard.name)
    replica = next(
        address(e.name) for e in s.cluster_nodes() if e.is_replica and e.master_id == shard.node_id
    )
    eventually("the replica to hold the keys", lambda: 0 < keys_of(replica) == keys_of(master), 60)
    stale_id = cluster_command(replica, "MYID")
    cluster_command(replica, "RESET", "SOFT")  # empties memory only: the append-only file keeps the keys
    for node in s.nodes():
        if node != replica:
            cluster_command(node, "FORGET", stale_id)
    return master, replica, stale_id


def endpoint_of(s: Scene, service: str, pod: str, old_uid: str) -> Endpoint | None:
    """The ready endpoint of the re-created ``pod`` (another uid) of ``service``."""
    found = ready_endpoints(s.kube, s.namespace, service)
    return next((e for e in found if e.pod == pod and e.uid != old_uid), None)


@pytest.mark.timeout(900)
def test_a_pod_back_with_stale_keys_is_not_in_the_client_service_until_its_node_joined(
    redis_scene: SceneStarter, loopback_fleet: devfleet.Fleet
) -> None:
    """A replica's volume left as a departure of an older controller left it (a one-node cluster of
    stale keys once restarted) comes back in a new pod while no controller runs. The client
    Service's endpoints are read every 50 ms throughout: the pod is never listed before the
    controller has emptied its node and the cluster has met it, and is listed after."""
    with redis_scene(persistence=True, controller=False) as s:
        options = controller_options(loopback_fleet, s.namespace)
        with controller_running(options):
            s.apply(shards=3, replicasPerShard=1)
            s.wait_ready()
            eventually(
                "every pod in the client Service",
                lambda: len(ready_endpoints(s.kube, s.namespace, NAME)) == 6,
                60,
            )
            check(s.traffic(bulk=3000).stop(s.nodes()), "preloaded")
        master, replica, stale_id = leave_as_an_older_departure_did(s)
        pod = s.pods.pod_at(replica)
        old_uid = s.kube.get("v1", "Pod", pod, s.namespace)["metadata"]["uid"]

        def look(found: frozenset[Endpoint]) -> str:
            back = next((e for e in found if e.pod == pod and e.uid != old_uid), None)
            problem = not_joined(RedisNode(back.ip, 6379), master, stale_id) if back else ""
            return f"{pod} is in the client Service while {problem}" if problem else ""

        watch = EndpointWatch(s.kube, s.namespace, NAME, look).start()
        try:
            s.kube.delete("v1", "Pod", pod, s.namespace)
            # The new pod is Ready (the headless Service, which selects every pod, offers it) and its
            # server is back on the volume before the controller starts again.
            back = eventually("the new pod", lambda: endpoint_of(s, f"{NAME}-headless", pod, old_uid), 120)
            node = RedisNode(back.ip, 6379)
            eventually("the stale keys loaded", lambda: node in s.pods.answering() and keys_of(node) > 0, 60)
            alone = next(e for e in parse_cluster_nodes(cluster_command(node, "NODES")) if e.is_myself)
            assert alone.node_id == stale_id
            assert alone.is_master
            assert alone.slot_count > 0, "it should claim the slots of its stale keys"
            started = time.monotonic()
            with controller_running(options):
                # The status still says Ready from before the pod went: wait for this controller's word.
                eventually("the stale volume emptied", lambda: s.events("ReturningNodesReset"), 120)
                eventually("the pod in the client Service", lambda: endpoint_of(s, NAME, pod, old_uid), 60)
                took = time.monotonic() - started
                print(f"the returning pod joined the client Service {took:.1f}s after the controller started")
                s.wait_ready(timeout=120)
                assert not_joined(node, master, stale_id) == ""
                complaints = watch.stop()  # before the pods go with the RedisCluster
                s.kube.delete(API_VERSION, KIND, NAME, s.namespace)
                gone = lambda: not s.kube.list(API_VERSION, KIND, namespace=s.namespace).items  # noqa: E731
                eventually("deleted", gone, 60)
        finally:
            watch.stop()
        assert complaints == [], complaints[:5]
