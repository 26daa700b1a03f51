"""The pause annotation: a paused RedisCluster is left alone (children and status as they were) until
the annotation goes, then the controller catches up with the spec."""

from __future__ import annotations

import time

import pytest

from syncer.controller.model import ANNOTATION_PAUSED, API_VERSION, KIND
from syncer.kube import ApplyOptions, ClusterClient
from tests.integration.controller.kit import RunningController, is_ready, redis_cluster
from tests.support.waiting import eventually

pytestmark = pytest.mark.integration

APPLY = ApplyOptions(field_manager="syncer-tests")


def _statefulsets(kube: ClusterClient, namespace: str) -> dict[str, int]:
    items = kube.list("apps/v1", "StatefulSet", namespace=namespace).items
    return {s["metadata"]["name"]: int(s["spec"]["replicas"]) for s in items}


def test_a_paused_cluster_is_not_reconciled_until_resumed(
    kube: ClusterClient, namespace: str, controller: RunningController
) -> None:
    body = redis_cluster("cache", namespace, shards=2, replicasPerShard=1)
    kube.apply(body, APPLY)
    eventually("Ready", lambda: is_ready(kube.get(API_VERSION, KIND, "cache", namespace)), 90)
    before = _statefulsets(kube, namespace)
    status_before = kube.get(API_VERSION, KIND, "cache", namespace)["status"]

    body["metadata"]["annotations"] = {ANNOTATION_PAUSED: "true"}
    body["spec"].update(shards=3, replicasPerShard=2)
    kube.apply(body, APPLY)
    time.sleep(5)  # several reconcile opportunities: watch events, the 1 s poll
    assert _statefulsets(kube, namespace) == before
    paused = kube.get(API_VERSION, KIND, "cache", namespace)
    assert paused["status"] == status_before, "a paused object's status must not move"

    body["metadata"]["annotations"] = {ANNOTATION_PAUSED: "false"}
    kube.apply(body, APPLY)
    eventually("Ready after resume", lambda: is_ready(kube.get(API_VERSION, KIND, "cache", namespace)), 90)
    assert _statefulsets(kube, namespace) == {f"cache-shard-{i}": 3 for i in range(3)}
