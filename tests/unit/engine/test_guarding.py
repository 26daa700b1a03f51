"""The guard check at the revision gate: plans turned into the changes rules see, the fallback to git
for a cluster that cannot be read, and the rejection naming every failure."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from syncer.config.guards import load_guard_policy
from syncer.domain.objects import ClusterManifests, DesiredFleet, Manifest, ObjectKey
from syncer.domain.plans import Action, Change, ClusterPlan
from syncer.engine.guarding import RevisionGuard, declared_changes, planned_changes
from syncer.errors import GuardRejected, Location
from syncer.guards import ChangeKind, GuardPolicy

REPO_ROOT = Path(__file__).resolve().parents[3]
LABELS = {"a": {"tier": "canary"}, "b": {"tier": "prod"}}


def rc(version: str, shards: int = 3) -> dict[str, Any]:
    return {
        "apiVersion": "redis.syncer.dev/v1alpha1",
        "kind": "RedisCluster",
        "metadata": {"name": "orders", "namespace": "redis"},
        "spec": {"version": version, "shards": shards},
    }


def key(cluster: str, kind: str = "RedisCluster", name: str = "orders") -> ObjectKey:
    return ObjectKey(cluster, "redis.syncer.dev", kind, "redis", name)


def fleet(revision: str, bodies: dict[str, list[dict[str, Any]]]) -> DesiredFleet:
    clusters = {}
    for cluster, docs in bodies.items():
        manifests = [
            Manifest(key(cluster, d["kind"], d["metadata"]["name"]), d["apiVersion"], d, Location("f.yaml"))
            for d in docs
        ]
        clusters[cluster] = ClusterManifests.of(cluster, manifests, LABELS[cluster])
    return DesiredFleet(revision, clusters)


@pytest.fixture(scope="module")
def shipped() -> GuardPolicy:
    return load_guard_policy(REPO_ROOT / "policies" / "guards.yaml")


def test_plan_actions_map_to_what_a_rule_judges() -> None:
    live, want = rc("7.2.5"), rc("7.4.1")
    plan = ClusterPlan(
        "a",
        (
            Change(key("a", name="c"), "v", Action.CREATE, after=want),
            Change(key("a", name="u"), "v", Action.UPDATE, before=live, after=want),
            Change(key("a", name="d"), "v", Action.DRIFT, before=live, after=want),
            Change(key("a", name="o"), "v", Action.ADOPT, before=live, after=want),
            Change(key("a", name="p"), "v", Action.PRUNE, before=live, after=live),
            Change(key("a", name="k"), "v", Action.KEEP, before=live),
            Change(key("a", name="n"), "v", Action.UNCHANGED),
        ),
    )
    seen = {c.key.name: (c.action, c.old, c.new) for c in planned_changes(plan, {"tier": "canary"})}
    assert seen == {
        "c": (ChangeKind.CREATE, None, want),
        "u": (ChangeKind.UPDATE, live, want),
        "d": (ChangeKind.UPDATE, live, want),
        "o": (ChangeKind.UPDATE, live, want),
        "p": (ChangeKind.PRUNE, live, None),
    }


def test_a_cluster_that_cannot_be_read_is_judged_from_the_revision_in_force() -> None:
    in_force = fleet("r1", {"a": [rc("7.2.5")], "b": [rc("7.2.5")]})
    tip = fleet("r2", {"a": [rc("7.2.5")], "b": [rc("7.2")]})
    changes = declared_changes(tip.clusters["b"], in_force.clusters["b"])
    assert [(c.action, c.old, c.new) for c in changes] == [(ChangeKind.UPDATE, rc("7.2.5"), rc("7.2"))]
    assert declared_changes(tip.clusters["a"], in_force.clusters["a"]) == []
    dropped = declared_changes(fleet("r3", {"a": []}).clusters["a"], in_force.clusters["a"])
    assert [(c.action, c.new) for c in dropped] == [(ChangeKind.PRUNE, None)]
    fresh = declared_changes(tip.clusters["b"], None)
    assert [(c.action, c.old) for c in fresh] == [(ChangeKind.CREATE, None)]


def test_a_downgrade_on_an_unreadable_cluster_is_still_rejected(shipped: GuardPolicy) -> None:
    in_force = fleet("r1", {"a": [rc("7.2.5")], "b": [rc("7.2.5")]})
    tip = fleet("r2", {"a": [rc("7.2.5")], "b": [rc("7.2")]})

    def plan_of(desired: ClusterManifests) -> ClusterPlan:
        if desired.cluster == "b":
            return ClusterPlan("b", error="connection refused")
        return ClusterPlan("a", (Change(key("a"), "v", Action.UNCHANGED),))

    guard = RevisionGuard(shipped, plan_of)
    with pytest.raises(GuardRejected) as caught:
        guard.require(tip, in_force)
    assert caught.value.failures == (
        "rule no-redis-downgrade failed on b RedisCluster/redis/orders: the Redis version must not go"
        ' down (inputs: new.spec.version="7.2", old.spec.version="7.2.5")',
    )
    assert str(caught.value).startswith(f"guard policy {shipped.origin}:\n")
    # The same failures as values: the rule, the cluster it concerns and its outcome.
    assert [(v.guard, v.cluster, v.outcome) for v in caught.value.verdicts] == [
        ("no-redis-downgrade", "b", "fail")
    ]
    assert caught.value.verdicts[0].line == caught.value.failures[0]
    assert caught.value.verdicts_of("a") == ()


def test_live_values_are_what_is_judged_not_the_previous_revision(shipped: GuardPolicy) -> None:
    # Git says 7.4.1 in both revisions, but the cluster runs 7.4.2 (changed out of band): applying
    # the tip would take it down a version, and that is what is judged.
    in_force = fleet("r1", {"a": [rc("7.4.1")]})
    tip = fleet("r2", {"a": [rc("7.4.1", shards=3)]})

    def plan_of(desired: ClusterManifests) -> ClusterPlan:
        return ClusterPlan("a", (Change(key("a"), "v", Action.DRIFT, before=rc("7.4.2"), after=rc("7.4.1")),))

    report = RevisionGuard(shipped, plan_of).judge(tip, in_force)
    assert [str(f).split(":")[0] for f in report.failures] == [
        "rule no-redis-downgrade failed on a RedisCluster/redis/orders"
    ]


def test_an_empty_policy_plans_nothing() -> None:
    def plan_of(desired: ClusterManifests) -> ClusterPlan:
        raise AssertionError("an empty policy must not contact any cluster")

    report = RevisionGuard(GuardPolicy(), plan_of).require(fleet("r1", {"a": [rc("7.2")]}), None)
    assert not report.rejected
