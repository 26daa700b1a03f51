"""Runs revisions through the pipeline: source, verify, manifests, plan, rollout, apply, health, status.

Owns: the order of the stages and passing each one's result to the next: the agent's pass in one call
(``fleet_pass.FleetPass.run_pass``), the wave-by-wave rollout and drift repair (``rollout``: the
effects of the pure rollout machine ``syncer.rollout.machine`` run by ``rollout_run``), the
revision gate (``revision``), the diff (``diff``) and the unverified render path (``rendered_fleet``). Must
not: hold stage logic; decisions are made by the pure stages from the values passed in.
Submodules are imported by what uses them, so that a command pays only for the stages it runs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from syncer.lazy import lazy_getattr

if TYPE_CHECKING:
    from syncer.engine.diff import ClusterTarget, DiffOptions, diff_fleet, offline_plan, plan_live_cluster

__getattr__ = lazy_getattr(
    __name__, {"diff": ("ClusterTarget", "DiffOptions", "diff_fleet", "offline_plan", "plan_live_cluster")}
)


__all__ = [
    "ClusterTarget",
    "DiffOptions",
    "diff_fleet",
    "offline_plan",
    "plan_live_cluster",
]
