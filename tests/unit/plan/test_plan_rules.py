"""Rules of the plan beyond the golden cases: server answers, ownership parsing, masking, the body."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest

from syncer.domain import APPLIED_FIELDS_ANNOTATION, Action, FleetPlan, Inventory, WavePlan, applied_body
from syncer.domain.secrets import digest
from syncer.plan import ClusterState, Prediction, diff_schema, dry_runs_needed, fleet_document, plan_cluster
from syncer.plan.fields import Ownership, masked, normalized
from tests.unit.plan.test_golden import FIXTURES, load_case


def test_a_conflict_reported_by_the_server_names_its_managers() -> None:
    state, _ = load_case(FIXTURES / "update")
    (request,) = dry_runs_needed(state)
    answer = Prediction(request.key, conflicts=(("autoscaler", ".spec.shards"),))
    (change,) = plan_cluster(state, {request.key: answer}).changes
    assert change.action == Action.CONFLICT
    assert change.managers == ("autoscaler",)
    assert ".spec.shards" in change.message
    assert [f.path for f in change.fields] == ["/spec/shards"]


def test_a_refused_dry_run_is_an_error_that_blocks_the_cluster() -> None:
    state, _ = load_case(FIXTURES / "update")
    (request,) = dry_runs_needed(state)
    answer = Prediction(request.key, error="dry-run apply refused: spec.shards: must be <= 100")
    plan = plan_cluster(state, {request.key: answer})
    (change,) = plan.changes
    assert change.action == Action.ERROR
    assert not change.predicted
    assert change.message.startswith("dry-run apply refused")
    assert [(f.before, f.after) for f in change.fields] == [(3, 5)]
    assert plan.has_errors
    assert plan.blocked.startswith("the server refused 1 object(s)")
    assert plan.counts()[Action.ERROR] == 1


def test_without_an_inventory_a_moved_field_is_a_conflict_not_drift() -> None:
    state, _ = load_case(FIXTURES / "drift")
    unowned = ClusterState(state.cluster, state.desired, state.live, Inventory.of(state.cluster, ()))
    (change,) = plan_cluster(unowned).changes
    assert change.action == Action.CONFLICT
    assert change.managers == ("kubectl-edit",)


def test_an_object_gone_from_the_cluster_is_not_pruned_again() -> None:
    state, _ = load_case(FIXTURES / "prune")
    gone = ClusterState(state.cluster, (), {}, state.inventory)
    assert plan_cluster(gone).changes == ()


def test_items_of_keyed_lists_make_the_list_one_owned_field() -> None:
    live: dict[str, Any] = {
        "metadata": {
            "managedFields": [
                {
                    "manager": "syncer",
                    "operation": "Apply",
                    "fieldsV1": {"f:spec": {"f:tolerations": {'k:{"key":"a"}': {".": {}, "f:key": {}}}}},
                },
                {"manager": "hpa", "operation": "Update", "fieldsV1": {"f:spec": {"f:shards": {}}}},
            ]
        }
    }
    ownership = Ownership(live, "syncer")
    assert ownership.ours == frozenset({("spec", "tolerations")})
    assert ownership.we_own(("spec", "tolerations", "0", "key"))
    assert ownership.others(("spec",)) == ("hpa",)
    assert ownership.owners(("spec", "shards"), "syncer") == ("hpa",)


@pytest.mark.parametrize(
    ("kind", "value", "expected", "hit"),
    [
        ("Secret", {"data": {"a": "eA=="}}, {"data": {"a": digest("eA==")}}, True),
        (
            "RedisCluster",
            {"auth": {"password": "p", "user": "u"}},
            {"auth": {"password": digest("p"), "user": "u"}},
            True,
        ),
        ("RedisCluster", {"tls": {"secretName": "tls"}}, {"tls": {"secretName": "tls"}}, False),
        ("ConfigMap", {"data": {"a": "x"}}, {"data": {"a": "x"}}, False),
    ],
)
def test_secret_values_are_masked(kind: str, value: Any, expected: Any, hit: bool) -> None:
    assert masked(kind, (), value) == (expected, hit)


def test_normalizing_drops_server_bookkeeping_but_keeps_content() -> None:
    state, _ = load_case(FIXTURES / "unchanged")
    (live,) = state.live.values()
    clean = normalized(live)
    assert "status" not in clean
    assert set(clean["metadata"]) == {"name", "namespace", "labels"}
    assert clean["spec"] == live["spec"]


def test_the_applied_body_carries_the_label_and_lists_its_own_fields() -> None:
    state, _ = load_case(FIXTURES / "conflict")
    (manifest,) = state.desired
    body = applied_body(manifest)
    assert body["metadata"]["labels"] == {"app.kubernetes.io/managed-by": "syncer"}
    listed = json.loads(body["metadata"]["annotations"][APPLIED_FIELDS_ANNOTATION])
    assert listed == [
        "/metadata/labels/app.kubernetes.io~1managed-by",
        "/spec/image",
        "/spec/shards",
        "/spec/version",
    ]
    assert "labels" not in manifest.body["metadata"]
    assert applied_body(manifest) == body


def test_every_golden_plan_document_satisfies_the_published_schema() -> None:
    validator = jsonschema.Draft202012Validator(diff_schema())
    plans = []
    for case in sorted(p for p in FIXTURES.iterdir() if p.is_dir()):
        state, predicted = load_case(case)
        answers = {
            r.key: Prediction(r.key, predicted=predicted.get(r.key, r.body)) for r in dry_runs_needed(state)
        }
        plans.append(plan_cluster(state, answers))
    document = fleet_document(FleetPlan("abc123", (WavePlan("all", tuple(plans)),)))
    validator.validate(document)
    assert document["apiVersion"] == "syncer.dev/diff/v3"
    assert document["changed"] is True
    assert sum(document["summary"].values()) == sum(len(p.changes) for p in plans)


def test_the_schema_rejects_a_document_of_another_version() -> None:
    validator = jsonschema.Draft202012Validator(diff_schema())
    jsonschema.Draft202012Validator.check_schema(diff_schema())
    document = fleet_document(FleetPlan("abc", ()))
    validator.validate(document)
    document["apiVersion"] = "syncer.dev/diff/v1"
    assert not validator.is_valid(document)
