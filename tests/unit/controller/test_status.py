from __future__ import annotations

from typing import Any

from syncer.controller.model import ClusterSpec
from syncer.controller.status import (
    Observed,
    ShardState,
    StallCause,
    TopologyVerdict,
    compute,
    transitions,
    with_outage,
)
from syncer.controller.upgrade import Phase, RolloutState

SPEC = ClusterSpec(
    name="cache", namespace="ns", uid="u", generation=4, version="7.4", shards=2, replicas_per_shard=1
)


def good(index: int, version: str = "7.4") -> ShardState:
    return ShardState(index, True, True, 2, 2, 2, True, version)


def conditions(status: dict[str, Any]) -> dict[str, tuple[str, str]]:
    return {c["type"]: (c["status"], c["reason"]) for c in status["conditions"]}


def test_ready_when_every_shard_is_whole_on_one_revision() -> None:
    status = compute(Observed(SPEC, [good(0), good(1)]), {}, 100.0)
    assert conditions(status) == {
        "Ready": ("True", "AllShardsReady"),
        "Reconciling": ("False", "Reconciled"),
        "Stalled": ("False", "NotStalled"),
    }
    assert status["observedGeneration"] == 4
    assert all(c["observedGeneration"] == 4 for c in status["conditions"])
    assert status["currentVersion"] == status["targetVersion"] == "7.4"
    assert [s["ready"] for s in status["shards"]] == [True, True]
    assert status["rolloutStep"] == 0


def test_not_ready_for_each_way_a_shard_can_fall_short() -> None:
    short = {
        "missing": ShardState(1),
        "unobserved": ShardState(1, True, False, 2, 2, 2, True, "7.4"),
        "pod down": ShardState(1, True, True, 2, 1, 2, True, "7.4"),
        "two revisions": ShardState(1, True, True, 2, 2, 1, False, "7.4"),
        "scaling": ShardState(1, True, True, 1, 1, 1, True, "7.4"),
    }
    for why, shard in short.items():
        status = compute(Observed(SPEC, [good(0), shard]), {}, 100.0)
        assert conditions(status)["Ready"] == ("False", "ShardsNotReady"), why
        assert conditions(status)["Reconciling"] == ("True", "ShardsNotReady"), why
        assert "shard 1" in status["conditions"][0]["message"], why
        assert [s["ready"] for s in status["shards"]] == [True, False], why


def test_an_unhealthy_topology_keeps_ready_false() -> None:
    observed = Observed(SPEC, [good(0), good(1)], topology=TopologyVerdict(False, "slots 0-99 not served"))
    status = compute(observed, {}, 100.0)
    assert conditions(status)["Ready"] == ("False", "TopologyUnhealthy")
    assert status["conditions"][0]["message"] == "slots 0-99 not served"


def test_a_rollout_in_progress_is_reconciling_and_reports_its_step() -> None:
    rollout = RolloutState("h", Phase.BAKING, 1, 3, 1, 10.0, 20.0)
    status = compute(
        Observed(SPEC, [good(0, "7.2"), good(1, "7.2")], rollout), {"currentVersion": "7.2"}, 30.0
    )
    assert conditions(status)["Ready"] == ("False", "RolloutInProgress")
    assert conditions(status)["Reconciling"] == ("True", "RolloutInProgress")
    assert status["rolloutStep"] == 2
    assert status["rollout"]["phase"] == "Baking"
    assert (status["currentVersion"], status["targetVersion"]) == ("7.2", "7.4")


def test_a_failed_rollout_is_stalled_not_reconciling() -> None:
    for phase, reason in ((Phase.REVERTED, "RolloutReverted"), (Phase.FAILED, "RolloutStepTimeout")):
        rollout = RolloutState("h", phase, 0, 3, 3, 10.0, None, "step 1/3 timed out")
        status = compute(Observed(SPEC, [good(0), good(1)], rollout), {}, 30.0)
        assert conditions(status) == {
            "Ready": ("False", reason),
            "Reconciling": ("False", "Stalled"),
            "Stalled": ("True", reason),
        }
        assert status["conditions"][2]["message"] == "step 1/3 timed out"
        assert status["rolloutStep"] == 0


def test_a_problem_stalls_with_its_reason() -> None:
    status = compute(
        Observed(SPEC, [], problem=StallCause("SecretNotFound", "Secret ns/a does not exist")), {}, 1.0
    )
    assert conditions(status)["Stalled"] == ("True", "SecretNotFound")
    assert conditions(status)["Ready"] == ("False", "SecretNotFound")


def test_transition_times_move_only_when_a_condition_changes() -> None:
    first = compute(Observed(SPEC, [good(0), good(1)]), {}, 100.0)
    same = compute(Observed(SPEC, [good(0), good(1)]), first, 200.0)
    assert same["conditions"] == first["conditions"]
    assert transitions(first, same) == []
    broken = compute(Observed(SPEC, [good(0), ShardState(1)]), same, 300.0)
    ready = broken["conditions"][0]
    assert ready["lastTransitionTime"] == "1970-01-01T00:05:00Z"
    assert broken["conditions"][2]["lastTransitionTime"] == first["conditions"][2]["lastTransitionTime"]
    assert [c["type"] for c in transitions(same, broken)] == ["Ready", "Reconciling"]


def test_current_version_stays_until_every_shard_runs_one_revision() -> None:
    mixed = [good(0, "7.4"), ShardState(1, True, True, 2, 2, 1, False, "7.4")]
    status = compute(Observed(SPEC, mixed), {"currentVersion": "7.2"}, 1.0)
    assert status["currentVersion"] == "7.2"


def test_the_topology_reason_and_shard_masters_are_reported() -> None:
    verdict = TopologyVerdict(False, "slot 7 is open", "SlotsOpen")
    status = compute(Observed(SPEC, [good(0), good(1)], topology=verdict), {}, 100.0)
    assert conditions(status)["Ready"] == ("False", "SlotsOpen")
    healthy = TopologyVerdict(True, "cluster_state ok", "Healthy")
    masters = {0: "cache-shard-0-1", 1: "cache-shard-1-0"}
    status = compute(Observed(SPEC, [good(0), good(1)], topology=healthy, masters=masters), {}, 100.0)
    assert conditions(status)["Ready"][0] == "True"
    assert "cluster_state ok" in status["conditions"][0]["message"]
    assert [s.get("master") for s in status["shards"]] == ["cache-shard-0-1", "cache-shard-1-0"]


def test_an_outage_seen_between_reconciles_comes_before_pod_readiness_and_the_last_topology_verdict() -> None:
    outage = TopologyVerdict(False, "cluster_state:fail on 10.0.0.2:6379", "ClusterStateFail")
    for shards in ([good(0), good(1)], [good(0), ShardState(1, True, True, 2, 1, 2, True, "7.4")]):
        healthy = TopologyVerdict(True, "cluster_state ok", "Healthy")
        status = compute(Observed(SPEC, shards, topology=healthy, outage=outage), {}, 100.0)
        assert conditions(status)["Ready"] == ("False", "ClusterStateFail")
        assert conditions(status)["Reconciling"] == ("True", "ClusterStateFail")
        assert status["conditions"][0]["message"] == outage.message
        assert status["observedGeneration"] == 4


def test_an_outage_told_between_reconciles_changes_only_ready_and_reconciling() -> None:
    outage = TopologyVerdict(
        False, "master 10.0.0.2:6379 serving 8192 slot(s) does not answer", "MasterUnreachable"
    )
    previous = compute(Observed(SPEC, [good(0), good(1)], masters={0: "cache-shard-0-0"}), {}, 100.0)
    told = with_outage(previous, outage, 130.0)
    assert told is not None
    assert conditions(told) == {
        "Ready": ("False", "MasterUnreachable"),
        "Reconciling": ("True", "MasterUnreachable"),
        "Stalled": ("False", "NotStalled"),
    }
    assert {k: v for k, v in told.items() if k != "conditions"} == {
        k: v for k, v in previous.items() if k != "conditions"
    }
    assert told["conditions"][0]["lastTransitionTime"] != previous["conditions"][0]["lastTransitionTime"]
    assert told["conditions"][2]["lastTransitionTime"] == previous["conditions"][2]["lastTransitionTime"]
    stalled = compute(Observed(SPEC, [good(0), good(1)], problem=StallCause("InvalidSpec", "bad")), {}, 100.0)
    assert with_outage(stalled, outage, 130.0) is None
    assert with_outage({}, outage, 130.0) is None
