"""kstatus-style health of live objects. Pure: objects in, verdicts out."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from syncer.domain.health import ClusterHealth, Health, ObjectHealth, worst

REDIS_CLUSTER = ("redis.syncer.dev", "RedisCluster")


def _subject(obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata") or {}
    parts = [str(obj.get("kind", "?")), meta.get("namespace", ""), str(meta.get("name", "?"))]
    return "/".join(p for p in parts if p)


def _condition(status: Mapping[str, Any], kind: str) -> Mapping[str, Any] | None:
    for condition in status.get("conditions") or []:
        if isinstance(condition, Mapping) and condition.get("type") == kind:
            return condition
    return None


def redis_cluster_health(obj: Mapping[str, Any]) -> ObjectHealth:
    """Healthy only when the controller observed the current generation, says Ready=True and is not
    Stalled; Stalled=True is degraded; anything else is still progressing."""
    subject = _subject(obj)
    generation = (obj.get("metadata") or {}).get("generation")
    status = obj.get("status") or {}
    observed = status.get("observedGeneration")
    if generation is not None and (observed is None or observed < generation):
        return ObjectHealth(
            subject,
            Health.PROGRESSING,
            "NotObserved",
            f"the controller has observed generation {observed if observed is not None else 'none'}, "
            f"not {generation}",
        )
    stalled = _condition(status, "Stalled")
    if stalled is not None and stalled.get("status") == "True":
        return ObjectHealth(
            subject, Health.DEGRADED, str(stalled.get("reason", "Stalled")), str(stalled.get("message", ""))
        )
    ready = _condition(status, "Ready")
    if ready is not None and ready.get("status") == "True":
        return ObjectHealth(subject, Health.HEALTHY, str(ready.get("reason", "Ready")))
    if ready is None:
        return ObjectHealth(subject, Health.PROGRESSING, "NoReadyCondition", "no Ready condition yet")
    reconciling = _condition(status, "Reconciling")
    source = reconciling if reconciling is not None and reconciling.get("status") == "True" else ready
    return ObjectHealth(
        subject, Health.PROGRESSING, str(source.get("reason", "")), str(source.get("message", ""))
    )


def object_health(obj: Mapping[str, Any]) -> ObjectHealth:
    """The health of any object syncer applies: RedisClusters by their conditions, Namespaces by
    phase, and other kinds healthy once they exist (they have no readiness of their own)."""
    group = str(obj.get("apiVersion", "")).rpartition("/")[0]
    kind = str(obj.get("kind", ""))
    if (group, kind) == REDIS_CLUSTER:
        return redis_cluster_health(obj)
    if kind == "Namespace" and group == "":
        phase = (obj.get("status") or {}).get("phase", "Active")
        if phase != "Active":
            return ObjectHealth(_subject(obj), Health.PROGRESSING, phase, "the namespace is not active")
    return ObjectHealth(_subject(obj), Health.HEALTHY)


def cluster_health(cluster: str, expected: Iterable[str], live: Iterable[Mapping[str, Any]]) -> ClusterHealth:
    """A cluster's health over the objects synced to it: ``expected`` subjects (``Kind/ns/name``) that
    are not among the ``live`` objects count as missing."""
    verdicts = {v.subject: v for v in (object_health(obj) for obj in live)}
    objects = [
        verdicts.get(s) or ObjectHealth(s, Health.MISSING, "NotFound", "not in the cluster") for s in expected
    ]
    return ClusterHealth(cluster, worst([o.health for o in objects]), tuple(objects))
