"""Honest, kstatus-style status of a RedisCluster. Pure: observed children in, status body out.

``Ready`` is True only when every shard's StatefulSet has observed its latest generation, runs all its
pods on one revision, all updated and Ready, no rollout is under way, and (with topology on) the Redis
cluster itself reports healthy and no outage is seen between reconciles (its reason comes first).
``Stalled`` is True when the controller cannot make progress without a change to the spec (a failed
rollout step, a missing Secret, an object the apiserver rejects); ``Reconciling`` is True while it is
working toward the spec.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from syncer.controller.model import ClusterSpec
from syncer.controller.upgrade import Phase, RolloutState, format_time


class Condition(StrEnum):
    READY = "Ready"
    RECONCILING = "Reconciling"
    STALLED = "Stalled"


@dataclass(frozen=True)
class ShardState:
    """What the controller saw of one shard's StatefulSet."""

    index: int
    exists: bool = False
    settled: bool = False  # status.observedGeneration == metadata.generation
    replicas: int = 0  # status.replicas
    ready: int = 0
    updated: int = 0
    one_revision: bool = False  # status.currentRevision == status.updateRevision
    version: str = ""


@dataclass(frozen=True)
class StallCause:
    """Why the controller is stuck until the spec or its inputs change."""

    reason: str
    message: str


@dataclass(frozen=True)
class TopologyVerdict:
    """What the Redis servers say; ``reason`` names the most serious problem (a condition reason)."""

    healthy: bool
    message: str
    reason: str = "TopologyUnhealthy"


@dataclass(frozen=True)
class Observed:
    """Everything the status is computed from."""

    spec: ClusterSpec
    shards: Sequence[ShardState]
    rollout: RolloutState | None = None
    topology: TopologyVerdict | None = None
    problem: StallCause | None = None
    masters: Mapping[int, str] = field(default_factory=dict)  # shard -> pod serving as its master
    # What Redis shows between reconciles (a failing cluster_state, a master not answering).
    outage: TopologyVerdict | None = None


def shard_ready(shard: ShardState, pods: int) -> bool:
    return (
        shard.exists
        and shard.settled
        and shard.one_revision
        and shard.replicas == pods
        and shard.ready == pods
        and shard.updated == pods
    )


def _shard_problem(shard: ShardState, pods: int) -> str:
    if not shard.exists:
        return f"shard {shard.index}: StatefulSet not created yet"
    if not shard.settled:
        return f"shard {shard.index}: StatefulSet change not yet observed by its controller"
    if shard.ready < pods or shard.replicas != pods:
        return f"shard {shard.index}: {shard.ready}/{pods} pods Ready"
    return f"shard {shard.index}: {shard.updated}/{pods} pods updated"


def _verdict(observed: Observed) -> tuple[tuple[bool, str, str], tuple[bool, str, str]]:
    """((ready, reason, message), (stalled, reason, message))."""
    spec = observed.spec
    pods = spec.pods_per_shard
    rollout = observed.rollout
    if observed.problem is not None:
        problem = observed.problem
        return (False, problem.reason, problem.message), (True, problem.reason, problem.message)
    if rollout is not None and rollout.failed:
        reason = "RolloutReverted" if rollout.phase == Phase.REVERTED else "RolloutStepTimeout"
        return (False, reason, rollout.message), (True, reason, rollout.message)
    if observed.outage is not None:
        # Redis-level first: while a master is down or a node fails, pod readiness is not the news.
        return (False, observed.outage.reason, observed.outage.message), (False, "NotStalled", "")
    not_ready = [_shard_problem(s, pods) for s in observed.shards if not shard_ready(s, pods)]
    if rollout is not None and rollout.in_progress:
        message = f"rollout step {rollout.step + 1}/{rollout.steps} {rollout.phase.value.lower()}"
        return (False, "RolloutInProgress", "; ".join([message, *not_ready])), (False, "NotStalled", "")
    if not_ready:
        return (False, "ShardsNotReady", "; ".join(not_ready)), (False, "NotStalled", "")
    if observed.topology is not None and not observed.topology.healthy:
        reason = observed.topology.reason or "TopologyUnhealthy"
        return (False, reason, observed.topology.message), (False, "NotStalled", "")
    message = f"{spec.shards} shard(s) of {pods} pod(s) Ready at version {spec.version}"
    if observed.topology is not None:
        message += f"; {observed.topology.message}"
    return (True, "AllShardsReady", message), (False, "NotStalled", "")


def _condition(
    kind: Condition, verdict: tuple[bool, str, str], previous: Mapping[str, Any], *, now: str, generation: int
) -> dict[str, Any]:
    value, reason, message = verdict
    status = "True" if value else "False"
    since = previous.get("lastTransitionTime") if previous.get("status") == status else None
    return {
        "type": kind.value,
        "status": status,
        "reason": reason,
        "message": message[:32000],
        "observedGeneration": generation,
        "lastTransitionTime": since or now,
    }


def _current_version(observed: Observed, previous: Mapping[str, Any]) -> str:
    shards = observed.shards
    versions = {s.version for s in shards}
    if shards and all(s.exists and s.settled and s.one_revision for s in shards) and len(versions) == 1:
        return versions.pop()
    return str(previous.get("currentVersion") or "")


def _shard_status(shard: ShardState, pods: int, masters: Mapping[int, str]) -> dict[str, Any]:
    found: dict[str, Any] = {
        "index": shard.index,
        "ready": shard_ready(shard, pods),
        "replicas": shard.replicas,
        "readyReplicas": shard.ready,
        "updatedReplicas": shard.updated,
    }
    if shard.index in masters:
        found["master"] = masters[shard.index]
    return found


def compute(observed: Observed, previous: Mapping[str, Any], now: float) -> dict[str, Any]:
    """The status subresource body; ``previous`` is the status last written (for transition times)."""
    spec = observed.spec
    old = {c.get("type"): c for c in previous.get("conditions") or () if isinstance(c, Mapping)}
    stamp = format_time(now).split(".")[0] + "Z"
    ready, stalled = _verdict(observed)
    reconciling = not ready[0] and not stalled[0]
    if reconciling:
        reconciling_verdict = (True, ready[1], ready[2])
    else:
        reconciling_verdict = (False, "Stalled" if stalled[0] else "Reconciled", "")
    conditions = [
        _condition(kind, verdict, old.get(kind.value, {}), now=stamp, generation=spec.generation)
        for kind, verdict in (
            (Condition.READY, ready),
            (Condition.RECONCILING, reconciling_verdict),
            (Condition.STALLED, stalled),
        )
    ]
    rollout = observed.rollout
    status: dict[str, Any] = {
        "observedGeneration": spec.generation,
        "conditions": conditions,
        "shards": [_shard_status(s, spec.pods_per_shard, observed.masters) for s in observed.shards],
        "targetVersion": spec.version,
        "rolloutStep": rollout.step + 1 if rollout is not None and rollout.in_progress else 0,
    }
    current = _current_version(observed, previous)
    if current:
        status["currentVersion"] = current
    if rollout is not None:
        status["rollout"] = rollout.to_status()
    return status


def with_outage(previous: Mapping[str, Any], outage: TopologyVerdict, now: float) -> dict[str, Any] | None:
    """The status last written with the outage the health watch sees between reconciles: Ready False
    and Reconciling True with its reason, everything else as it was (the same generation). None when
    the status is Stalled (a stall comes first) or has no conditions yet (no reconcile wrote it)."""
    old = {c.get("type"): c for c in previous.get("conditions") or () if isinstance(c, Mapping)}
    stalled = old.get(Condition.STALLED.value) or {}
    if not old or stalled.get("status") == "True":
        return None
    generation = int(previous.get("observedGeneration") or 0)
    stamp = format_time(now).split(".")[0] + "Z"
    verdict = (False, outage.reason, outage.message)
    conditions = [
        _condition(
            Condition.READY, verdict, old.get(Condition.READY.value, {}), now=stamp, generation=generation
        ),
        _condition(
            Condition.RECONCILING,
            (True, outage.reason, outage.message),
            old.get(Condition.RECONCILING.value, {}),
            now=stamp,
            generation=generation,
        ),
        _condition(Condition.STALLED, (False, "NotStalled", ""), stalled, now=stamp, generation=generation),
    ]
    return {**previous, "conditions": conditions}


def transitions(previous: Mapping[str, Any], status: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The conditions of ``status`` whose status or reason differ from ``previous``'s."""
    old = {c.get("type"): c for c in previous.get("conditions") or () if isinstance(c, Mapping)}
    changed = []
    for condition in status.get("conditions") or ():
        before = old.get(condition["type"]) or {}
        if (before.get("status"), before.get("reason")) != (condition["status"], condition["reason"]):
            changed.append(condition)
    return changed


def is_warning(condition: Mapping[str, Any]) -> bool:
    """Whether the Event of a condition's transition is a Warning: only Stalled turning True and Ready
    turning False are; a reconcile that ends (Reconciling False) or recovers is Normal."""
    bad = {"Stalled": "True", "Ready": "False"}
    return bad.get(str(condition["type"])) == str(condition["status"])
