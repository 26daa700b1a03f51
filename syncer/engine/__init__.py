"""Runs one revision through the pipeline: source, verify, manifests, plan, rollout, apply, health, status.

Owns: the order of the stages and passing each one's result to the next. Must not: hold stage logic.
Submodules are imported by what uses them (``syncer.engine.diff``, ``syncer.engine.sync``, ...), so
that a command pays only for the stages it runs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from syncer.engine.diff import ClusterTarget, DiffOptions, diff_fleet, offline_plan, plan_live_cluster

_LAZY = {"ClusterTarget", "DiffOptions", "diff_fleet", "offline_plan", "plan_live_cluster"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        from syncer.engine import diff

        return getattr(diff, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "ClusterTarget",
    "DiffOptions",
    "diff_fleet",
    "offline_plan",
    "plan_live_cluster",
]
