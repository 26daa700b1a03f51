"""The rules the diff shares with the sync: pruning needs proof, blocked clusters, creates checked by
the server with the namespace rule, adoption, type-strict comparison, secrets masked with a digest."""

from __future__ import annotations

from typing import Any

import pytest

from syncer.domain import Action, Inventory, Manifest, ObjectKey
from syncer.domain.applied import InventorySource, applied_body
from syncer.domain.rules import ConflictPolicy, SyncRules, blocked_reason, prune_refusal
from syncer.domain.secrets import SensitiveFields, digest, is_secret, redact, secret_values
from syncer.errors import Location
from syncer.plan import ClusterState, PlanOptions, Prediction, dry_runs_needed, plan_cluster
from syncer.plan.classify import CHECK_NAMESPACE
from syncer.plan.fields import same
from tests.unit.plan.test_golden import FIXTURES, load_case

CLUSTER = "c1"
RC = "redis.syncer.dev/v1alpha1"


def _syncer_applied(name: str, namespace: str = "ns", **meta: Any) -> dict[str, Any]:
    return {
        "apiVersion": RC,
        "kind": "RedisCluster",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {"app.kubernetes.io/managed-by": "syncer"},
            "managedFields": [
                {"manager": "syncer", "operation": "Apply", "fieldsV1": {"f:spec": {"f:version": {}}}}
            ],
            **meta,
        },
        "spec": {"version": "7.2"},
    }


def _key(
    name: str, namespace: str = "ns", kind: str = "RedisCluster", group: str = "redis.syncer.dev"
) -> ObjectKey:
    return ObjectKey(CLUSTER, group, kind, namespace, name)


def _manifest(body: dict[str, Any]) -> Manifest:
    meta = body["metadata"]
    group = body["apiVersion"].rpartition("/")[0]
    key = ObjectKey(CLUSTER, group, body["kind"], meta.get("namespace", ""), meta["name"])
    return Manifest(key, body["apiVersion"], body, Location("test"))


def test_prune_needs_the_label_no_opt_out_and_a_server_side_apply_by_syncer() -> None:
    rules = SyncRules()
    assert prune_refusal(_syncer_applied("a"), rules) == ""
    opted = _syncer_applied("a", annotations={"syncer.dev/prune": "disabled"})
    assert prune_refusal(opted, rules) == "kept: prune disabled (syncer.dev/prune: disabled)"
    unlabelled = _syncer_applied("a", labels={})
    assert prune_refusal(unlabelled, rules) == "kept: no longer labelled as managed by syncer"
    hand_made = _syncer_applied(
        "a", managedFields=[{"manager": "kubectl-client-side-apply", "operation": "Update"}]
    )
    assert "no proof syncer applied it" in prune_refusal(hand_made, rules)
    by_update = _syncer_applied("a", managedFields=[{"manager": "syncer", "operation": "Update"}])
    assert "no proof" in prune_refusal(by_update, rules)
    assert prune_refusal(_syncer_applied("a"), SyncRules(prune=False)) == "kept: pruning is turned off"


@pytest.mark.parametrize("source", [InventorySource.RECORDED, InventorySource.REBUILT])
def test_an_inventory_never_widens_the_prune_beyond_proven_ownership(source: InventorySource) -> None:
    ours = _syncer_applied("ours")
    hand_made = _syncer_applied("hand-made", managedFields=[{"manager": "kubectl", "operation": "Update"}])
    live = {_key("ours"): ours, _key("hand-made"): hand_made}
    inventory = Inventory.of(CLUSTER, live, "r1", source)
    plan = plan_cluster(ClusterState(CLUSTER, (), live, inventory))
    actions = {c.key.name: (c.action, c.message) for c in plan.changes}
    assert actions["ours"][0] is Action.PRUNE
    assert actions["hand-made"][0] is Action.KEEP
    assert ("rebuilt" in actions["ours"][1]) is (source is InventorySource.REBUILT)


def test_without_a_recorded_state_nothing_is_pruned_and_leftovers_are_shown_as_kept() -> None:
    live = {_key("ours"): _syncer_applied("ours")}
    plan = plan_cluster(ClusterState(CLUSTER, (), live, Inventory.missing(CLUSTER)))
    (change,) = plan.changes
    assert change.action is Action.KEEP
    assert "no recorded sync state" in change.message
    assert not plan.has_changes
    assert plan.inventory == "missing"


def test_a_conflict_under_report_blocks_the_cluster_and_under_force_is_dry_run_with_force() -> None:
    state, _ = load_case(FIXTURES / "conflict")
    plan = plan_cluster(state)
    assert plan.blocked.startswith("conflicts (policy report)")
    assert "ops-tool" in plan.blocked
    assert dry_runs_needed(state) == ()
    force = PlanOptions(rules=SyncRules(conflicts=ConflictPolicy.FORCE))
    (request,) = dry_runs_needed(state, force)
    assert request.force
    assert plan_cluster(state, {}, force).blocked == ""


def test_drift_blocks_only_when_repair_is_off() -> None:
    state, _ = load_case(FIXTURES / "drift")
    assert plan_cluster(state).blocked == ""
    (request,) = dry_runs_needed(state)
    assert request.force
    off = PlanOptions(rules=SyncRules(heal_drift=False))
    assert dry_runs_needed(state, off) == ()
    assert plan_cluster(state, {}, off).blocked.startswith("drift (repair off)")


def test_creates_into_a_namespace_the_same_sync_creates_are_checked_by_the_server_elsewhere() -> None:
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "fresh"}}
    inside = {"apiVersion": RC, "kind": "RedisCluster", "metadata": {"name": "a", "namespace": "fresh"}}
    refused = {"apiVersion": RC, "kind": "RedisCluster", "metadata": {"name": "r", "namespace": "fresh"}}
    elsewhere = {"apiVersion": RC, "kind": "RedisCluster", "metadata": {"name": "b", "namespace": "nowhere"}}
    desired = tuple(_manifest(b) for b in (namespace, inside, refused, elsewhere))
    state = ClusterState(CLUSTER, desired, {}, Inventory.of(CLUSTER, ()))
    needed = {r.key.name: r for r in dry_runs_needed(state)}
    assert set(needed) == {"fresh", "a", "r", "b"}
    assert all(r.create for r in needed.values())
    assert (needed["a"].elsewhere, needed["a"].body["metadata"]["namespace"]) == (CHECK_NAMESPACE, "default")
    assert needed["a"].key.namespace == "fresh"
    assert not needed["b"].elsewhere
    answers = {
        needed["fresh"].key: Prediction(needed["fresh"].key, predicted=namespace),
        needed["a"].key: Prediction(needed["a"].key),
        needed["r"].key: Prediction(needed["r"].key, error="refused: spec.shards: Invalid value"),
        needed["b"].key: Prediction(needed["b"].key, missing_namespace="nowhere"),
    }
    plan = plan_cluster(state, answers)
    got = {c.key.name: (c.action, c.message) for c in plan.changes}
    assert got["fresh"] == (Action.CREATE, "")
    assert got["a"] == (Action.CREATE, "namespace fresh is created first by this sync")
    assert got["r"][0] is Action.ERROR
    assert "spec.shards: Invalid value" in got["r"][1]
    assert "checked in namespace default" in got["r"][1]
    assert got["b"] == (Action.ERROR, "namespace nowhere does not exist and this sync does not create it")
    assert plan.has_errors
    assert plan.blocked


def test_a_create_is_shown_once_as_the_object_not_leaf_by_leaf() -> None:
    body = {
        "apiVersion": RC,
        "kind": "RedisCluster",
        "metadata": {"name": "a", "namespace": "ns"},
        "spec": {"version": "7.2"},
    }
    state = ClusterState(CLUSTER, (_manifest(body),), {}, Inventory.of(CLUSTER, ()))
    (change,) = plan_cluster(state).changes
    assert change.fields == ()
    assert change.after is not None
    assert change.after["spec"] == {"version": "7.2"}
    assert change.after["metadata"]["labels"] == {"app.kubernetes.io/managed-by": "syncer"}
    assert "annotations" not in change.after["metadata"]


def test_comparison_is_type_strict() -> None:
    assert not same(True, 1)
    assert not same(1, "1")
    assert not same([True], [1])
    assert not same({"a": 0}, {"a": False})
    assert same(1, 1.0)
    assert same({"a": [1, {"b": "x"}]}, {"a": [1, {"b": "x"}]})
    assert not same(None, {})


def test_redis_password_directives_and_schema_marked_fields_are_secret() -> None:
    for directive in ("requirepass", "masterauth", "user"):
        assert is_secret("RedisCluster", ("spec", "redisConfig", directive))
    assert not is_secret("RedisCluster", ("spec", "redisConfig", "maxmemory"))
    marked = SensitiveFields({"Widget": (("spec", "keys", "*", "value"),)})
    assert is_secret("Widget", ("spec", "keys", "0", "value"), marked)
    assert not is_secret("Widget", ("spec", "keys", "0", "name"), marked)


def test_a_changed_redis_password_is_masked_with_a_digest_and_redacted_from_messages() -> None:
    state, predicted = load_case(FIXTURES / "update")
    (manifest,) = state.desired
    (live,) = state.live.values()
    body = {**manifest.body, "spec": {**manifest.body["spec"], "redisConfig": {"requirepass": "hunter22"}}}
    changed = ClusterState(CLUSTER, (_manifest(body),), state.live, state.inventory)
    (request,) = dry_runs_needed(changed)
    after = {**predicted[request.key], "spec": {**live["spec"], "redisConfig": {"requirepass": "hunter22"}}}
    (change,) = plan_cluster(changed, {request.key: Prediction(request.key, predicted=after)}).changes
    field = next(f for f in change.fields if f.path == "/spec/redisConfig/requirepass")
    assert field.after == digest("hunter22") != "hunter22"
    assert field.masked
    assert change.after is not None
    assert change.after["spec"]["redisConfig"]["requirepass"] == digest("hunter22")
    refused = Prediction(request.key, error='spec.redisConfig.requirepass: Invalid value: "hunter22"')
    (error,) = plan_cluster(changed, {request.key: refused}).changes
    assert "hunter22" not in error.message
    assert digest("hunter22") in error.message
    assert "hunter22" not in redact("x hunter22 y", secret_values([body]))


def test_blocked_reason_names_every_refused_object() -> None:
    state, _ = load_case(FIXTURES / "update")
    (request,) = dry_runs_needed(state)
    plan = plan_cluster(state, {request.key: Prediction(request.key, error="nope")})
    assert blocked_reason(plan.changes, SyncRules()) == plan.blocked
    assert "RedisCluster/ns/a: nope" in plan.blocked


def test_drift_by_removal_names_the_manager_that_wrote_the_object_last() -> None:
    desired = _manifest(
        {
            "apiVersion": RC,
            "kind": "RedisCluster",
            "metadata": {"name": "c", "namespace": "n"},
            "spec": {"shards": 3},
        }
    )
    live = applied_body(desired)
    del live["spec"]["shards"]  # someone removed the field syncer set; no manager owns it now
    live["metadata"]["managedFields"] = [
        {
            "manager": "syncer",
            "operation": "Apply",
            "fieldsType": "FieldsV1",
            "time": "2026-12-01T10:00:00Z",
            "fieldsV1": {"f:metadata": {"f:labels": {"f:app.kubernetes.io/managed-by": {}}}},
        },
        {
            "manager": "ops-tool",
            "operation": "Update",
            "fieldsType": "FieldsV1",
            "time": "2026-12-01T11:00:00Z",
            "fieldsV1": {},
        },
        {
            "manager": "kubectl-edit",
            "operation": "Update",
            "fieldsType": "FieldsV1",
            "time": "2026-12-02T09:30:00Z",
            "fieldsV1": {},
        },
    ]
    inventory = Inventory.of(CLUSTER, (desired.key,))
    state = ClusterState(CLUSTER, (desired,), {desired.key: live}, inventory)
    (change,) = plan_cluster(state, {}).changes
    assert change.action is Action.DRIFT
    (drifted,) = [f for f in change.fields if f.path == "/spec/shards"]
    assert drifted.owners == ("kubectl-edit, last to write it",)
