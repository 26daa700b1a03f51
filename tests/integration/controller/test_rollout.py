"""Canary rollouts on a real cluster: partition steps in order, bake times kept, failed steps stall.

Partitions are recorded from a watch on the StatefulSets; step times are the ones the controller
records in ``status.rollout``. Nothing here measures how fast anything is, only the order of things.
"""

from __future__ import annotations

from typing import Any

import pytest

from syncer.controller.model import API_VERSION, KIND
from syncer.controller.upgrade import parse_time
from syncer.kube import ClusterClient, KubeObject
from tests.integration.controller.kit import (
    Recorder,
    RunningController,
    condition,
    is_ready,
    recording,
    redis_cluster,
)
from tests.support.waiting import eventually

pytestmark = pytest.mark.integration

HOLD = "kwok.syncer.dev/hold-not-ready"


def partitions(recorder: Recorder, name: str) -> list[int]:
    """The partitions a StatefulSet went through, repeats folded."""
    found: list[int] = []
    for obj in recorder.seen:
        if obj["metadata"]["name"] == name:
            value = obj["spec"]["updateStrategy"]["rollingUpdate"]["partition"]
            if not found or found[-1] != value:
                found.append(value)
    return found


def steps(recorder: Recorder, generation: int) -> dict[int, dict[str, Any]]:
    """Per rollout step: the last ``status.rollout`` seen for it."""
    found: dict[int, dict[str, Any]] = {}
    for obj in recorder.seen:
        rollout = (obj.get("status") or {}).get("rollout")
        if rollout and obj["metadata"]["generation"] == generation:
            found[rollout["step"]] = rollout
    return found


def _get(kube: ClusterClient, namespace: str, name: str) -> KubeObject:
    return kube.get(API_VERSION, KIND, name, namespace)


def _ready_at(kube: ClusterClient, namespace: str, name: str, generation: int) -> KubeObject | None:
    obj = _get(kube, namespace, name)
    return obj if is_ready(obj) and obj["metadata"]["generation"] == generation else None


def _edit(kube: ClusterClient, namespace: str, name: str, **spec: Any) -> None:
    live = _get(kube, namespace, name)
    live["spec"].update(spec)
    kube.replace(live)


def _pods(kube: ClusterClient, namespace: str) -> dict[str, KubeObject]:
    return {p["metadata"]["name"]: p for p in kube.list("v1", "Pod", namespace=namespace).items}


def _pod_ready(pod: KubeObject) -> bool:
    return any(
        c["type"] == "Ready" and c["status"] == "True"
        for c in (pod.get("status") or {}).get("conditions") or ()
    )


def test_a_version_change_steps_partitions_down_in_order_and_bakes_each_step(
    kube: ClusterClient, namespace: str, controller: RunningController
) -> None:
    strategy = {"steps": [{"pods": 1, "pause": "2s"}, {"percent": 50, "pause": "2s"}], "stepTimeout": "60s"}
    kube.create(redis_cluster("canary", namespace, shards=2, replicasPerShard=3, rolloutStrategy=strategy))
    eventually("canary Ready", lambda: _ready_at(kube, namespace, "canary", 1), 90)

    with (
        recording(kube, "apps/v1", "StatefulSet", namespace) as sets,
        recording(kube, API_VERSION, KIND, namespace) as clusters,
    ):
        _edit(kube, namespace, "canary", version="7.4")
        done = eventually("canary Ready at version 7.4", lambda: _ready_at(kube, namespace, "canary", 2), 120)

    # Four pods per shard: one pod, then half, then all -- partitions 3, 2, 0 on every shard.
    assert partitions(sets, "canary-shard-0") == [0, 3, 2, 0]
    assert partitions(sets, "canary-shard-1") == [0, 3, 2, 0]
    assert done["status"]["currentVersion"] == "7.4"
    assert done["status"]["rolloutStep"] == 0
    assert done["status"]["rollout"]["phase"] == "Complete"

    # Each step became Ready after it started, and the next step started only after the bake time.
    seen = steps(clusters, 2)
    assert sorted(seen) == [1, 2, 3]
    assert [seen[k]["partition"] for k in (1, 2, 3)] == [3, 2, 0]
    for k in (1, 2):
        ready = parse_time(seen[k]["stepReadyTime"])
        assert ready >= parse_time(seen[k]["stepStartedTime"])
        assert parse_time(seen[k + 1]["stepStartedTime"]) - ready >= 2.0
    # While a step was in progress, the status said so and was not Ready.
    during = [o for o in clusters.seen if (o.get("status") or {}).get("rolloutStep")]
    assert during
    assert all(condition(o, "Ready")["status"] == "False" for o in during)
    assert {condition(o, "Ready")["reason"] for o in during} == {"RolloutInProgress"}
    assert all(p["spec"]["containers"][0]["image"] == "redis:7.4" for p in _pods(kube, namespace).values())
    reasons = [e["reason"] for e in kube.list("v1", "Event", namespace=namespace).items]
    assert {"RolloutStarted", "RolloutStep", "RolloutComplete"} <= set(reasons)


@pytest.mark.parametrize("revert", [True, False], ids=["revert", "hold"])
def test_a_step_whose_pods_never_get_ready_stalls_and_leaves_later_pods_alone(
    kube: ClusterClient, namespace: str, controller: RunningController, revert: bool
) -> None:
    strategy = {
        "steps": [{"pods": 1, "pause": "1s"}, {"percent": 50}],
        "stepTimeout": "5s",
        "revertOnFailure": revert,
    }
    kube.create(redis_cluster("fragile", namespace, shards=2, replicasPerShard=3, rolloutStrategy=strategy))
    eventually("fragile Ready", lambda: _ready_at(kube, namespace, "fragile", 1), 90)
    before = {name: pod["metadata"]["uid"] for name, pod in _pods(kube, namespace).items()}
    assert len(before) == 8

    with recording(kube, "apps/v1", "StatefulSet", namespace) as sets:
        # The new pods carry the kwok label that keeps them NotReady: the canary step must fail.
        _edit(kube, namespace, "fragile", version="7.4", podMetadata={"labels": {HOLD: "true"}})
        stalled = eventually(
            "Stalled",
            lambda: (
                (o := _get(kube, namespace, "fragile"))
                and condition(o, "Stalled").get("status") == "True"
                and o
            ),
            60,
        )
        if revert:
            eventually(
                "every pod back on 7.2 and Ready",
                lambda: (
                    all(
                        _pod_ready(p) and p["spec"]["containers"][0]["image"] == "redis:7.2"
                        for p in _pods(kube, namespace).values()
                    )
                    and len(_pods(kube, namespace)) == 8
                ),
                60,
            )

    stall = condition(stalled, "Stalled")
    assert stall["reason"] == ("RolloutReverted" if revert else "RolloutStepTimeout")
    assert "step 1/3" in stall["message"]
    assert stalled["status"]["observedGeneration"] == 2
    assert condition(stalled, "Ready")["status"] == "False"
    assert condition(stalled, "Reconciling")["status"] == "False"
    for shard in ("fragile-shard-0", "fragile-shard-1"):
        assert partitions(sets, shard) == ([0, 3, 0] if revert else [0, 3])
    pods = _pods(kube, namespace)
    for shard in (0, 1):
        for ordinal in (0, 1, 2):  # below the canary's partition: never touched
            name = f"fragile-shard-{shard}-{ordinal}"
            assert pods[name]["metadata"]["uid"] == before[name]
            assert pods[name]["spec"]["containers"][0]["image"] == "redis:7.2"
        canary = pods[f"fragile-shard-{shard}-3"]
        assert canary["metadata"]["uid"] != before[f"fragile-shard-{shard}-3"]
        assert canary["spec"]["containers"][0]["image"] == ("redis:7.2" if revert else "redis:7.4")
        assert _pod_ready(canary) is revert
    live = _get(kube, namespace, "fragile")
    assert live["status"]["currentVersion"] == "7.2"
    assert live["status"]["targetVersion"] == "7.4"

    # A fixed spec is a new rollout: it goes through and the cluster is Ready on the new version.
    _edit(kube, namespace, "fragile", podMetadata={"labels": {"team": "cache"}})
    done = eventually("fragile Ready at generation 3", lambda: _ready_at(kube, namespace, "fragile", 3), 120)
    assert done["status"]["currentVersion"] == "7.4"
    assert condition(done, "Stalled")["status"] == "False"
