from __future__ import annotations

from typing import Any

from syncer.domain.health import Health
from syncer.health import cluster_health, object_health


def redis(generation: int, observed: int | None, **conditions: tuple[str, str]) -> dict[str, Any]:
    status: dict[str, Any] = {
        "conditions": [
            {"type": t, "status": s, "reason": r, "message": f"{t} says {r}"}
            for t, (s, r) in conditions.items()
        ]
    }
    if observed is not None:
        status["observedGeneration"] = observed
    return {
        "apiVersion": "redis.syncer.dev/v1alpha1",
        "kind": "RedisCluster",
        "metadata": {"name": "sessions", "namespace": "cache", "generation": generation},
        "status": status,
    }


def test_ready_at_the_current_generation_is_healthy() -> None:
    verdict = object_health(redis(3, 3, Ready=("True", "AllShardsReady"), Stalled=("False", "Fine")))
    assert verdict.health is Health.HEALTHY
    assert verdict.subject == "RedisCluster/cache/sessions"


def test_a_stale_ready_does_not_count() -> None:
    verdict = object_health(redis(4, 3, Ready=("True", "AllShardsReady")))
    assert verdict.health is Health.PROGRESSING
    assert verdict.message == "the controller has observed generation 3, not 4"


def test_no_status_at_all_is_progressing() -> None:
    obj = redis(1, None)
    del obj["status"]
    assert object_health(obj).health is Health.PROGRESSING


def test_stalled_is_degraded_even_if_ready_says_true() -> None:
    verdict = object_health(redis(2, 2, Ready=("True", "X"), Stalled=("True", "StepTimeout")))
    assert verdict.health is Health.DEGRADED
    assert verdict.reason == "StepTimeout"


def test_not_ready_reports_why_from_reconciling() -> None:
    verdict = object_health(
        redis(2, 2, Ready=("False", "ShardsNotReady"), Reconciling=("True", "RollingOut"))
    )
    assert verdict.health is Health.PROGRESSING
    assert verdict.reason == "RollingOut"


def test_namespaces_are_healthy_when_active_and_other_kinds_when_present() -> None:
    terminating = {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": "x"},
        "status": {"phase": "Terminating"},
    }
    assert object_health(terminating).health is Health.PROGRESSING
    assert (
        object_health({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "x"}}).health
        is Health.HEALTHY
    )


def test_a_cluster_is_as_healthy_as_its_worst_object_and_missing_objects_count() -> None:
    live = [redis(1, 1, Ready=("True", "Ok"))]
    whole = cluster_health("eu-1", ["RedisCluster/cache/sessions"], live)
    assert whole.health is Health.HEALTHY
    partial = cluster_health("eu-1", ["RedisCluster/cache/sessions", "RedisCluster/cache/orders"], live)
    assert partial.health is Health.MISSING
    assert [o.subject for o in partial.unhealthy] == ["RedisCluster/cache/orders"]
    assert "RedisCluster/cache/orders missing" in partial.summary()
    stalled = cluster_health(
        "eu-1", ["RedisCluster/cache/sessions"], [redis(1, 1, Stalled=("True", "Broken"))]
    )
    assert stalled.health is Health.DEGRADED
