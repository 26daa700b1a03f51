"""The controller on a real cluster: children, honest Ready, scaling, deletion with volume retention."""

from __future__ import annotations

import pytest

from syncer.controller.model import API_VERSION, FINALIZER, KIND
from syncer.errors import NotFound
from syncer.kube import ApplyOptions, ClusterClient, KubeObject
from tests.integration.controller.kit import RunningController, condition, is_ready, redis_cluster
from tests.support.waiting import eventually

pytestmark = pytest.mark.integration

HOLD = "kwok.syncer.dev/hold-not-ready"
APPLY = ApplyOptions(field_manager="syncer-tests")


def _get(kube: ClusterClient, namespace: str, name: str) -> KubeObject:
    return kube.get(API_VERSION, KIND, name, namespace)


def _ready(kube: ClusterClient, namespace: str, name: str) -> KubeObject | None:
    obj = _get(kube, namespace, name)
    return obj if is_ready(obj) else None


def _when(kube: ClusterClient, namespace: str, name: str, kind: str, status: str) -> KubeObject | None:
    obj = _get(kube, namespace, name)
    return obj if condition(obj, kind).get("status") == status else None


def _owned(kube: ClusterClient, namespace: str, api_version: str, kind: str, uid: str) -> list[KubeObject]:
    items = kube.list(api_version, kind, namespace=namespace).items
    return [
        i
        for i in items
        if any(r["uid"] == uid and r.get("controller") for r in i["metadata"].get("ownerReferences") or ())
    ]


def _names(objs: list[KubeObject]) -> set[str]:
    return {o["metadata"]["name"] for o in objs}


def test_create_builds_owned_children_and_reports_ready_then_not_ready_when_pods_fail(
    kube: ClusterClient, namespace: str, controller: RunningController
) -> None:
    kube.create(redis_cluster("cache", namespace, shards=2, replicasPerShard=1))
    obj = eventually("cache to be Ready", lambda: _ready(kube, namespace, "cache"), 90)
    uid = obj["metadata"]["uid"]

    assert obj["status"]["observedGeneration"] == obj["metadata"]["generation"] == 1
    assert FINALIZER in obj["metadata"]["finalizers"]
    assert [s["ready"] for s in obj["status"]["shards"]] == [True, True]
    assert obj["status"]["currentVersion"] == obj["status"]["targetVersion"] == "7.2"
    assert condition(obj, "Reconciling")["status"] == "False"
    assert condition(obj, "Stalled")["status"] == "False"
    sets = _owned(kube, namespace, "apps/v1", "StatefulSet", uid)
    assert _names(sets) == {"cache-shard-0", "cache-shard-1"}
    assert all(s["spec"]["replicas"] == 2 for s in sets)
    assert _names(_owned(kube, namespace, "v1", "Service", uid)) == {"cache", "cache-headless"}
    config = _owned(kube, namespace, "v1", "ConfigMap", uid)
    assert _names(config) == {"cache-config"}
    assert "cluster-enabled yes" in config[0]["data"]["redis.conf"]
    pdbs = _owned(kube, namespace, "policy/v1", "PodDisruptionBudget", uid)
    assert _names(pdbs) == {"cache-shard-0", "cache-shard-1"}
    assert all(p["spec"]["maxUnavailable"] == 1 for p in pdbs)
    # The controller never writes the spec: it manages only its finalizer on the object itself.
    for entry in obj["metadata"]["managedFields"]:
        if entry["manager"] == "syncer-controller" and entry.get("subresource") != "status":
            assert set(entry["fieldsV1"]) == {"f:metadata"}, entry
    assert eventually(
        "the ready gauge",
        lambda: controller.metric("rediscluster_ready", {"namespace": namespace, "name": "cache"}) == 1.0,
        10,
    )
    assert (
        controller.metric("rediscluster_reconcile_total", {"phase": "sync", "result": "success"}) or 0
    ) >= 1

    # Pods that stop being Ready (kwok turns labelled pods NotReady) turn Ready False.
    pods = kube.list("v1", "Pod", namespace=namespace, label_selector="redis.syncer.dev/shard=1").items
    assert len(pods) == 2
    for pod in pods:
        kube.apply(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {
                    "name": pod["metadata"]["name"],
                    "namespace": namespace,
                    "labels": {HOLD: "true"},
                },
            },
            APPLY,
        )

    def both_down() -> KubeObject | None:
        # The pods turn NotReady one after the other: wait until the status has seen both.
        obj = _when(kube, namespace, "cache", "Ready", "False")
        return obj if obj and "shard 1: 0/2 pods Ready" in condition(obj, "Ready")["message"] else None

    broken = eventually("Ready to turn False with both pods of shard 1 down", both_down, 60)
    assert condition(broken, "Ready")["reason"] == "ShardsNotReady"
    assert "shard 1: 0/2 pods Ready" in condition(broken, "Ready")["message"]
    assert condition(broken, "Reconciling")["status"] == "True"
    assert [s["ready"] for s in broken["status"]["shards"]] == [True, False]
    # Replaced pods come back Ready, and so does the cluster.
    for pod in pods:
        kube.delete("v1", "Pod", pod["metadata"]["name"], namespace)
    eventually("cache to be Ready again", lambda: _ready(kube, namespace, "cache"), 60)


def test_scaling_shards_and_replicas_moves_children_and_status(
    kube: ClusterClient, namespace: str, controller: RunningController
) -> None:
    kube.create(redis_cluster("scaled", namespace, shards=1, replicasPerShard=1))
    eventually("scaled to be Ready", lambda: _ready(kube, namespace, "scaled"), 90)

    live = _get(kube, namespace, "scaled")
    live["spec"].update(shards=3, replicasPerShard=2)
    kube.replace(live)
    obj = eventually(
        "scaled to be Ready at generation 2",
        lambda: (o := _ready(kube, namespace, "scaled")) and o["metadata"]["generation"] == 2 and o,
        90,
    )
    uid = obj["metadata"]["uid"]
    sets = _owned(kube, namespace, "apps/v1", "StatefulSet", uid)
    assert sorted((s["metadata"]["name"], s["spec"]["replicas"]) for s in sets) == [
        ("scaled-shard-0", 3), ("scaled-shard-1", 3), ("scaled-shard-2", 3)
    ]  # fmt: skip
    assert [(s["index"], s["readyReplicas"], s["ready"]) for s in obj["status"]["shards"]] == [
        (0, 3, True), (1, 3, True), (2, 3, True)
    ]  # fmt: skip
    assert len(_owned(kube, namespace, "policy/v1", "PodDisruptionBudget", uid)) == 3

    live = _get(kube, namespace, "scaled")
    live["spec"]["shards"] = 2
    kube.replace(live)
    obj = eventually(
        "scaled to be Ready at generation 3",
        lambda: (o := _ready(kube, namespace, "scaled")) and o["metadata"]["generation"] == 3 and o,
        90,
    )
    assert len(obj["status"]["shards"]) == 2
    eventually(
        "shard 2's StatefulSet to be deleted",
        lambda: (
            _names(_owned(kube, namespace, "apps/v1", "StatefulSet", uid))
            == {"scaled-shard-0", "scaled-shard-1"}
        ),
        30,
    )
    assert _names(_owned(kube, namespace, "policy/v1", "PodDisruptionBudget", uid)) == {
        "scaled-shard-0",
        "scaled-shard-1",
    }


def _claims(kube: ClusterClient, namespace: str, name: str) -> list[KubeObject]:
    selector = f"app.kubernetes.io/instance={name}"
    return kube.list("v1", "PersistentVolumeClaim", namespace=namespace, label_selector=selector).items


def _gone(kube: ClusterClient, namespace: str, name: str) -> bool:
    try:
        _get(kube, namespace, name)
    except NotFound:
        return True
    return False


def test_delete_applies_the_volume_retention_policy_and_children_are_collected(
    kube: ClusterClient, namespace: str, controller: RunningController
) -> None:
    for name, policy in (("keep", "Retain"), ("drop", "Delete")):
        persistence = {"enabled": True, "size": "1Gi", "retentionPolicy": policy}
        kube.create(redis_cluster(name, namespace, shards=1, replicasPerShard=1, persistence=persistence))
    for name in ("keep", "drop"):
        eventually(f"{name}'s volume claims", lambda n=name: len(_claims(kube, namespace, n)) == 2, 60)
        eventually(
            "finalizer",
            lambda n=name: FINALIZER in _get(kube, namespace, n)["metadata"].get("finalizers", ()),
            30,
        )
    uids = {name: _get(kube, namespace, name)["metadata"]["uid"] for name in ("keep", "drop")}

    for name in ("keep", "drop"):
        kube.delete(API_VERSION, KIND, name, namespace)
    for name in ("keep", "drop"):
        eventually(f"{name} to be deleted", lambda n=name: _gone(kube, namespace, n), 60)

    # Delete: every claim is deleted (it may linger Terminating while a pod still uses it).
    assert all(c["metadata"].get("deletionTimestamp") for c in _claims(kube, namespace, "drop"))
    # Retain: the claims stay, untouched.
    kept = _claims(kube, namespace, "keep")
    assert len(kept) == 2
    assert not any(c["metadata"].get("deletionTimestamp") for c in kept)
    for name, uid in uids.items():
        for api_version, kind in (
            ("apps/v1", "StatefulSet"),
            ("v1", "Service"),
            ("v1", "ConfigMap"),
            ("policy/v1", "PodDisruptionBudget"),
        ):
            eventually(
                f"{name}'s {kind} to be collected",
                lambda a=api_version, k=kind, u=uid: not _owned(kube, namespace, a, k, u),
                60,
            )
    eventually("drop's claims to be gone", lambda: not _claims(kube, namespace, "drop"), 60)
    events = kube.list("v1", "Event", namespace=namespace).items
    reasons = {(e["involvedObject"]["name"], e["reason"]) for e in events}
    assert ("drop", "VolumesDeleted") in reasons
    assert ("keep", "VolumesRetained") in reasons


def test_a_missing_secret_stalls_until_it_appears(
    kube: ClusterClient, namespace: str, controller: RunningController
) -> None:
    kube.create(
        redis_cluster(
            "locked", namespace, shards=1, replicasPerShard=0, auth={"secretRef": {"name": "redis-auth"}}
        )
    )
    stalled = eventually("Stalled", lambda: _when(kube, namespace, "locked", "Stalled", "True"), 30)
    assert condition(stalled, "Stalled")["reason"] == "SecretNotFound"
    assert "redis-auth" in condition(stalled, "Stalled")["message"]
    assert condition(stalled, "Ready")["status"] == "False"
    assert stalled["status"]["observedGeneration"] == 1

    kube.create(
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "redis-auth", "namespace": namespace},
            "stringData": {"password": "s3cret"},
        }
    )
    obj = eventually("Ready once the Secret exists", lambda: _ready(kube, namespace, "locked"), 60)
    assert condition(obj, "Stalled")["status"] == "False"
    (sts,) = kube.list("apps/v1", "StatefulSet", namespace=namespace).items
    env = sts["spec"]["template"]["spec"]["containers"][0]["env"]
    assert {
        "name": "REDIS_PASSWORD",
        "valueFrom": {"secretKeyRef": {"name": "redis-auth", "key": "password"}},
    } in env


def test_a_reserved_redis_directive_stalls_with_the_reason(
    kube: ClusterClient, namespace: str, controller: RunningController
) -> None:
    kube.create(redis_cluster("odd", namespace, shards=1, redisConfig={"port": "7000"}))
    stalled = eventually("Stalled", lambda: _when(kube, namespace, "odd", "Stalled", "True"), 30)
    assert condition(stalled, "Stalled")["reason"] == "InvalidSpec"
    assert "'port'" in condition(stalled, "Stalled")["message"]
    assert not kube.list("apps/v1", "StatefulSet", namespace=namespace).items
