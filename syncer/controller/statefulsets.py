"""What the controller reads from a RedisCluster's StatefulSets and children: which shard an object
belongs to, each shard's state for the status, and what an upgrade needs to know of it.

Pure functions of the objects as read. Must not: call the Kubernetes API.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from syncer.controller import children
from syncer.controller.model import FIELD_MANAGER, LABEL_INSTANCE, LABEL_MANAGED_BY, LABEL_SHARD
from syncer.controller.status import ShardState
from syncer.controller.upgrade import ShardObservation


def selector(name: str) -> str:
    """The label selector of the children the controller made for the RedisCluster ``name``."""
    return f"{LABEL_INSTANCE}={name},{LABEL_MANAGED_BY}={FIELD_MANAGER}"


def shard_of(obj: Mapping[str, Any]) -> int:
    """The shard index an object is labelled with; -1 when it has none that reads as a number."""
    try:
        return int(((obj.get("metadata") or {}).get("labels") or {}).get(LABEL_SHARD, -1))
    except ValueError:
        return -1


def shard_state(index: int, sts: Mapping[str, Any] | None) -> ShardState:
    """Shard ``index`` as its StatefulSet ``sts`` reports it (absent when None)."""
    if sts is None:
        return ShardState(index)
    status = sts.get("status") or {}
    current, update = status.get("currentRevision"), status.get("updateRevision")
    return ShardState(
        index=index,
        exists=True,
        settled=status.get("observedGeneration") == (sts.get("metadata") or {}).get("generation"),
        replicas=int(status.get("replicas") or 0),
        ready=int(status.get("readyReplicas") or 0),
        updated=int(status.get("updatedReplicas") or 0),
        one_revision=bool(current) and current == update,
        version=children.template_version(sts["spec"]["template"]),
    )


def partition(sts: Mapping[str, Any]) -> int:
    """The rolling update's partition of ``sts`` (0 when it sets none)."""
    strategy = ((sts.get("spec") or {}).get("updateStrategy") or {}).get("rollingUpdate") or {}
    return int(strategy.get("partition") or 0)


def observation(sts: Mapping[str, Any] | None) -> ShardObservation:
    """What an upgrade decision needs to know of one shard's StatefulSet."""
    if sts is None:
        return ShardObservation(False)
    state = shard_state(0, sts)
    return ShardObservation(
        True,
        children.template_hash(sts["spec"]["template"]),
        state.settled,
        state.replicas,
        state.updated,
        state.ready,
    )
