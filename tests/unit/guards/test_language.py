"""The CEL environment of guards: the Kubernetes functions, evaluation errors as verdicts, inputs."""

from __future__ import annotations

from typing import Any

import pytest

from syncer.domain.objects import ObjectKey
from syncer.domain.selectors import LabelSelector
from syncer.guards import (
    ChangeKind,
    ChangeRule,
    GuardOutcome,
    GuardPolicy,
    PlannedChange,
    Program,
    RevisionLimit,
    compile_expression,
    judge_revision,
    referenced_paths,
)


def program(source: str) -> Program:
    compiled = compile_expression(source)
    assert isinstance(compiled, Program), compiled
    return compiled


def value(source: str, **inputs: Any) -> bool | None:
    result = program(source).evaluate(inputs)
    assert not result.error, result.error
    return result.value


def error(source: str, **inputs: Any) -> str:
    result = program(source).evaluate(inputs)
    assert result.value is None
    return result.error


@pytest.mark.parametrize(
    "source",
    [
        "semver('7.2.5').isLessThan(semver('7.10.0'))",
        "semver('1.0.0-rc.1').isLessThan(semver('1.0.0'))",
        "semver('7.4.1').compareTo(semver('7.4.1')) == 0",
        "semver('v7.4', true).isGreaterThan(semver('7.3.9'))",
        "semver('07.02.1', true).minor() == 2",
        "semver('7.4.1').major() == 7 && semver('7.4.1').patch() == 1",
        "isSemver('7.2.5') && !isSemver('7.2') && isSemver('7.2', true) && !isSemver('seven', true)",
        "quantity('10Gi').compareTo(quantity('10240Mi')) == 0",
        "quantity('1G').isLessThan(quantity('1Gi'))",
        "quantity('500m').isLessThan(quantity('1'))",
        "quantity('1e3').compareTo(quantity('1k')) == 0",
        "quantity('2Ki').asInteger() == 2048",
        "isQuantity('10Gi') && !isQuantity('10 GB')",
        "'7.2.5'.split('.').size() == 3 && 'ABC'.lowerAscii() == 'abc'",
        "math.abs(-2) == 2 && math.greatest(1, 5) == 5",
        "{'a': 1}.?b.orValue(7) == 7",
    ],
)
def test_kubernetes_functions_and_extensions(source: str) -> None:
    assert value(source) is True


@pytest.mark.parametrize(
    ("source", "inputs", "message"),
    [
        ("new.spec.nope == 1", {"new": {"spec": {}}}, "no such key: nope"),
        (
            "semver(new.v).major() == 7",
            {"new": {"v": "7.2"}},
            "'7.2' is not a semantic version (MAJOR.MINOR.PATCH)",
        ),
        ("quantity('10 GB').asInteger() > 1", {}, "'10 GB' is not a quantity such as 10Gi, 500M or 0.5"),
        (
            "quantity('1Gi').isLessThan(semver('1.0.0'))",
            {},
            "cannot compare a kubernetes.Quantity with a kubernetes.Semver",
        ),
        ("quantity('1.5').asInteger() == 1", {}, "1.5 is not a whole number"),
        ("new.spec", {"new": {"spec": {}}}, "the expression gave a map, not a bool"),
        ("new.spec.shards / 0 == 1", {"new": {"spec": {"shards": 3}}}, "divide by zero"),
        ("old.spec.shards == 1", {"old": None}, "a field was read from null or from a value without fields"),
    ],
)
def test_evaluation_errors_are_results_with_a_message(
    source: str, inputs: dict[str, Any], message: str
) -> None:
    assert error(source, **inputs).startswith(message)


def test_inputs_are_the_paths_the_expression_reads() -> None:
    assert referenced_paths(
        "old == null || (new.spec.?shards.orValue(3) - old.spec.shards <= 1 && 'new.x' != cluster.labels.tier"
        " && new.spec.tags.all(t, t.size() > 0) && change.kind.startsWith('R'))"
    ) == ("old", "new.spec.shards", "old.spec.shards", "cluster.labels.tier", "new.spec.tags", "change.kind")


def redis_change(cluster: str, labels: dict[str, str], name: str = "orders") -> PlannedChange:
    key = ObjectKey(cluster, "redis.syncer.dev", "RedisCluster", "redis", name)
    return PlannedChange(key, ChangeKind.CREATE, None, {"spec": {"version": "7.2.5"}}, labels)


def test_an_evaluation_error_rejects_like_a_failure_and_names_its_inputs() -> None:
    rule = ChangeRule("needs-image", program("new.spec.image.startsWith('registry.example.org/')"))
    report = judge_revision(GuardPolicy((rule,)), "abc", [redis_change("eu-1", {})])
    assert report.rejected
    assert report.summary() == (
        "rule needs-image errored on eu-1 RedisCluster/redis/orders: could not be evaluated:"
        " no such key: image (inputs: new.spec.image=<absent>)"
    )


def test_rules_scoped_by_cluster_labels_kind_and_action() -> None:
    prod = LabelSelector((("tier", "prod"),))
    never = program("false")
    rules = (
        ChangeRule("prod-only", never, "no", clusters=prod),
        ChangeRule("services-only", never, "no", kinds=frozenset({"Service"})),
        ChangeRule("prunes-only", never, "no", actions=frozenset({ChangeKind.PRUNE})),
    )
    changes = [redis_change("eu-1", {"tier": "prod"}), redis_change("canary", {"tier": "canary"})]
    report = judge_revision(GuardPolicy(rules), "abc", changes)
    assert [(v.rule, v.cluster, v.outcome) for v in report.rules] == [
        ("prod-only", "eu-1", GuardOutcome.FAIL)
    ]
    assert report.for_change("eu-1", "RedisCluster/redis/orders")[0].message == "no"


def test_a_rule_without_a_message_shows_its_expression() -> None:
    rule = ChangeRule("tiny", program("new.spec.version   ==\n '7.4.1'"))
    report = judge_revision(GuardPolicy((rule,)), "abc", [redis_change("eu-1", {})])
    assert report.summary() == (
        "rule tiny failed on eu-1 RedisCluster/redis/orders: new.spec.version == '7.4.1' is false"
        ' (inputs: new.spec.version="7.2.5")'
    )


def test_revision_variables() -> None:
    rule = ChangeRule(
        "small", program("revision.objectsChanged <= 1 && revision.id == 'abc' && cluster.name != ''")
    )
    changes = [redis_change("eu-1", {}), redis_change("us-1", {})]
    report = judge_revision(GuardPolicy((rule,)), "abc", changes)
    assert [v.outcome for v in report.rules] == [GuardOutcome.FAIL, GuardOutcome.FAIL]
    assert report.rules[0].inputs == (
        ("revision.objectsChanged", "2"),
        ("revision.id", '"abc"'),
        ("cluster.name", '"eu-1"'),
    )


def test_limits_count_objects_and_clusters_in_matching_clusters_only() -> None:
    prod = LabelSelector((("tier", "prod"),))
    limits = (
        RevisionLimit("one-prod-cluster", max_clusters=1, clusters=prod),
        RevisionLimit("three-objects", max_objects=3),
    )
    changes = [
        redis_change("eu-1", {"tier": "prod"}),
        redis_change("us-1", {"tier": "prod"}),
        redis_change("canary", {"tier": "canary"}),
        redis_change("canary", {"tier": "canary"}, "sessions"),
    ]
    report = judge_revision(GuardPolicy(limits=limits), "abc", changes)
    assert report.summary().splitlines() == [
        "limit one-prod-cluster failed: 2 clusters changed in matching clusters, at most 1 allowed",
        "limit three-objects failed: 4 objects changed, at most 3 allowed",
    ]
    assert not judge_revision(GuardPolicy(limits=limits), "abc", changes[1:3]).rejected
