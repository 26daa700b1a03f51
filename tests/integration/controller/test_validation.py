"""The apiserver itself rejects invalid RedisClusters through the CRD's schema, naming the field."""

from __future__ import annotations

from typing import Any

import pytest

from syncer.errors import Invalid
from syncer.kube import ClusterClient
from tests.integration.controller.kit import redis_cluster

pytestmark = pytest.mark.integration

CASES: list[tuple[str, dict[str, Any], str]] = [
    ("no-shards", {"shards": 0}, "spec.shards"),
    ("too-many-replicas", {"replicasPerShard": 9}, "spec.replicasPerShard"),
    ("latest", {"version": "latest"}, "spec.version"),
    (
        "both-pods-and-percent",
        {"rolloutStrategy": {"steps": [{"pods": 1, "percent": 10}]}},
        "spec.rolloutStrategy.steps[0]",
    ),
    (
        "pause-in-words",
        {"rolloutStrategy": {"steps": [{"pods": 1, "pause": "5 minutes"}]}},
        "spec.rolloutStrategy.steps[0].pause",
    ),
    ("keep-volumes", {"persistence": {"retentionPolicy": "Keep"}}, "spec.persistence.retentionPolicy"),
    ("multiline-config", {"redisConfig": {"maxmemory": "1gb\nport 7000"}}, "spec.redisConfig.maxmemory"),
    ("auth-without-secret", {"auth": {}}, "spec.auth.secretRef"),
    (
        "no-eviction-allowed",
        {"podDisruptionBudget": {"maxUnavailable": 0}},
        "spec.podDisruptionBudget.maxUnavailable",
    ),
]


@pytest.mark.parametrize(("name", "spec", "field"), CASES, ids=[c[0] for c in CASES])
def test_invalid_specs_are_rejected_with_the_field_named(
    kube: ClusterClient, namespace: str, name: str, spec: dict[str, Any], field: str
) -> None:
    with pytest.raises(Invalid) as caught:
        kube.create(redis_cluster(name, namespace, **spec))
    assert field in str(caught.value)
    assert any(field in f"{cause.field} {cause.message}" for cause in caught.value.causes), (
        caught.value.causes
    )


def test_a_missing_version_is_rejected(kube: ClusterClient, namespace: str) -> None:
    body = redis_cluster("versionless", namespace)
    del body["spec"]["version"]
    with pytest.raises(Invalid, match=r"spec\.version: Required value"):
        kube.create(body)
