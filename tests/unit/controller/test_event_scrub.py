"""Events and stall messages about a RedisCluster never carry its secret values."""

from __future__ import annotations

from typing import Any

from syncer.controller.events import EventRecorder, scrub
from syncer.domain.secrets import digest
from tests.support.memory_kube import MemoryKube

CLUSTER: dict[str, Any] = {
    "apiVersion": "redis.syncer.dev/v1alpha1",
    "kind": "RedisCluster",
    "metadata": {"name": "cache", "namespace": "redis", "uid": "u-1"},
    "spec": {"version": "7.2", "redisConfig": {"requirepass": "s3cret-pass", "maxmemory": "100mb"}},
}


def test_an_event_echoing_a_password_directive_records_its_digest() -> None:
    kube = MemoryKube("one")

    EventRecorder(kube, clock=lambda: 0.0).emit(
        CLUSTER, True, "ChildRejected", 'ConfigMap "cache-config": data "requirepass s3cret-pass" is invalid'
    )

    (event,) = [o for k, o in kube.objects.items() if k[1] == "Event"]
    assert "s3cret-pass" not in event["message"]
    assert digest("s3cret-pass") in event["message"]


def test_messages_without_secrets_are_left_alone() -> None:
    assert scrub(CLUSTER, "maxmemory 100mb is too small") == "maxmemory 100mb is too small"
