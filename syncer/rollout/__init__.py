"""Clusters into canary waves, the gate decisions between them and decisions about revisions. [pure]

Owns: stable wave assignment by percentage and label (``plan_waves``), the proceed / wait / halt /
rollback decision for a wave from its clusters' progress and the time (``judge_wave``), whether a
cluster is inside its maintenance windows at a time, and when that changes (``judge_cluster``), and
what the clusters' recorded states say about revisions (``revisions``: what is done, what is
refused, how a rollback ends; ``rollback``: each cluster's own rollback target). Must not do I/O
or apply anything, nor read the clock; the engine passes progress, states and the time in and acts
on the decision.

Names are imported from their modules when first used, so that importing one module of the
package (``syncer.rollout.waves``) does not load the others.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from syncer.rollout.gate import ClusterProgress, Decision, GateVerdict, judge_wave
    from syncer.rollout.revisions import (
        failed_apply,
        is_done,
        phase_after_rollback,
        refusing,
    )
    from syncer.rollout.waves import Wave, plan_waves, stable_rank
    from syncer.rollout.windows import WindowOverride, WindowVerdict, judge_cluster, judge_clusters

_HOME = {
    "ClusterProgress": "syncer.rollout.gate",
    "Decision": "syncer.rollout.gate",
    "GateVerdict": "syncer.rollout.gate",
    "judge_wave": "syncer.rollout.gate",
    "failed_apply": "syncer.rollout.revisions",
    "is_done": "syncer.rollout.revisions",
    "phase_after_rollback": "syncer.rollout.revisions",
    "refusing": "syncer.rollout.revisions",
    "Wave": "syncer.rollout.waves",
    "plan_waves": "syncer.rollout.waves",
    "stable_rank": "syncer.rollout.waves",
    "WindowOverride": "syncer.rollout.windows",
    "WindowVerdict": "syncer.rollout.windows",
    "judge_cluster": "syncer.rollout.windows",
    "judge_clusters": "syncer.rollout.windows",
}

__all__ = [
    "ClusterProgress",
    "Decision",
    "GateVerdict",
    "Wave",
    "WindowOverride",
    "WindowVerdict",
    "failed_apply",
    "is_done",
    "judge_cluster",
    "judge_clusters",
    "judge_wave",
    "phase_after_rollback",
    "plan_waves",
    "refusing",
    "stable_rank",
]


def __getattr__(name: str) -> object:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value
