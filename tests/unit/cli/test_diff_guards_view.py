"""Guard verdicts in each ``syncer diff`` format: on the change they judge, and the revision's verdict."""

from __future__ import annotations

import io

import jsonschema
from rich.console import Console

from syncer.cli.diff_view import guard_summary, render_text, render_unified
from syncer.domain.objects import ObjectKey
from syncer.domain.plans import Action, Change, ClusterPlan, FleetPlan, WavePlan
from syncer.guards import GuardOutcome, GuardReport, LimitVerdict, RuleVerdict
from syncer.plan import diff_schema, fleet_document

KEY = ObjectKey("eu-1", "redis.syncer.dev", "RedisCluster", "redis", "orders")
LIVE = {"apiVersion": "redis.syncer.dev/v1alpha1", "kind": "RedisCluster", "spec": {"version": "7.4.1"}}
WANT = {"apiVersion": "redis.syncer.dev/v1alpha1", "kind": "RedisCluster", "spec": {"version": "7.2.5"}}
PLAN = FleetPlan(
    "abc",
    (
        WavePlan(
            "all",
            (
                ClusterPlan(
                    "eu-1",
                    (Change(KEY, "redis.syncer.dev/v1alpha1", Action.UPDATE, before=LIVE, after=WANT),),
                ),
            ),
        ),
    ),
)
INPUTS = (("new.spec.version", '"7.2.5"'), ("old.spec.version", '"7.4.1"'))
REPORT = GuardReport(
    "abc",
    (
        RuleVerdict("no-redis-downgrade", "eu-1", KEY.subject, GuardOutcome.FAIL, "must not go down", INPUTS),
        RuleVerdict("shards-one-step", "eu-1", KEY.subject, GuardOutcome.PASS),
    ),
    (LimitVerdict("at-most-200-objects", GuardOutcome.PASS, "1 objects in 1 clusters changed"),),
)


def test_text_shows_each_verdict_under_its_change_and_the_revision_verdict_last() -> None:
    out = io.StringIO()
    render_text(PLAN, Console(file=out, width=200, color_system=None), guards=(REPORT, "guards.yaml"))
    text = out.getvalue()
    assert (
        "✗ guard no-redis-downgrade fail: must not go down  "
        '(new.spec.version="7.2.5", old.spec.version="7.4.1")' in text
    )
    assert "✓ guard shards-one-step" in text
    assert text.index("RedisCluster/redis/orders") < text.index("✗ guard") < text.index("REJECTED")
    assert text.rstrip().endswith("the agent would reject this revision whole and change nothing")


def test_unified_carries_failures_as_comments_and_json_validates() -> None:
    lines = list(render_unified(PLAN, (REPORT, "guards.yaml")))
    assert "# guard no-redis-downgrade fail: must not go down" in lines
    assert not any("shards-one-step" in line for line in lines)
    document = fleet_document(PLAN, REPORT, "guards.yaml")
    jsonschema.Draft202012Validator(diff_schema()).validate(document)
    verdicts = document["waves"][0]["clusters"][0]["objects"][0]["guards"]
    assert verdicts[0] == {
        "rule": "no-redis-downgrade",
        "outcome": "fail",
        "message": "must not go down",
        "inputs": dict(INPUTS),
    }
    assert document["guards"]["rejected"] is True


def test_without_a_policy_nothing_is_said_and_offline_says_why_not() -> None:
    assert guard_summary(None, "") == []
    assert guard_summary(None, "g.yaml") == [
        "guards (g.yaml): not judged offline; they need the live objects"
    ]
    passed = GuardReport("abc", REPORT.rules[1:], REPORT.limits)
    assert guard_summary(passed, "g.yaml")[-1] == "guards (g.yaml): passed (1 rule verdicts, 1 limits)"
    document = fleet_document(PLAN)
    assert document["guards"] == {"policy": "", "judged": False, "rejected": False, "limits": []}
    jsonschema.Draft202012Validator(diff_schema()).validate(document)
