"""Clusters into canary waves, the gate decisions between them and decisions about revisions. [pure]

Owns: stable wave assignment by percentage and label (``plan_waves``), the proceed / wait / halt /
rollback decision for a wave from its clusters' progress and the time (``judge_wave``), whether a
cluster is inside its maintenance windows at a time, and when that changes (``judge_cluster``), and
what the clusters' recorded states say about revisions (``revisions``: the last good one, what is
done, what is refused, how a rollback ends). Must not do I/O or apply anything, nor read the clock;
the engine passes progress, states and the time in and acts on the decision.
"""

from syncer.rollout.gate import ClusterProgress, Decision, GateVerdict, judge_wave
from syncer.rollout.revisions import (
    failed_apply,
    is_done,
    last_good_revision,
    phase_after_rollback,
    refusing,
    rolls_back,
)
from syncer.rollout.waves import Wave, plan_waves, stable_rank
from syncer.rollout.windows import WindowOverride, WindowVerdict, judge_cluster, judge_clusters

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
    "last_good_revision",
    "phase_after_rollback",
    "plan_waves",
    "refusing",
    "rolls_back",
    "stable_rank",
]
