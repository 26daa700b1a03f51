"""The sync state ConfigMap on a real apiserver: written, read back, missing and corrupt."""

from __future__ import annotations

import pytest

from syncer.domain.sync_state import ClusterSyncState, InventoryEntry, SyncPhase
from syncer.kube import ClusterClient
from syncer.status import STATE_CONFIGMAP, StateStore

pytestmark = pytest.mark.integration


def test_a_missing_state_is_a_cluster_never_synced(kube: ClusterClient, namespace: str) -> None:
    loaded = StateStore(kube, namespace).load()
    assert loaded.state == ClusterSyncState(kube.cluster)
    assert loaded.problem == ""


def test_a_saved_state_is_read_back(kube: ClusterClient, namespace: str) -> None:
    store = StateStore(kube, namespace)
    state = ClusterSyncState(
        kube.cluster,
        revision="f" * 40,
        phase=SyncPhase.APPLIED,
        wave="canary",
        inventory=(InventoryEntry("v1", "Namespace", "", "cache", "uid-1"),),
    )
    saved = store.save(state, now=1234.5)
    assert saved.updated_at == 1234.5
    assert StateStore(kube, namespace).load().state == saved
    configmap = kube.get("v1", "ConfigMap", STATE_CONFIGMAP, namespace)
    assert configmap["metadata"]["labels"]["syncer.dev/role"] == "sync-state"


def test_the_state_namespace_is_created_when_missing(kube: ClusterClient, namespace: str) -> None:
    own = f"{namespace}-state"
    try:
        StateStore(kube, own).save(ClusterSyncState(kube.cluster, revision="r"))
        assert StateStore(kube, own).load().state.revision == "r"
    finally:
        kube.delete("v1", "Namespace", own)


def test_a_corrupt_state_is_rebuilt_from_labelled_objects(kube: ClusterClient, namespace: str) -> None:
    labels = {"app.kubernetes.io/managed-by": "syncer"}
    kube.apply(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "ours", "namespace": namespace, "labels": labels},
        }
    )
    kube.apply(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "theirs", "namespace": namespace}}
    )
    kube.apply(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": STATE_CONFIGMAP, "namespace": namespace},
            "data": {"state.json": "{garbage"},
        }
    )
    loaded = StateStore(kube, namespace).load(
        managed_kinds=[("v1", "ConfigMap"), ("nothing.example.org/v1", "Thing")]
    )
    assert "unreadable (not JSON" in loaded.problem
    assert loaded.state.rebuilt
    names = {(e.namespace, e.name) for e in loaded.state.inventory}
    assert (namespace, "ours") in names
    assert (namespace, "theirs") not in names
    assert all(e.uid for e in loaded.state.inventory)
