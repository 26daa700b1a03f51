"""Upgrades and failures under a client that never stops writing: masters hand over before their pod
restarts, a restarted empty node rejoins as a replica, a killed or hung master shows in Ready until
Redis is healthy again, and pods that come back on another pod's former IP fool nothing.

Writes count as acknowledged once a replica has them (WAIT 1), since Redis replicates
asynchronously and a crashed master takes its last unreplicated writes with it."""

from __future__ import annotations

import time
from typing import Any

import pytest

from syncer.controller.model import LABEL_MEMBER
from syncer.controller.topology import RedisNode
from tests.integration.controller.rediskit import Scene, SceneStarter, check
from tests.integration.topology.servers import client
from tests.support.waiting import eventually

pytestmark = pytest.mark.integration


def master_pods(s: Scene) -> set[str]:
    return {s.pods.pod_at(_node(name)) for name in s.masters()}


def _node(address: str) -> RedisNode:
    host, _, port = address.rpartition(":")
    return RedisNode(host, int(port))


@pytest.mark.timeout(1800)
@pytest.mark.parametrize("persistence", [True, False], ids=["persistence-on", "persistence-off"])
def test_an_upgrade_fails_masters_over_first_and_keeps_every_key(
    redis_scene: SceneStarter, persistence: bool
) -> None:
    with redis_scene(persistence=persistence, shards=3, replicasPerShard=1) as s:
        before = master_pods(s)
        uids = {
            p["metadata"]["name"]: p["metadata"]["uid"]
            for p in s.kube.list("v1", "Pod", namespace=s.namespace).items
        }

        what = f"upgrade, persistence {'on' if persistence else 'off'}"
        obj, result = s.change_while_writing(what, bulk=10000, durable=True, timeout=900, version="7.2.4")
        assert obj["status"]["currentVersion"] == "7.2.4"
        pods = s.kube.list("v1", "Pod", namespace=s.namespace).items
        assert all(uids[p["metadata"]["name"]] != p["metadata"]["uid"] for p in pods), "every pod restarted"
        failovers = s.events("MasterFailedOver")
        assert len(failovers) >= 3, failovers
        assert master_pods(s) != before or len(failovers) >= 6
        entries = s.cluster_nodes()
        assert len(entries) == 6
        assert not any(e.is_ghost for e in entries), [(e.name, e.flags) for e in entries]
        print(f"upgrade: {len(failovers)} failovers, longest write outage {result.longest_outage:.3f}s")
        reused = s.pods.reused_ips()
        print(f"IPs that served another pod before: {reused}", flush=True)


@pytest.mark.timeout(1200)
def test_a_killed_master_and_a_hung_master_show_until_redis_is_healthy(redis_scene: SceneStarter) -> None:
    with redis_scene(persistence=True, shards=3, replicasPerShard=1) as s:

        def not_ready() -> dict[str, Any] | None:
            ready = s.ready()
            return ready if ready.get("status") == "False" else None

        traffic = s.traffic(bulk=5000, durable=True)
        victim = _node(next(iter(s.masters())))
        s.pods.kill(victim)
        down = eventually("Ready=False", not_ready, 30)
        print(f"killed master {victim}: Ready=False {down['reason']}: {down['message'][:200]}")
        s.wait_ready()
        check(traffic.stop(s.nodes()), "killed master")

        traffic = s.traffic(bulk=5000, durable=True)
        victim = _node(next(iter(s.masters())))
        with s.pods.hung(victim):
            down = eventually("Ready=False", not_ready, 30)
            print(f"hung master {victim}: Ready=False {down['reason']}: {down['message'][:200]}")
            # The replica takes over while the master hangs; writes go on there.
            eventually("failover away from the hung master", lambda: str(victim) not in s.masters(), 30)
            time.sleep(2)
            assert s.ready().get("status") == "False", "a hung member must keep Ready False"
        s.wait_ready()
        check(traffic.stop(s.nodes()), "hung master")


def uids(s: Scene) -> dict[str, str]:
    pods = s.kube.list("v1", "Pod", namespace=s.namespace).items
    return {p["metadata"]["name"]: p["metadata"]["uid"] for p in pods}


def healed(s: Scene) -> bool:
    """Every answering member knows exactly the 6 pods' nodes and flags none of them."""
    views = s.views()
    return len(views) == 6 and all(len(v) == 6 and not any(e.is_ghost for e in v) for v in views)


@pytest.mark.timeout(1200)
def test_pods_back_on_other_pods_former_ips_fool_nothing(redis_scene: SceneStarter) -> None:
    with redis_scene(persistence=False, shards=2, replicasPerShard=2) as s:
        traffic = s.traffic(bulk=5000, durable=True)
        replicas = [s.pods.pod_at(_node(e.name)) for e in s.cluster_nodes() if e.is_replica]
        # Several pods at once: the fleet hands the freed IPs out again, often to another pod (kwok
        # picks among the freed addresses in no fixed order, so it may take a few rounds; the loop
        # ends at the first round in which one did).
        for _round in range(8):
            before = uids(s)
            for name in replicas[:3]:
                s.kube.delete("v1", "Pod", name, s.namespace)
            # The status may still show the Ready of before the deletions for a moment: wait until
            # the pods are replaced and answering, then until Redis and the status agree again.
            eventually(
                "the deleted pods to be replaced",
                lambda old=before: all(uids(s).get(n, old[n]) != old[n] for n in replicas[:3]),  # type: ignore[misc]
                300,
            )
            eventually("the deleted pods to answer again", lambda: len(s.nodes()) == 6, 300)
            eventually("every member to see 6 healthy nodes", lambda: healed(s), 300)
            s.wait_ready()
            if s.pods.reused_ips():
                break
        reused = s.pods.reused_ips()
        print(f"IPs that served another pod before: {reused}", flush=True)
        assert reused, "no pod came back on another pod's former IP: the test proved nothing"
        s.wait_ready()
        check(traffic.stop(s.nodes()), "pods back on other pods' IPs")
        entries = s.cluster_nodes()
        assert len(entries) == 6
        assert not any(e.is_ghost for e in entries)
        assert len(s.masters()) == 2


@pytest.mark.timeout(600)
def test_a_master_container_restarted_in_place_without_persistence_comes_back_as_itself(
    redis_scene: SceneStarter,
) -> None:
    """Without persistence the data directory is the pod's emptyDir, which a container restart keeps:
    a killed master comes back in its pod with its node id and its append-only file, before Redis
    fails it over, and keeps its membership of the client Service; no acknowledged write is lost.
    The servers read the redis.conf the controller renders: it is what turns the append-only file on."""
    with redis_scene(persistence=False, pod_config=True, shards=3, replicasPerShard=1) as s:
        traffic = s.traffic(bulk=5000, durable=True)
        victim = _node(next(iter(s.masters())))
        pod = s.pods.pod_at(victim)
        with client(victim) as conn:
            old_id = conn.execute_command("CLUSTER", "MYID")
        s.pods.kill(victim)
        eventually("the container to restart", lambda: victim in s.nodes(), 30)
        with client(victim) as conn:
            assert conn.execute_command("CLUSTER", "MYID") == old_id
        s.wait_ready()
        check(traffic.stop(s.nodes()), "master container restarted in place, persistence off")
        labels = s.kube.get("v1", "Pod", pod, s.namespace)["metadata"].get("labels") or {}
        assert labels.get(LABEL_MEMBER) == "true"
        entries = s.cluster_nodes()
        assert len(entries) == 6, [(e.name, e.flags) for e in entries]
