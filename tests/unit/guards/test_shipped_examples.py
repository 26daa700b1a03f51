"""Each rule of the shipped policies/guards.yaml on a change that keeps it and one that breaks it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from syncer.config.guards import load_guard_policy
from syncer.domain.objects import ObjectKey
from syncer.guards import ChangeKind, GuardOutcome, GuardPolicy, PlannedChange, judge_revision

REPO_ROOT = Path(__file__).resolve().parents[3]
PROD = {"tier": "prod", "region": "eu-west"}
CANARY = {"tier": "canary"}


@pytest.fixture(scope="module")
def shipped() -> GuardPolicy:
    return load_guard_policy(REPO_ROOT / "policies" / "guards.yaml")


def redis(version: str = "7.2.5", shards: int | None = 3, size: Any = "10Gi") -> dict[str, Any]:
    spec: dict[str, Any] = {"version": version}
    if shards is not None:
        spec["shards"] = shards
    if size is not None:
        spec["persistence"] = {"size": size}
    return {
        "apiVersion": "redis.syncer.dev/v1alpha1",
        "kind": "RedisCluster",
        "metadata": {"name": "orders", "namespace": "redis"},
        "spec": spec,
    }


def change(
    old: dict[str, Any] | None,
    new: dict[str, Any] | None,
    labels: dict[str, str] | None = None,
    cluster: str = "eu-1",
    name: str = "orders",
) -> PlannedChange:
    action = ChangeKind.CREATE if old is None else ChangeKind.PRUNE if new is None else ChangeKind.UPDATE
    key = ObjectKey(cluster, "redis.syncer.dev", "RedisCluster", "redis", name)
    return PlannedChange(key, action, old, new, PROD if labels is None else labels)


def failures(policy: GuardPolicy, *changes: PlannedChange) -> list[str]:
    return judge_revision(policy, "abc123", changes).summary().splitlines()


def test_shipped_policy_loads_every_example(shipped: GuardPolicy) -> None:
    assert [r.name for r in shipped.rules] == [
        "no-redis-downgrade",
        "shards-one-step",
        "allowed-versions",
        "storage-never-shrinks",
    ]
    assert [(limit.name, limit.max_objects) for limit in shipped.limits] == [("at-most-200-objects", 200)]
    assert str(shipped.rules[0].location) == f"{REPO_ROOT / 'policies' / 'guards.yaml'}:17"


def test_a_good_upgrade_passes_every_rule(shipped: GuardPolicy) -> None:
    report = judge_revision(
        shipped, "abc123", [change(redis("7.2.5"), redis("7.4.1", shards=4, size="20Gi"))]
    )
    assert not report.rejected
    assert [(v.rule, v.outcome) for v in report.rules] == [
        ("no-redis-downgrade", GuardOutcome.PASS),
        ("shards-one-step", GuardOutcome.PASS),
        ("allowed-versions", GuardOutcome.PASS),
        ("storage-never-shrinks", GuardOutcome.PASS),
    ]
    assert report.limits[0].message == "1 objects in 1 clusters changed"


def test_no_redis_downgrade(shipped: GuardPolicy) -> None:
    assert failures(shipped, change(redis("7.4.1"), redis("7.2.5"))) == [
        "rule no-redis-downgrade failed on eu-1 RedisCluster/redis/orders: the Redis version must not go"
        ' down (inputs: new.spec.version="7.2.5", old.spec.version="7.4.1")'
    ]
    # Versions of two parts are read as MAJOR.MINOR.0; a patch release above is an upgrade.
    assert failures(shipped, change(redis("7.2"), redis("7.2.5"))) == []
    assert failures(shipped, change(redis("7.4"), redis("7.2"))) != []


def test_shards_change_by_at_most_one_step(shipped: GuardPolicy) -> None:
    assert failures(shipped, change(redis(shards=12), redis(shards=11))) == []
    assert failures(shipped, change(redis(shards=12), redis(shards=3))) == [
        "rule shards-one-step failed on eu-1 RedisCluster/redis/orders: shards may change by at most one"
        " per revision (inputs: new.spec.shards=3, old.spec.shards=12)"
    ]
    # A manifest without shards gets the CRD default, 3.
    assert failures(shipped, change(redis(shards=5), redis(shards=None))) == [
        "rule shards-one-step failed on eu-1 RedisCluster/redis/orders: shards may change by at most one"
        " per revision (inputs: new.spec.shards=<absent>, old.spec.shards=5)"
    ]


def test_only_allow_listed_versions_in_production(shipped: GuardPolicy) -> None:
    assert failures(shipped, change(None, redis("7.2.4"))) == [
        "rule allowed-versions failed on eu-1 RedisCluster/redis/orders: this Redis version is not on the"
        ' allow-list for production (inputs: new.spec.version="7.2.4")'
    ]
    # The rule is scoped to tier=prod: a canary may run a version not qualified yet.
    assert failures(shipped, change(None, redis("7.2.4"), labels=CANARY, cluster="canary")) == []


def test_storage_never_shrinks(shipped: GuardPolicy) -> None:
    assert failures(shipped, change(redis(size="10Gi"), redis(size="10240Mi"))) == []
    assert failures(shipped, change(redis(size="10Gi"), redis(size="9Gi"))) == [
        "rule storage-never-shrinks failed on eu-1 RedisCluster/redis/orders: the volume size must not"
        ' shrink (inputs: old.spec.persistence.size="10Gi", new.spec.persistence.size="9Gi")'
    ]
    # Sizes given as plain numbers of bytes compare with suffixed ones.
    assert failures(shipped, change(redis(size="1Gi"), redis(size=1073741823))) != []
    assert failures(shipped, change(redis(size=None), redis(size="1Gi"))) == []
    # Dropping the size of a volume that had one is a shrink to nothing.
    assert failures(shipped, change(redis(size="1Gi"), redis(size=None))) == [
        "rule storage-never-shrinks failed on eu-1 RedisCluster/redis/orders: the volume size must not"
        ' shrink (inputs: old.spec.persistence.size="1Gi", new.spec.persistence.size=<absent>)'
    ]


def test_at_most_n_objects_per_revision(shipped: GuardPolicy) -> None:
    many = [change(None, redis(), name=f"r{i}", cluster=f"c{i % 4}") for i in range(201)]
    assert failures(shipped, *many) == [
        "limit at-most-200-objects failed: 201 objects changed, at most 200 allowed"
    ]
    assert failures(shipped, *many[:200]) == []


def test_prunes_and_creates_are_not_judged_by_update_rules(shipped: GuardPolicy) -> None:
    report = judge_revision(shipped, "abc123", [change(redis("7.4.1"), None)])
    assert report.rules == ()
    assert not report.rejected
