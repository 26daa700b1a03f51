"""Clusters into canary waves and the gate decisions between them. [pure]

Owns: stable wave assignment by percentage and label (``plan_waves``), the proceed / wait / halt /
rollback decision for a wave from its clusters' progress and the time (``judge_wave``), and whether a
cluster is inside its maintenance windows at a time, and when that changes (``judge_cluster``). Must
not do I/O or apply anything, nor read the clock; the engine passes progress and the time in and acts
on the decision.
"""

from syncer.rollout.gate import ClusterProgress, Decision, GateVerdict, judge_wave
from syncer.rollout.waves import Wave, plan_waves, stable_rank
from syncer.rollout.windows import WindowOverride, WindowVerdict, judge_cluster, judge_clusters

__all__ = [
    "ClusterProgress",
    "Decision",
    "GateVerdict",
    "Wave",
    "WindowOverride",
    "WindowVerdict",
    "judge_cluster",
    "judge_clusters",
    "judge_wave",
    "plan_waves",
    "stable_rank",
]
