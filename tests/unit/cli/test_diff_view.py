"""How a plan is shown: blocked clusters, creates as YAML once, kept objects, the unified diff."""

from __future__ import annotations

import io

from rich.console import Console

from syncer.cli.diff_view import render_text, render_unified
from syncer.domain import Action, Change, ClusterPlan, FieldChange, FleetPlan, ObjectKey, WavePlan

KEY = ObjectKey("eu-1", "redis.syncer.dev", "RedisCluster", "redis", "sessions")
NEW = ObjectKey("eu-1", "redis.syncer.dev", "RedisCluster", "redis", "fresh")
OLD = ObjectKey("eu-1", "redis.syncer.dev", "RedisCluster", "redis", "old")
API = "redis.syncer.dev/v1alpha1"


def _body(name: str, shards: int) -> dict[str, object]:
    return {"apiVersion": API, "kind": "RedisCluster", "metadata": {"name": name}, "spec": {"shards": shards}}


def _plan(blocked: str = "") -> FleetPlan:
    changes = (
        Change(NEW, API, Action.CREATE, after=_body("fresh", 3)),
        Change(OLD, API, Action.KEEP, message="kept: prune disabled (syncer.dev/prune: disabled)"),
        Change(
            KEY,
            API,
            Action.UPDATE,
            (FieldChange("/spec/shards", 3, 5, ("syncer",)),),
            before=_body("sessions", 3),
            after=_body("sessions", 5),
        ),
    )
    return FleetPlan("abc", (WavePlan("all", (ClusterPlan("eu-1", changes, blocked=blocked),)),))


def _text(plan: FleetPlan) -> str:
    out = io.StringIO()
    render_text(plan, Console(file=out, width=200, highlight=False, soft_wrap=True, color_system=None))
    return out.getvalue()


def test_a_create_is_shown_once_as_yaml_and_a_kept_object_with_its_reason() -> None:
    text = _text(_plan())
    assert "create    RedisCluster/redis/fresh" in text
    assert "        spec:\n          shards: 3" in text
    assert "+ spec.shards" not in text
    assert "keep      RedisCluster/redis/old  kept: prune disabled" in text
    assert "spec.shards: 3 -> 5  (owner: syncer)" in text
    assert "BLOCKED" not in text


def test_a_blocked_cluster_says_nothing_below_is_applied() -> None:
    text = _text(_plan(blocked="conflicts (policy report): RedisCluster/redis/x: /spec owned by helm"))
    assert "BLOCKED, nothing below is applied: conflicts (policy report)" in text
    assert "eu-1 (blocked)" in text
    unified = "\n".join(render_unified(_plan(blocked="conflicts (policy report): x")))
    assert "# BLOCKED, nothing below is applied: conflicts (policy report): x" in unified


def test_the_unified_rendering_is_a_diff_per_object() -> None:
    lines = list(render_unified(_plan()))
    assert lines[0] == "# syncer diff of revision abc"
    assert "--- /dev/null" in lines
    assert "+++ synced/eu-1/RedisCluster/redis/fresh (create)" in lines
    assert "--- live/eu-1/RedisCluster/redis/sessions" in lines
    assert "-  shards: 3" in lines
    assert "+  shards: 5" in lines
    assert "# keep eu-1/RedisCluster/redis/old: kept: prune disabled (syncer.dev/prune: disabled)" in lines
    # Every line is a comment or a line a diff highlighter understands.
    assert all(line[:1] in "#-+@ " for line in lines)


def test_a_wave_with_an_analysis_says_which_metrics_it_will_run() -> None:
    plan = _plan()
    analysed = FleetPlan(
        plan.revision,
        (WavePlan("all", plan.waves[0].clusters, "errors (5x every 60s), lag (1x every 30s, dry run)"),),
    )
    assert "judged by analysis: errors (5x every 60s), lag (1x every 30s, dry run)" in _text(analysed)
    assert "# wave all judged by analysis: errors (5x every 60s)" in "\n".join(render_unified(analysed))
    assert "judged by analysis" not in _text(plan)
