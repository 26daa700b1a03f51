"""Shards and replicas change under a client that never stops writing and reading: every operation
keeps every key, the longest write outage is printed, and Ready comes back only once Redis is healthy.

Real redis-servers run behind the pods of the loopback fleet (one per pod, on the pod's IP); the
controller runs with its topology path on, as it would in a cluster."""

from __future__ import annotations

import signal
import time
from pathlib import Path

import pytest

from devfleet import fleet as devfleet
from tests.integration.controller.rediskit import NAME, SceneStarter, check, controller_process
from tests.integration.topology.servers import client, cluster_command
from tests.support.waiting import eventually

pytestmark = pytest.mark.integration


def balanced(counts: dict[str, int], masters: int) -> bool:
    return len(counts) == masters and max(counts.values()) - min(counts.values()) <= 1


@pytest.mark.timeout(1800)
def test_shards_3_to_4_to_3_to_2_keep_every_key(redis_scene: SceneStarter) -> None:
    with redis_scene(persistence=False, shards=3, replicasPerShard=1) as s:
        assert balanced(s.masters(), 3)

        for shards, gone in ((4, ()), (3, ("cache-shard-3",)), (2, ("cache-shard-2", "cache-shard-3"))):
            before = {n.node_id for n in s.cluster_nodes()}
            obj, result = s.change_while_writing(f"shards -> {shards}", bulk=20000, shards=shards)
            counts = s.masters()
            assert balanced(counts, shards), counts
            assert all(name not in s.statefulsets() for name in gone)
            entries = s.cluster_nodes()
            assert len(entries) == shards * 2, [e.name for e in entries]
            assert not any(e.is_ghost for e in entries), [e.flags for e in entries]
            masters = {sh["index"]: sh.get("master") for sh in obj["status"]["shards"]}
            assert sorted(masters) == list(range(shards)), masters
            assert all(masters.values()), masters
            assert s.events("SlotsMigrated"), "no migration event"
            if shards < 4:
                assert s.events("NodesForgotten")
                assert {n.node_id for n in entries} < before
            print(f"shards -> {shards}: longest write outage {result.longest_outage:.3f}s", flush=True)


@pytest.mark.timeout(1200)
def test_replicas_1_to_2_to_1_never_removes_a_master(redis_scene: SceneStarter) -> None:
    with redis_scene(persistence=False, shards=2, replicasPerShard=1) as s:
        s.change_while_writing("replicas 1 -> 2", bulk=5000, replicasPerShard=2)
        assert len(s.cluster_nodes()) == 6

        # Make the pod that scaling down removes (ordinal 2 of shard 0) that shard's master.
        leaving = s.pods.node_of("cache-shard-0-2")
        cluster_command(leaving, "FAILOVER")
        eventually("manual failover", lambda: client(leaving).info("replication")["role"] == "master", 30)
        s.wait_ready()

        s.change_while_writing("replicas 2 -> 1", bulk=5000, replicasPerShard=1)
        entries = s.cluster_nodes()
        assert len(entries) == 4
        assert str(leaving) not in {e.name for e in entries}
        assert not any(e.is_ghost for e in entries)
        assert any(str(leaving) in m for m in s.events("MasterFailedOver"))
        assert s.events("NodesForgotten")


@pytest.mark.timeout(1200)
def test_a_controller_killed_mid_migration_is_finished_by_the_next_one(
    loopback_fleet: devfleet.Fleet, tmp_path: Path, redis_scene: SceneStarter
) -> None:
    with redis_scene(persistence=False, controller=False) as s:
        log = tmp_path / "controller.log"
        with controller_process(loopback_fleet, s.namespace, log):
            s.apply(shards=3, replicasPerShard=0)
            s.wait_ready()
        traffic = s.traffic(bulk=120000)
        s.apply(shards=4)
        with controller_process(loopback_fleet, s.namespace, log) as first:

            def open_slots() -> list[int]:
                return sorted({slot for e in s.myselves() for slot, _ in (*e.migrating, *e.importing)})

            def frozen_mid_slot() -> bool:
                # Seeing a slot open and then killing races the controller finishing that slot, so
                # freeze it first: only a slot still open while it cannot run is left by the kill.
                if not open_slots():
                    return False
                first.send_signal(signal.SIGSTOP)
                if open_slots():
                    return True
                first.send_signal(signal.SIGCONT)
                return False

            eventually("the controller frozen with a slot open", frozen_mid_slot, 120, every=0.01)
            first.send_signal(signal.SIGKILL)
            first.wait(10)
        time.sleep(1)
        left_open = open_slots()
        print(f"killed mid-migration; open slots left: {left_open[:10]}", flush=True)
        assert left_open, "the kill should have left a slot open"
        with controller_process(loopback_fleet, s.namespace, log):
            s.wait_ready()
            assert s.events("OpenSlotsFixed"), "the open slots were not closed by the new controller"
            assert not any(e.migrating or e.importing for e in s.myselves())
            assert balanced(s.masters(), 4)
            check(traffic.stop(s.nodes()), "controller killed mid-migration")
            s.kube.delete("redis.syncer.dev/v1alpha1", "RedisCluster", NAME, s.namespace)
            gone = "redis.syncer.dev/v1alpha1", "RedisCluster"
            eventually("finalized", lambda: not s.kube.list(*gone, namespace=s.namespace).items, 120)
