"""Clusters into canary waves and the gate decisions between them. [pure]

Owns: stable wave assignment by percentage and label (``plan_waves``) and the proceed / wait / halt /
rollback decision for a wave from its clusters' progress and the time (``judge_wave``). Must not do
I/O or apply anything; the engine passes progress in and acts on the decision.
"""

from syncer.rollout.gate import ClusterProgress, Decision, GateVerdict, judge_wave
from syncer.rollout.waves import Wave, plan_waves, stable_rank

__all__ = ["ClusterProgress", "Decision", "GateVerdict", "Wave", "judge_wave", "plan_waves", "stable_rank"]
