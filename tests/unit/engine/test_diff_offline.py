"""The offline diff: render and validate only, every desired object a create, waves from the policy."""

from __future__ import annotations

from pathlib import Path

from syncer.config.rollout import RolloutPolicy, WavePolicy
from syncer.domain import Action, DesiredFleet
from syncer.domain.selectors import LabelSelector
from syncer.engine.diff import offline_plan
from syncer.manifests import load_fleet

EXAMPLE = Path(__file__).parents[3] / "examples" / "repo"


def _fleet() -> DesiredFleet:
    return load_fleet(EXAMPLE, "local")


def test_offline_every_object_is_a_create() -> None:
    fleet = _fleet()
    plan = offline_plan(fleet)
    assert plan.offline
    assert sorted(c.cluster for c in plan.clusters) == sorted(fleet.clusters)
    for cluster in plan.clusters:
        desired = fleet.clusters[cluster.cluster].manifests
        assert [c.key for c in cluster.changes] == [m.key for m in desired]
        assert {c.action for c in cluster.changes} == {Action.CREATE}
        assert cluster.dry_runs == 0
    assert plan.has_changes


def test_offline_plans_are_grouped_into_the_policy_waves() -> None:
    fleet = _fleet()
    canary = WavePolicy("canary", 1, LabelSelector.from_dict({"matchLabels": {"tier": "canary"}}))
    policy = RolloutPolicy((canary, WavePolicy("rest", 100)))
    plan = offline_plan(fleet, rollout=policy)
    names = {w.name: [c.cluster for c in w.clusters] for w in plan.waves}
    assert names["canary"] == ["canary"]
    assert sorted(names["rest"]) == sorted(set(fleet.clusters) - {"canary"})


def test_offline_plan_of_chosen_clusters_only() -> None:
    plan = offline_plan(_fleet(), ["us-1"])
    assert [c.cluster for c in plan.clusters] == ["us-1"]
