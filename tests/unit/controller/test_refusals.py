"""The one list of refused RedisCluster specs: its reasons, and that the webhook, the controller and
the chart's ValidatingAdmissionPolicy all take theirs from it."""

from __future__ import annotations

import re
from typing import Any

import pytest
import yaml

from syncer.controller.admission import review_redis_cluster
from syncer.controller.model import SpecError, parse
from syncer.controller.refusal_policy import BEGIN, END, TEMPLATE, policy_block, policy_spec
from syncer.controller.refusals import REFUSALS, SPEC_CHANGED, refusals_of
from tests.support.refusal_examples import APPENDONLY, EXAMPLES, cluster
from tests.unit.controller.test_admission import Objects

WEBHOOK = TEMPLATE.parent / "admission-webhook.yaml"


def test_every_refusal_has_an_example_and_a_distinct_name() -> None:
    names = [refusal.name for refusal in REFUSALS]
    assert len(set(names)) == len(names)
    assert {name for name, *_ in EXAMPLES} == set(names)


@pytest.mark.parametrize(("name", "new", "old", "reason"), EXAMPLES)
def test_each_example_meets_its_refusal_alone(
    name: str, new: dict[str, Any], old: dict[str, Any] | None, reason: str
) -> None:
    found = refusals_of(new, old)
    assert [n for n, _ in found] == [name]
    assert found[0][1].startswith(reason)


@pytest.mark.parametrize(
    ("new", "old"),
    [
        (cluster(redisConfig={"appendonly": "yes", "maxmemory-policy": "allkeys-lru"}), None),
        (cluster(redisConfig={"appendonly": " YES "}), None),
        (cluster("6.0"), None),
        (cluster("7.4"), cluster("7.2.5")),
        (cluster("7.2"), cluster("7.2.5")),  # 7.2 stands for the newest 7.2.x
        (cluster("7.2.1"), cluster("7.2")),
        (cluster("6.0", annotations={"redis.syncer.dev/allow-downgrade-to": "6.0"}), cluster("7.2")),
        # Taking back an upgrade that reached no pod: the pods run 7.2 (status.currentVersion).
        (cluster("7.2"), cluster("7.4", status={"currentVersion": "7.2"})),
        (cluster(persistence={"size": "10240Mi"}), cluster(persistence={"size": "10Gi"})),
        (cluster(persistence={"size": "1Gi"}), cluster()),
        (
            cluster(shards=2, resources={"limits": {"memory": "2Gi"}}),
            cluster(shards=3, resources={"limits": {"memory": "1Gi"}}),
        ),
    ],
)
def test_what_is_not_refused(new: dict[str, Any], old: dict[str, Any] | None) -> None:
    assert refusals_of(new, old) == []


def test_a_downgrade_is_admissions_to_refuse_not_the_controllers() -> None:
    """A rollback puts the version a cluster ran before back: the controller carries it out."""
    running = {"currentVersion": "7.2.5"}
    assert refusals_of(cluster("7.0"), cluster("7.2.5"))[0][0] == "downgrade"
    assert parse(cluster("7.0", status=running)).version == "7.0"


def test_the_controller_stalls_on_every_refusal_it_can_judge_with_the_same_reasons() -> None:
    for name, new, old, _ in EXAMPLES:
        refusal = next(r for r in REFUSALS if r.name == name)
        # The controller has no old spec: it judges the object against itself (its status).
        judged = {**new, "status": {"currentVersion": old["spec"]["version"]}} if old else new
        expected = refusals_of(judged, judged, controller=True)
        if not refusal.controller:
            assert expected == []
            continue
        with pytest.raises(SpecError) as caught:
            parse(judged)
        assert str(caught.value) == "; ".join(message for _, message in expected)
        assert refusal.check(judged, judged) in str(caught.value)


def test_several_refusals_are_all_named_in_the_lists_order() -> None:
    obj = cluster("5.0", redisConfig={"appendonly": "no", "port": "1"})
    names = [name for name, _ in refusals_of(obj, None)]
    assert names == ["version", "reserved-directives", "required-appendonly"]
    with pytest.raises(SpecError) as caught:
        parse(obj)
    assert str(caught.value) == "; ".join(message for _, message in refusals_of(obj, None))


def request(operation: str, new: dict[str, Any], old: dict[str, Any] | None = None) -> dict[str, Any]:
    found = {"uid": "u", "operation": operation, "namespace": "redis", "object": new}
    if old is not None:
        found["oldObject"] = old
    return found


@pytest.mark.parametrize(("name", "new", "old", "reason"), EXAMPLES)
def test_the_webhook_refuses_each_example_with_its_reason(
    name: str, new: dict[str, Any], old: dict[str, Any] | None, reason: str
) -> None:
    operation = "CREATE" if old is None else "UPDATE"
    verdict = review_redis_cluster(Objects(), request(operation, new, old))  # type: ignore[arg-type]
    assert (verdict.allowed, verdict.code) == (False, 422)
    assert verdict.message == f"RedisCluster redis/cache: {refusals_of(new, old)[0][1]}"
    if old is None:
        # The same value brought in by an update of a spec that did not have it.
        later = review_redis_cluster(Objects(), request("UPDATE", new, cluster()))  # type: ignore[arg-type]
        assert later.message.startswith(verdict.message)


def test_the_webhook_judges_a_kept_legacy_value_only_when_the_spec_changes() -> None:
    legacy = cluster(redisConfig={"appendonly": "no"})
    labelled = {**legacy, "metadata": {**legacy["metadata"], "labels": {"team": "a"}}}
    finalized = {**legacy, "metadata": {**legacy["metadata"], "finalizers": []}}
    for same_spec in (labelled, finalized):
        assert review_redis_cluster(Objects(), request("UPDATE", same_spec, legacy)).allowed  # type: ignore[arg-type]
    # A spec change while the refused value stays: the controller would still stall, so it is refused.
    grown = cluster(redisConfig={"appendonly": "no"}, shards=4)
    verdict = review_redis_cluster(Objects(), request("UPDATE", grown, legacy))  # type: ignore[arg-type]
    assert not verdict.allowed
    assert APPENDONLY in verdict.message
    # A refusal the controller does not judge holds only for the change: a kept smaller size is fine.
    small = cluster(persistence={"size": "1Gi"})
    changed = cluster(persistence={"size": "1Gi"}, shards=4)
    assert review_redis_cluster(Objects(), request("UPDATE", changed, small)).allowed  # type: ignore[arg-type]


def _generated(template: str) -> str:
    return template[template.index(BEGIN) + len(BEGIN) : template.index(END)]


def test_the_policy_in_the_chart_is_the_one_generated_from_the_list() -> None:
    assert _generated(TEMPLATE.read_text()) == policy_block(), (
        "chart/templates/admission-policy.yaml is out of date: run python -m syncer.controller.refusal_policy"
    )
    validations = yaml.safe_load(policy_block())["validations"]
    assert validations == policy_spec()["validations"]
    assert [v["expression"] for v in validations] == [r.expression for r in REFUSALS]
    assert [v["messageExpression"] for v in validations] == [r.message_expression for r in REFUSALS]


def test_every_static_reason_is_the_policys_message_word_for_word() -> None:
    # Where a reason names no value of the object, the policy's message is that reason as a literal.
    static = {"version", "required-appendonly", "storage-shrinks", "shards-and-memory"}
    for name, new, old, _ in EXAMPLES:
        if name not in static:
            continue
        refusal = next(r for r in REFUSALS if r.name == name)
        assert yaml.safe_load(refusal.message_expression) == refusal.check(new, old)


def test_the_webhook_is_called_for_the_same_requests_the_policy_judges() -> None:
    text = WEBHOOK.read_text()
    assert f'expression: "{SPEC_CHANGED}"' in text
    assert re.search(r'operations: \["CREATE", "UPDATE"\]', text)
    assert policy_spec()["matchConditions"] == [{"name": "spec-changed", "expression": SPEC_CHANGED}]


def test_a_value_the_schema_keeps_out_is_refused_not_a_traceback() -> None:
    found = refusals_of(cluster(persistence={"size": "nine"}), cluster(persistence={"size": "10Gi"}))
    assert [name for name, _ in found] == ["storage-shrinks"]
    assert "cannot be judged" in found[0][1]
    assert "nine" in found[0][1]
