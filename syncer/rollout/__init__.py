"""Clusters into canary waves, the gate decisions between them and decisions about revisions. [pure]

Owns: stable wave assignment by percentage and label (``plan_waves``), the proceed / wait / halt /
rollback decision for a wave from its clusters' progress and the time (``judge_wave``), whether a
cluster is inside its maintenance windows at a time, and when that changes (``judge_cluster``), why
clusters may not be changed now (``Held``: a suspension, a pin, a window), whether a wave held at a manual
gate may start and whether a person aborted a revision (``promotion``), and
what the clusters' recorded states say about revisions (``revisions``: what is done, how a
rollback ends; ``failures``: where a revision failed, for which cause, and what refuses it;
``rollback_targets``: each cluster's own rollback target; ``pins``: which clusters a person's pin keeps on
a revision, and which revisions a cluster's history lets it be pinned to), and the rollout of one
revision over its waves as a machine (``machine``: ``start``/``step``, ``(state, fact) -> (state,
effects)``; its facts, effects and outcomes are ``moves``; the waiting at a wave's gate, each look
a fact with its time, is ``gate_wait``), whose effects the engine runs. Must not do I/O
or apply anything, nor read the clock; the engine passes progress, states and the time in and acts
on the decision.

Names are imported when first used (``syncer.lazy``), so that ``syncer.rollout.waves`` can be imported
without the rest of the package.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from syncer.lazy import lazy_getattr

if TYPE_CHECKING:
    from syncer.rollout.failures import Refusal, refusing
    from syncer.rollout.gate import ClusterProgress, Decision, GateVerdict, judge_wave
    from syncer.rollout.held import Held
    from syncer.rollout.promotion import PromotionCheck, judge_abort, judge_promotion, people_needed
    from syncer.rollout.revisions import failed_apply, is_done, phase_after_rollback
    from syncer.rollout.waves import Wave, plan_waves, stable_rank
    from syncer.rollout.window_judge import WindowOverride, WindowVerdict, judge_cluster, judge_clusters

__getattr__ = lazy_getattr(
    __name__,
    {
        "failures": ("Refusal", "refusing"),
        "gate": ("ClusterProgress", "Decision", "GateVerdict", "judge_wave"),
        "held": ("Held",),
        "promotion": ("PromotionCheck", "judge_abort", "judge_promotion", "people_needed"),
        "revisions": ("failed_apply", "is_done", "phase_after_rollback"),
        "waves": ("Wave", "plan_waves", "stable_rank"),
        "window_judge": ("WindowOverride", "WindowVerdict", "judge_cluster", "judge_clusters"),
    },
)

__all__ = [
    "ClusterProgress",
    "Decision",
    "GateVerdict",
    "Held",
    "PromotionCheck",
    "Refusal",
    "Wave",
    "WindowOverride",
    "WindowVerdict",
    "failed_apply",
    "is_done",
    "judge_abort",
    "judge_cluster",
    "judge_clusters",
    "judge_promotion",
    "judge_wave",
    "people_needed",
    "phase_after_rollback",
    "plan_waves",
    "refusing",
    "stable_rank",
]
