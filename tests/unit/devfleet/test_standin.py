"""What the status stand-in of light clusters writes, and when."""

from __future__ import annotations

from devfleet import standin
from syncer.domain.health import Health
from syncer.health.verdicts import redis_cluster_health


def _obj(generation: int, status: dict[str, object] | None = None) -> dict[str, object]:
    return {
        "apiVersion": "redis.syncer.dev/v1alpha1",
        "kind": "RedisCluster",
        "metadata": {"name": "cache", "namespace": "prod", "generation": generation},
        "status": status or {},
    }


def test_what_it_writes_is_healthy_for_exactly_that_generation_and_says_who_wrote_it() -> None:
    written = standin.ready_status(3)["status"]
    assert redis_cluster_health(_obj(3, written)).health is Health.HEALTHY
    assert redis_cluster_health(_obj(4, written)).health is Health.PROGRESSING
    assert written["conditions"][0]["reason"] == "StatusStandIn"
    assert "stand-in" in written["conditions"][0]["message"]


def test_it_marks_new_generations_only() -> None:
    assert standin._needs_mark(_obj(1))
    assert not standin._needs_mark(_obj(2, standin.ready_status(2)["status"]))
    assert standin._needs_mark(_obj(3, standin.ready_status(2)["status"]))
    deleting = _obj(1)
    deleting["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"  # type: ignore[index]
    assert not standin._needs_mark(deleting)
