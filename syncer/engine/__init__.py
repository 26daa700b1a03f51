"""Runs one revision through the pipeline: source, verify, manifests, plan, rollout, apply, health, status.

Owns: the order of the stages and passing each one's result to the next. Must not: hold stage logic.
"""

from syncer.engine.diff import (
    ClusterTarget,
    DiffOptions,
    diff_fleet,
    offline_plan,
    plan_live_cluster,
)

__all__ = [
    "ClusterTarget",
    "DiffOptions",
    "diff_fleet",
    "offline_plan",
    "plan_live_cluster",
]
