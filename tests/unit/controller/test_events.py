"""Events and stall messages about a RedisCluster never carry its secret values; the controller's
Events are written by syncer's one Event writer, so repeats are counted, not recreated; a reconcile
that ends well raises Normal Events only."""

from __future__ import annotations

import logging
from typing import Any

from syncer.controller.events import REPORTING_CONTROLLER, ClusterEvents, scrub
from syncer.controller.model import FINALIZER
from syncer.controller.reconciler import Reconciler
from syncer.domain.secrets import digest
from tests.support.memory_kube import MemoryKube

CLUSTER: dict[str, Any] = {
    "apiVersion": "redis.syncer.dev/v1alpha1",
    "kind": "RedisCluster",
    "metadata": {"name": "cache", "namespace": "redis", "uid": "u-1"},
    "spec": {"version": "7.2", "redisConfig": {"requirepass": "s3cret-pass", "maxmemory": "100mb"}},
}
STS = ("apps/v1", "StatefulSet", "redis", "cache-shard-0")


def _events(kube: MemoryKube) -> list[dict[str, Any]]:
    return [o for k, o in kube.objects.items() if k[1] == "Event"]


def test_an_event_echoing_a_password_directive_records_its_digest() -> None:
    kube = MemoryKube("one")

    ClusterEvents(kube, "controller-0").emit(
        CLUSTER, True, "ChildRejected", 'ConfigMap "cache-config": data "requirepass s3cret-pass" is invalid'
    )

    (event,) = _events(kube)
    assert "s3cret-pass" not in event["note"]
    assert digest("s3cret-pass") in event["note"]


def test_a_repeated_event_is_one_event_with_a_count() -> None:
    kube = MemoryKube("one")
    events = ClusterEvents(kube, "controller-0")

    for _ in range(3):
        events.emit(CLUSTER, True, "ScaleInBlocked", "nodes cannot leave yet")
    events.emit(CLUSTER, False, "SlotsMigrated", "moved 10 slots")

    found = {e["reason"]: e for e in _events(kube)}
    assert sorted(found) == ["ScaleInBlocked", "SlotsMigrated"]
    assert found["ScaleInBlocked"]["series"]["count"] == 2  # the second occurrence is written at once
    assert found["ScaleInBlocked"]["type"] == "Warning"
    assert found["ScaleInBlocked"]["regarding"]["uid"] == "u-1"
    assert found["ScaleInBlocked"]["reportingController"] == REPORTING_CONTROLLER
    assert found["ScaleInBlocked"]["reportingInstance"] == "controller-0"
    events.recorder.flush()
    assert _events(kube)[0]["series"]["count"] == 3


def test_messages_without_secrets_are_left_alone() -> None:
    assert scrub(CLUSTER, "maxmemory 100mb is too small") == "maxmemory 100mb is too small"


def test_a_reconcile_that_ends_well_raises_only_normal_events() -> None:
    kube = MemoryKube("one")
    meta = {"name": "cache", "namespace": "redis", "generation": 1, "uid": "u-1", "finalizers": [FINALIZER]}
    spec = {"version": "7.2", "shards": 1, "replicasPerShard": 0}
    kube.create({"apiVersion": CLUSTER["apiVersion"], "kind": "RedisCluster", "metadata": meta, "spec": spec})
    reconciler = Reconciler(kube)
    log = logging.LoggerAdapter(logging.getLogger(__name__))
    reconciler.reconcile("redis", "cache", log)
    status: dict[str, Any] = {"observedGeneration": 1, "replicas": 1, "readyReplicas": 1}
    status.update(updatedReplicas=1, currentRevision="r1", updateRevision="r1")
    kube.objects[STS]["status"] = status

    assert reconciler.reconcile("redis", "cache", log).ready

    found = {e["reason"]: e["type"] for k, e in kube.objects.items() if k[1] == "Event"}
    assert found["ReadyFalse"] == "Warning"
    assert found["ReadyTrue"] == found["ReconcilingFalse"] == found["StalledFalse"] == "Normal"
