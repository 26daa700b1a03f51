"""Deleting what a RedisCluster's spec no longer asks for: StatefulSets of removed shards, their
PodDisruptionBudgets, and (with the retention policy Delete) the claims of removed shards and pods.

Must not: delete a StatefulSet whose shard Redis has not let go (the caller says so), or any claim
under the retention policy Retain.
"""

from __future__ import annotations

from collections.abc import Mapping

from syncer.controller.finalizer import delete
from syncer.controller.model import LABEL_INSTANCE, ClusterSpec
from syncer.controller.statefulsets import selector, shard_of
from syncer.kube import KubeApi, KubeObject


def prune(
    kube: KubeApi, spec: ClusterSpec, live: Mapping[int, KubeObject], keep_departing: bool = False
) -> None:
    """Delete the StatefulSets and PDBs of shards the spec no longer has (and PDBs when disabled).

    With ``keep_departing`` (Redis has not let the shards' nodes go yet) their StatefulSets stay.
    Claims of removed shards and pods follow the retention policy.
    """
    for shard, sts in live.items():
        if (shard >= spec.shards or shard < 0) and not keep_departing:
            delete(kube, "apps/v1", "StatefulSet", sts)
    if spec.retention == "Delete" and not keep_departing:
        _delete_removed_claims(kube, spec)
    pdbs = kube.list(
        "policy/v1", "PodDisruptionBudget", namespace=spec.namespace, label_selector=selector(spec.name)
    )
    for pdb in pdbs.items:
        if not spec.pdb or not 0 <= shard_of(pdb) < spec.shards:
            delete(kube, "policy/v1", "PodDisruptionBudget", pdb)


def _delete_removed_claims(kube: KubeApi, spec: ClusterSpec) -> None:
    """Claims of shards and ordinals beyond the spec, when the retention policy says Delete."""
    found = kube.list(
        "v1",
        "PersistentVolumeClaim",
        namespace=spec.namespace,
        label_selector=f"{LABEL_INSTANCE}={spec.name}",
    )
    for claim in found.items:
        shard = shard_of(claim)
        ordinal = str(claim["metadata"]["name"]).rsplit("-", 1)[-1]
        beyond = ordinal.isdigit() and int(ordinal) >= spec.pods_per_shard
        if shard >= spec.shards or beyond:
            delete(kube, "v1", "PersistentVolumeClaim", claim)
