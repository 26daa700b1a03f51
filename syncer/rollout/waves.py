"""Clusters into canary waves: labels first, then a stable hash of the name. Pure."""

from __future__ import annotations

import hashlib
import math
from collections.abc import Collection, Mapping
from dataclasses import dataclass, replace

from syncer.config.rollout import RolloutPolicy, WaveGate


@dataclass(frozen=True)
class Wave:
    """One wave of a rollout: its position in the policy, name, clusters and gate."""

    index: int
    name: str
    clusters: tuple[str, ...]
    gate: WaveGate


def stable_rank(name: str) -> str:
    """A cluster's place in line: the same for a name on every run and every machine."""
    return hashlib.sha256(name.encode()).hexdigest()


def _targets(total: int, percents: list[float]) -> list[int]:
    """Cumulative cluster counts per wave; the first wave holds at least one, the last all."""
    targets: list[int] = []
    for index, percent in enumerate(percents):
        wanted = min(total, math.ceil(total * percent / 100 - 1e-9))
        if index == 0:
            wanted = max(1, wanted)
        targets.append(max(wanted, targets[-1] if targets else 0))
    targets[-1] = total
    return targets


def plan_waves(clusters: Mapping[str, Mapping[str, str]], policy: RolloutPolicy) -> tuple[Wave, ...]:
    """Place every cluster (name -> labels) in exactly one wave; empty waves are left out.

    A cluster matching a wave's selector is pinned to the first such wave. The others fill the waves
    in order of ``stable_rank`` up to each wave's cumulative share of the fleet, so the same clusters
    stay canaries across revisions and adding a cluster moves few others.
    """
    if not clusters:
        return ()
    pinned: dict[int, list[str]] = {i: [] for i in range(len(policy.waves))}
    free: list[str] = []
    for name, labels in clusters.items():
        index = next(
            (i for i, w in enumerate(policy.waves) if w.selector is not None and w.selector.matches(labels)),
            None,
        )
        (pinned[index] if index is not None else free).append(name)
    free.sort(key=stable_rank)
    targets = _targets(len(clusters), [w.percent for w in policy.waves])
    placed = 0
    waves = []
    for index, (policy_wave, target) in enumerate(zip(policy.waves, targets, strict=True)):
        members = sorted(pinned[index], key=stable_rank)
        placed += len(members)
        while free and placed < target:
            members.append(free.pop(0))
            placed += 1
        if index == len(policy.waves) - 1:
            members += free
            free = []
        if members:
            waves.append(Wave(index, policy_wave.name, tuple(members), policy_wave.gate))
    return tuple(waves)


def waves_without(waves: tuple[Wave, ...], left_out: Collection[str]) -> tuple[Wave, ...]:
    """``waves`` without the clusters ``left_out``; a wave left empty is left out too. Every other
    cluster keeps the wave it has in the whole fleet, whatever is left out."""
    kept = (replace(w, clusters=tuple(c for c in w.clusters if c not in left_out)) for w in waves)
    return tuple(w for w in kept if w.clusters)


def for_going_back(wave: Wave, checks: bool) -> Wave:
    """``wave`` as a rollback goes through it: health alone (no bake, no analysis) unless the policy
    asks for ``checks`` (``rollbackChecks``): going back is as fast as the clusters become healthy."""
    if checks:
        return wave
    return replace(wave, gate=replace(wave.gate, bake=0.0, analysis=replace(wave.gate.analysis, metrics=())))
