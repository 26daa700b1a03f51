"""The controller's metrics: what one reconcile records, over an in-memory cluster (syncer's own
decisions), and the exposition Prometheus reads."""

from __future__ import annotations

import itertools

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from syncer.controller.metrics import RECONCILE_BUCKETS, Metrics, pod_counts
from syncer.controller.model import FINALIZER, ControllerOptions
from syncer.controller.runner import Controller
from tests.support.memory_kube import MemoryKube


def cluster(kube: MemoryKube, name: str = "cache", **spec: object) -> None:
    kube.create(
        {
            "apiVersion": "redis.syncer.dev/v1alpha1",
            "kind": "RedisCluster",
            "metadata": {
                "name": name,
                "namespace": "redis",
                "generation": 1,
                "uid": f"u-{name}",
                "finalizers": [FINALIZER],
            },
            "spec": {"version": "7.2", "shards": 2, "replicasPerShard": 1, **spec},
        }
    )


def reconciled(kube: MemoryKube, *names: str) -> CollectorRegistry:
    registry = CollectorRegistry()
    controller = Controller(kube, ControllerOptions(), registry)
    for name in names:
        controller.process(f"redis/{name}")
    return registry


def value(registry: CollectorRegistry, metric: str, **labels: str) -> float | None:
    return registry.get_sample_value(metric, labels)


def test_a_reconcile_is_counted_timed_and_sets_a_gauge_per_condition_and_pods_by_state() -> None:
    kube = MemoryKube("one")
    cluster(kube)
    registry = reconciled(kube, "cache", "gone")
    assert value(registry, "rediscluster_reconcile_total", phase="sync", result="success") == 1
    assert value(registry, "rediscluster_reconcile_total", phase="absent", result="success") == 1
    assert value(registry, "rediscluster_reconcile_duration_seconds_count") == 2
    assert value(registry, "rediscluster_reconcile_duration_seconds_bucket", le="60.0") == 2
    # The StatefulSets were just made: no pod exists yet, the cluster reconciles.
    ours = {"namespace": "redis", "name": "cache"}
    assert value(registry, "rediscluster_status", condition="Ready", **ours) == 0
    assert value(registry, "rediscluster_status", condition="Reconciling", **ours) == 1
    assert value(registry, "rediscluster_status", condition="Stalled", **ours) == 0
    assert value(registry, "rediscluster_ready", **ours) == 0
    assert value(registry, "rediscluster_pods", state="missing", **ours) == 4
    assert value(registry, "rediscluster_pods", state="ready", **ours) == 0


def test_a_stalled_spec_is_counted_stalled_and_asks_for_no_pods() -> None:
    kube = MemoryKube("one")
    cluster(kube, redisConfig={"port": "7000"})  # set by the controller: the spec cannot be parsed
    registry = reconciled(kube, "cache")
    assert value(registry, "rediscluster_reconcile_total", phase="sync", result="stalled") == 1
    assert value(registry, "rediscluster_status", namespace="redis", name="cache", condition="Stalled") == 1
    assert value(registry, "rediscluster_pods", namespace="redis", name="cache", state="missing") == 0


def test_a_deleted_cluster_leaves_no_series() -> None:
    kube = MemoryKube("one")
    cluster(kube)
    registry = CollectorRegistry()
    controller = Controller(kube, ControllerOptions(), registry)
    controller.process("redis/cache")
    before = generate_latest(registry).decode()
    assert 'rediscluster_status{condition="Ready",name="cache",namespace="redis"}' in before
    assert 'rediscluster_pods{name="cache",namespace="redis",state="missing"}' in before
    kube.delete("redis.syncer.dev/v1alpha1", "RedisCluster", "cache", "redis")
    controller.process("redis/cache")
    exposed = generate_latest(registry).decode()
    assert 'name="cache"' not in exposed


def test_pods_by_state_from_the_shards_of_a_status() -> None:
    status = {
        "shards": [
            {"index": 0, "replicas": 2, "readyReplicas": 2},
            {"index": 1, "replicas": 1, "readyReplicas": 0},
        ]
    }
    assert pod_counts(status, 6) == {"ready": 2, "unready": 1, "missing": 3}
    assert pod_counts({}, 0) == {"ready": 0, "unready": 0, "missing": 0}


def test_the_duration_buckets_separate_milliseconds_from_a_minute() -> None:
    assert RECONCILE_BUCKETS[0] <= 0.005
    assert RECONCILE_BUCKETS[-1] >= 60
    # Neighbouring bounds never more than 2.5x apart: a P95 interpolated between them stays close.
    assert all(b / a <= 2.5 for a, b in itertools.pairwise(RECONCILE_BUCKETS))


def test_the_exposition_parses_with_the_documented_names_and_labels() -> None:
    registry = CollectorRegistry()
    metrics = Metrics(registry)
    metrics.observe("rollout", "success", 0.2)
    status = {
        "conditions": [{"type": "Ready", "status": "True"}],
        "shards": [{"replicas": 1, "readyReplicas": 1}],
    }
    metrics.set_status("redis", "cache", status, 1)
    families = {f.name: f for f in text_string_to_metric_families(generate_latest(registry).decode())}
    assert families["rediscluster_reconcile"].type == "counter"
    assert families["rediscluster_reconcile_duration_seconds"].type == "histogram"
    labels = {name: {tuple(sorted(s.labels)) for s in families[name].samples} for name in families}
    assert labels["rediscluster_reconcile"] >= {("phase", "result")}
    assert labels["rediscluster_status"] == {("condition", "name", "namespace")}
    assert labels["rediscluster_pods"] == {("name", "namespace", "state")}
    assert labels["rediscluster_ready"] == {("name", "namespace")}
