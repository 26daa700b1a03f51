"""The apply executor against a real apiserver, with hand-made plans (the plan stage has its own tests)."""

from __future__ import annotations

from typing import Any

import pytest

from syncer.apply import ApplyPolicy, ClusterApplier, ConflictPolicy
from syncer.domain import Action, Change, ClusterManifests, ClusterPlan, Manifest, ObjectKey
from syncer.domain.changeset import EntryOutcome
from syncer.errors import Location, NotFound
from syncer.kube import ApplyOptions, ClusterClient

pytestmark = pytest.mark.integration


def manifest(cluster: str, body: dict[str, Any]) -> Manifest:
    meta = body["metadata"]
    group = body["apiVersion"].rpartition("/")[0]
    key = ObjectKey(cluster, group, body["kind"], meta.get("namespace", ""), meta["name"])
    return Manifest(key, body["apiVersion"], body, Location("test.yaml", 1, 1))


def configmap(namespace: str, name: str, **data: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace},
        "data": data,
    }


def plan_of(cluster: str, *changes: tuple[Manifest, Action], managers: tuple[str, ...] = ()) -> ClusterPlan:
    return ClusterPlan(cluster, tuple(Change(m.key, m.api_version, a, managers=managers) for m, a in changes))


def test_a_namespace_is_created_before_the_objects_in_it(kube: ClusterClient, namespace: str) -> None:
    fresh = f"{namespace}-x"
    ns = manifest(kube.cluster, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": fresh}})
    cm = manifest(kube.cluster, configmap(fresh, "settings", a="1"))
    try:
        result = ClusterApplier(kube).apply(
            ClusterManifests.of(kube.cluster, [ns, cm]),
            plan_of(kube.cluster, (cm, Action.CREATE), (ns, Action.CREATE)),
            "r1",
        )
        assert result.ok, result.error
        assert [(e.key.kind, e.outcome) for e in result.entries] == [
            ("Namespace", EntryOutcome.APPLIED),
            ("ConfigMap", EntryOutcome.APPLIED),
        ]
        assert all(e.uid for e in result.entries)
        live = kube.get("v1", "ConfigMap", "settings", fresh)
        assert live["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "syncer"
        assert "syncer.dev/applied-fields" in live["metadata"]["annotations"]
        assert result.counts() == {"create": 2}
    finally:
        kube.delete("v1", "Namespace", fresh)


def test_unchanged_objects_are_not_written(kube: ClusterClient, namespace: str) -> None:
    cm = manifest(kube.cluster, configmap(namespace, "same", a="1"))
    result = ClusterApplier(kube).apply(
        ClusterManifests.of(kube.cluster, [cm]), plan_of(kube.cluster, (cm, Action.UNCHANGED)), "r1"
    )
    assert result.ok
    assert result.writes == 0
    with pytest.raises(NotFound):
        kube.get("v1", "ConfigMap", "same", namespace)


def test_a_planned_conflict_stops_the_cluster_before_any_write(kube: ClusterClient, namespace: str) -> None:
    kube.apply(configmap(namespace, "shared", a="theirs"), ApplyOptions(field_manager="helm"))
    mine = manifest(kube.cluster, configmap(namespace, "mine", b="1"))
    shared = manifest(kube.cluster, configmap(namespace, "shared", a="ours"))
    plan = plan_of(kube.cluster, (mine, Action.CREATE), (shared, Action.CONFLICT), managers=("helm",))
    result = ClusterApplier(kube).apply(ClusterManifests.of(kube.cluster, [mine, shared]), plan, "r1")
    assert not result.ok
    assert "conflicts (policy report)" in result.error
    assert "owned by helm" in result.error
    with pytest.raises(NotFound):
        kube.get("v1", "ConfigMap", "mine", namespace)
    assert kube.get("v1", "ConfigMap", "shared", namespace)["data"] == {"a": "theirs"}

    forced = ClusterApplier(kube, ApplyPolicy(conflicts=ConflictPolicy.FORCE)).apply(
        ClusterManifests.of(kube.cluster, [mine, shared]), plan, "r1"
    )
    assert forced.ok, forced.error
    assert kube.get("v1", "ConfigMap", "shared", namespace)["data"] == {"a": "ours"}


def test_a_conflict_found_only_at_apply_time_names_the_manager(kube: ClusterClient, namespace: str) -> None:
    kube.apply(configmap(namespace, "raced", a="theirs"), ApplyOptions(field_manager="kubectl-edit"))
    raced = manifest(kube.cluster, configmap(namespace, "raced", a="ours"))
    result = ClusterApplier(kube).apply(
        ClusterManifests.of(kube.cluster, [raced]), plan_of(kube.cluster, (raced, Action.UPDATE)), "r1"
    )
    assert not result.ok
    assert result.entries[0].action is Action.CONFLICT
    assert "owned by kubectl-edit" in result.entries[0].message


def test_drift_is_healed_by_taking_the_field_back(kube: ClusterClient, namespace: str) -> None:
    cm = manifest(kube.cluster, configmap(namespace, "drifted", a="1"))
    applier = ClusterApplier(kube)
    assert applier.apply(
        ClusterManifests.of(kube.cluster, [cm]), plan_of(kube.cluster, (cm, Action.CREATE)), "r1"
    ).ok
    kube.apply(configmap(namespace, "drifted", a="2"), ApplyOptions(field_manager="hotfix", force=True))
    healed = applier.apply(
        ClusterManifests.of(kube.cluster, [cm]), plan_of(kube.cluster, (cm, Action.DRIFT)), "r1"
    )
    assert healed.ok, healed.error
    assert kube.get("v1", "ConfigMap", "drifted", namespace)["data"] == {"a": "1"}


def test_prune_respects_the_opt_out_and_our_label(kube: ClusterClient, namespace: str) -> None:
    labels = {"app.kubernetes.io/managed-by": "syncer"}
    for name, notes in (("old", {}), ("keep", {"syncer.dev/prune": "disabled"})):
        kube.apply(
            {
                **configmap(namespace, name),
                "metadata": {
                    "name": name,
                    "namespace": namespace,
                    "labels": labels,
                    "annotations": notes,
                },
            }
        )
    kube.apply(configmap(namespace, "foreign"))
    hand_made = {
        **configmap(namespace, "hand-made"),
        "metadata": {"name": "hand-made", "namespace": namespace},
    }
    hand_made["metadata"]["labels"] = labels
    kube.apply(hand_made, ApplyOptions(field_manager="kubectl-client-side-apply"))
    names = ("old", "keep", "foreign", "missing", "hand-made")
    gone = [manifest(kube.cluster, configmap(namespace, n)) for n in names]
    result = ClusterApplier(kube).apply(
        ClusterManifests.of(kube.cluster, []), plan_of(kube.cluster, *[(m, Action.PRUNE) for m in gone]), "r2"
    )
    assert result.ok, result.error
    outcomes = {e.key.name: (e.outcome, e.message) for e in result.entries}
    assert outcomes["old"] == (EntryOutcome.APPLIED, "")
    assert outcomes["keep"] == (EntryOutcome.SKIPPED, "kept: prune disabled (syncer.dev/prune: disabled)")
    assert outcomes["foreign"] == (EntryOutcome.SKIPPED, "kept: no longer labelled as managed by syncer")
    assert outcomes["missing"] == (EntryOutcome.SKIPPED, "already gone")
    assert outcomes["hand-made"] == (
        EntryOutcome.SKIPPED,
        "kept: no proof syncer applied it (no server-side apply by 'syncer')",
    )
    kube.get("v1", "ConfigMap", "hand-made", namespace)
    with pytest.raises(NotFound):
        kube.get("v1", "ConfigMap", "old", namespace)
    kube.get("v1", "ConfigMap", "keep", namespace)


def test_an_invalid_object_fails_its_stage_and_later_stages_are_not_attempted(
    kube: ClusterClient, namespace: str
) -> None:
    bad = manifest(kube.cluster, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "Bad_Name"}})
    later = manifest(kube.cluster, configmap(namespace, "zz-later"))
    result = ClusterApplier(kube).apply(
        ClusterManifests.of(kube.cluster, [bad, later]),
        plan_of(kube.cluster, (later, Action.CREATE), (bad, Action.CREATE)),
        "r1",
    )
    assert not result.ok
    assert [e.key.name for e in result.entries] == ["Bad_Name"]
    assert "metadata.name" in result.entries[0].message
    assert result.error.startswith("Namespace/Bad_Name: ")
    with pytest.raises(NotFound):
        kube.get("v1", "ConfigMap", "zz-later", namespace)


def test_objects_of_one_stage_are_applied_together(kube: ClusterClient, namespace: str) -> None:
    many = [manifest(kube.cluster, configmap(namespace, f"cm-{i:02d}", i=str(i))) for i in range(24)]
    result = ClusterApplier(kube).apply(
        ClusterManifests.of(kube.cluster, many),
        plan_of(kube.cluster, *[(m, Action.CREATE) for m in many]),
        "r1",
    )
    assert result.ok, result.error
    assert [e.key.name for e in result.entries] == [f"cm-{i:02d}" for i in range(24)]
    assert result.counts() == {"create": 24}
