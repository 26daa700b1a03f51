"""Where the sync will stop, shown in the diff: the same judgements the rollout makes before each wave,
in its order, over the states the diff read. [no I/O]

Wave by wave, as the sync goes: a wave that already passed on the revision is passed over; the first
wave where a cluster refuses the revision (it failed there before), where the manual gate waits for a
person's promotion, or where a cluster may not be changed now (a suspension, a closed maintenance
window: ``syncer.rollout.held.hold_of``, the judgement every writer asks) stops the sync. There every
cluster of the wave is held (the held ones with their own reason, the others with the wave's), and so
is every cluster of the later waves. Their changes stay listed: they are what the sync will do once
the hold ends, and the diff's exit code says a change is due.

A cluster a person pinned to another revision (``syncer rollback``) is left out of this revision's
waves, as the sync leaves it out (``waves_without``: it gets its pinned revision instead): it holds
no wave and is held itself, with its own reason.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from syncer.config.rollout import RolloutPolicy
from syncer.config.two_person import TwoPersonRule
from syncer.domain.objects import DesiredFleet
from syncer.domain.plans import ClusterPlan, WavePlan
from syncer.domain.sync_state import ClusterSyncState
from syncer.rollout import is_done, judge_promotion, people_needed
from syncer.rollout.held import hold_of, person_hold
from syncer.rollout.pins import pins_away
from syncer.rollout.rollback_targets import wave_passed
from syncer.rollout.waves import Wave, waves_without

AWAITING_PROMOTION = "awaiting-promotion"
"""The ``hold`` of the clusters of a wave waiting at its manual gate."""
WAVE_HELD = "wave"
"""The ``hold`` of a cluster whose wave, or an earlier one, is held by another cluster or a gate."""


def hold_waves(
    waves: tuple[WavePlan, ...],
    policy_waves: Sequence[Wave],
    fleet: DesiredFleet,
    states: Mapping[str, ClusterSyncState],
    judged: tuple[RolloutPolicy, Sequence[TwoPersonRule], float],
) -> tuple[WavePlan, ...]:
    """``waves`` with every cluster the sync will not change now held, and why (see the module).
    ``policy_waves`` are the rollout policy's waves (their gates), ``judged`` the policy, the trust
    policy's two-person rules and the time the windows are judged at."""
    policy, two_person, now = judged
    pinned = pins_away(states, fleet.revision)
    gates = {wave.name: wave for wave in waves_without(tuple(policy_waves), pinned)}
    waves = tuple(_pins_held(plan, {n: states[n] for n in pinned}, fleet.revision) for plan in waves)
    stop = ""
    shown = []
    for plan in waves:
        if stop:
            shown.append(_held(plan, stop, WAVE_HELD))
            continue
        wave = gates.get(plan.name)
        if wave is None or wave_passed(wave.clusters, states, fleet.revision):
            shown.append(plan)
            continue
        if any(c.refused for c in plan.clusters):
            shown.append(plan)  # ``blocked_after_refusal`` already holds it and what follows
            break
        labels = {n: fleet.clusters[n].labels for n in wave.clusters if n in fleet.clusters}
        check = judge_promotion(wave, states, fleet.revision, people_needed(two_person, labels))
        if not check.open:
            stop = f"the sync waits at wave {plan.name}: {check.reason}"
            shown.append(_held(plan, f"{check.reason} (`syncer promote`)", AWAITING_PROMOTION))
            continue
        holds = {
            name: hold
            for name in wave.clusters
            if (state := states.get(name)) is not None
            and not is_done(state, fleet.revision)
            and (hold := hold_of(state, fleet.revision, labels.get(name, {}), policy.windows, now))
            is not None
        }
        if not holds:
            shown.append(plan)
            continue
        why = "; ".join(f"{name}: {hold.kind}: {hold.why}" for name, hold in sorted(holds.items()))
        stop = f"the sync waits at wave {plan.name}: {why}"
        clusters = tuple(
            replace(c, blocked=holds[c.cluster].why, hold=str(holds[c.cluster].kind))
            if c.cluster in holds
            else _held_cluster(c, f"its wave waits: {why}", WAVE_HELD)
            for c in plan.clusters
        )
        shown.append(replace(plan, clusters=clusters))
    return (*shown, *waves[len(shown) :])


def _pins_held(plan: WavePlan, pinned: Mapping[str, ClusterSyncState], revision: str) -> WavePlan:
    """``plan`` with each of the ``pinned`` clusters (pinned to another revision than ``revision``)
    held by its own hold (a suspension first, else its pin), unless something of its own already
    blocks it (its pinned revision's plan, ``syncer.engine.diff``)."""
    clusters = []
    for cluster in plan.clusters:
        state = pinned.get(cluster.cluster)
        hold = person_hold(state, revision) if state is not None else None
        clusters.append(cluster if hold is None else _held_cluster(cluster, hold.why, str(hold.kind)))
    return replace(plan, clusters=tuple(clusters))


def _held(plan: WavePlan, why: str, hold: str) -> WavePlan:
    return replace(plan, clusters=tuple(_held_cluster(c, why, hold) for c in plan.clusters))


def _held_cluster(cluster: ClusterPlan, why: str, hold: str) -> ClusterPlan:
    """``cluster`` held for ``why``, unless something of its own already blocks it."""
    if cluster.error or cluster.blocked:
        return cluster
    return replace(cluster, blocked=why, hold=hold)
