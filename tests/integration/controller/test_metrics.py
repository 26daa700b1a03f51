"""What Prometheus scrapes on a real cluster: a real ``syncer controller`` process's /metrics after
it reconciled a RedisCluster to Ready, and a real redis_exporter's metrics of the cluster's
redis-servers (one per pod of the loopback fleet), each parsed with prometheus_client's parser."""

from __future__ import annotations

import urllib.request
from pathlib import Path

import pytest
from prometheus_client.metrics_core import Metric
from prometheus_client.parser import text_string_to_metric_families

from devfleet import fleet as devfleet
from devfleet.probe import free_port
from tests.integration.controller.rediskit import NAME, SceneStarter, controller_process
from tests.support.waiting import eventually

pytestmark = pytest.mark.integration


def scraped(port: int) -> dict[str, Metric]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as resp:
            text = resp.read().decode()
    except OSError:
        return {}
    return {family.name: family for family in text_string_to_metric_families(text)}


def sample(families: dict[str, Metric], metric: str, **labels: str) -> float | None:
    """The value of the sample ``metric`` with ``labels`` among all of its own labels, or None."""
    for family in families.values():
        for found in family.samples:
            if found.name == metric and all(found.labels.get(k) == v for k, v in labels.items()):
                return float(found.value)
    return None


@pytest.mark.timeout(600)
def test_a_controller_process_serves_the_documented_metrics_of_a_ready_cluster(
    loopback_fleet: devfleet.Fleet, tmp_path: Path, redis_scene: SceneStarter
) -> None:
    with redis_scene(persistence=False, controller=False) as s:
        port = free_port()
        with controller_process(loopback_fleet, s.namespace, tmp_path / "controller.log", metrics_port=port):
            s.apply(shards=3, replicasPerShard=1)
            s.wait_ready()
            ours = {"namespace": s.namespace, "name": NAME}

            def ready_in_metrics() -> dict[str, Metric] | None:
                families = scraped(port)
                return families if sample(families, "rediscluster_ready", **ours) == 1 else None

            families = eventually("the metrics to say Ready", ready_in_metrics, 60)
            assert families["rediscluster_reconcile"].type == "counter"
            assert (sample(families, "rediscluster_reconcile_total", phase="sync", result="success") or 0) > 0
            histogram = families["rediscluster_reconcile_duration_seconds"]
            assert histogram.type == "histogram"
            count = sample(families, "rediscluster_reconcile_duration_seconds_count") or 0
            assert count > 0
            assert sample(families, "rediscluster_reconcile_duration_seconds_bucket", le="0.005") is not None
            assert sample(families, "rediscluster_reconcile_duration_seconds_bucket", le="60.0") == count
            buckets = [x for x in histogram.samples if x.name.endswith("_bucket")]
            p95 = min(float(x.labels["le"]) for x in buckets if x.value >= 0.95 * count)
            print(f"{count:.0f} reconciles to Ready, 95% within {p95} s", flush=True)
            assert sample(families, "rediscluster_status", condition="Ready", **ours) == 1
            assert sample(families, "rediscluster_status", condition="Reconciling", **ours) == 0
            assert sample(families, "rediscluster_status", condition="Stalled", **ours) == 0
            assert sample(families, "rediscluster_pods", state="ready", **ours) == 6
            assert sample(families, "rediscluster_pods", state="unready", **ours) == 0
            assert sample(families, "rediscluster_pods", state="missing", **ours) == 0


@pytest.mark.timeout(600)
def test_the_redis_exporter_serves_each_cluster_node_s_metrics(redis_scene: SceneStarter) -> None:
    with redis_scene(persistence=False, exporter=True, shards=3, replicasPerShard=0) as s:
        exporter = s.pods.exporter
        assert exporter is not None
        nodes = s.nodes()
        assert len(nodes) == 3
        for node in nodes:
            families = exporter.scrape(node)
            assert sample(families, "redis_up") == 1, node
            assert sample(families, "redis_cluster_enabled") == 1, node
            assert sample(families, "redis_cluster_state") == 1, node
            assert sample(families, "redis_cluster_slots_ok") == 16384, node
            assert (sample(families, "redis_connected_clients") or 0) >= 1, node
            commands = families["redis_commands"]
            assert commands.type == "counter"
            assert {x.labels["cmd"] for x in commands.samples if x.name == "redis_commands_total"}, node
