"""ClusterClient against a real kube-apiserver: every call and every error kind it translates."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from devfleet import access
from syncer import errors
from syncer.kube import ApplyOptions, ClientOptions, ClusterClient, WatchEvent
from tests.integration.conftest import FleetHandle

pytestmark = pytest.mark.integration


def config_map(namespace: str, name: str, **data: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace},
        "data": data,
    }


def test_apply_get_list_and_delete(kube: ClusterClient, namespace: str) -> None:
    created = kube.apply(config_map(namespace, "one", a="1"))
    assert created["data"] == {"a": "1"}
    assert [e["manager"] for e in created["metadata"]["managedFields"]] == ["syncer"]
    kube.apply(
        {
            **config_map(namespace, "two", b="2"),
            "metadata": {
                "name": "two",
                "namespace": namespace,
                "labels": {"app.kubernetes.io/managed-by": "syncer"},
            },
        }
    )

    assert kube.get("v1", "ConfigMap", "one", namespace)["data"] == {"a": "1"}
    listed = kube.list(
        "v1", "ConfigMap", namespace=namespace, label_selector="app.kubernetes.io/managed-by=syncer"
    )
    assert [i["metadata"]["name"] for i in listed.items] == ["two"]
    assert all(i["kind"] == "ConfigMap" and i["apiVersion"] == "v1" for i in listed.items)
    assert listed.resource_version

    kube.delete("v1", "ConfigMap", "one", namespace)
    with pytest.raises(errors.NotFound) as caught:
        kube.get("v1", "ConfigMap", "one", namespace)
    assert caught.value.subject == f"ConfigMap/{namespace}/one"
    assert caught.value.cluster == kube.cluster


def test_a_dry_run_apply_predicts_without_writing(kube: ClusterClient, namespace: str) -> None:
    kube.apply(config_map(namespace, "cm", a="1"))
    predicted = kube.apply(config_map(namespace, "cm", a="2"), ApplyOptions(dry_run=True))
    assert predicted["data"] == {"a": "2"}
    assert kube.get("v1", "ConfigMap", "cm", namespace)["data"] == {"a": "1"}


def test_listing_pages_through_large_collections(fleet: FleetHandle, cluster: str, namespace: str) -> None:
    kube = ClusterClient.from_kubeconfig(str(fleet.kubeconfig), cluster, options=ClientOptions(page_size=7))
    try:
        for i in range(20):
            kube.apply(config_map(namespace, f"cm-{i:02d}"))
        names = [i["metadata"]["name"] for i in kube.list("v1", "ConfigMap", namespace=namespace).items]
        assert [n for n in names if n.startswith("cm-")] == [f"cm-{i:02d}" for i in range(20)]
    finally:
        kube.close()


def test_a_conflict_names_the_other_field_manager(kube: ClusterClient, namespace: str) -> None:
    kube.apply(config_map(namespace, "cm", a="1"), ApplyOptions(field_manager="helm"))
    with pytest.raises(errors.Conflict) as caught:
        kube.apply(config_map(namespace, "cm", a="2"))
    assert caught.value.managers == ("helm",)
    assert [c.field for c in caught.value.conflicts] == [".data.a"]
    forced = kube.apply(config_map(namespace, "cm", a="2"), ApplyOptions(force=True))
    assert forced["data"] == {"a": "2"}


def test_an_invalid_object_reports_the_field(kube: ClusterClient, namespace: str) -> None:
    with pytest.raises(errors.Invalid) as caught:
        kube.apply(config_map(namespace, "Not_A_Valid_Name"))
    assert caught.value.status == 422
    assert [c.field for c in caught.value.causes] == ["metadata.name"]


def test_forbidden_for_an_identity_without_rights(
    fleet: FleetHandle, cluster: str, namespace: str, tmp_path: Path
) -> None:
    path = access.user_kubeconfig(fleet.state, cluster, "nobody", (), tmp_path / "nobody.kubeconfig")
    kube = ClusterClient.from_kubeconfig(str(path), cluster)
    try:
        with pytest.raises(errors.Forbidden) as caught:
            kube.list("v1", "ConfigMap", namespace=namespace)
        assert 'User "nobody" cannot list resource "configmaps"' in str(caught.value)
    finally:
        kube.close()


def test_an_unreachable_apiserver_is_a_server_error(fleet: FleetHandle, cluster: str, tmp_path: Path) -> None:
    text = fleet.kubeconfig.read_text()
    port = fleet.state.cluster(cluster).port
    broken = tmp_path / "broken.kubeconfig"
    broken.write_text(text.replace(f"127.0.0.1:{port}", "127.0.0.1:1"))
    kube = ClusterClient.from_kubeconfig(str(broken), cluster, options=ClientOptions(timeout=5))
    try:
        with pytest.raises(errors.ServerError) as caught:
            kube.list("v1", "Namespace")
        assert "cannot reach the apiserver" in str(caught.value)
    finally:
        kube.close()


def test_an_unknown_context_is_a_config_error(fleet: FleetHandle) -> None:
    with pytest.raises(errors.ConfigError, match="no-such-context"):
        ClusterClient.from_kubeconfig(str(fleet.kubeconfig), "no-such-context")


def test_kinds_outside_the_table_are_found_by_discovery(kube: ClusterClient) -> None:
    rt = kube.resource("scheduling.k8s.io/v1", "PriorityClass")
    assert (rt.plural, rt.namespaced) == ("priorityclasses", False)
    with pytest.raises(errors.NotFound, match="does not serve"):
        kube.resource("nothing.example.org/v1", "Thing")


def test_watch_sees_changes(kube: ClusterClient, namespace: str) -> None:
    start = kube.list("v1", "ConfigMap", namespace=namespace).resource_version
    seen: list[WatchEvent] = []

    def watch() -> None:
        for event in kube.watch(
            "v1", "ConfigMap", namespace=namespace, resource_version=start, timeout_seconds=5
        ):
            seen.append(event)
            if event.type == "DELETED" and event.object["metadata"]["name"] == "w":
                return

    thread = threading.Thread(target=watch)
    thread.start()
    kube.apply(config_map(namespace, "w", a="1"))
    kube.apply(config_map(namespace, "w", a="2"))
    kube.delete("v1", "ConfigMap", "w", namespace)
    thread.join(timeout=30)
    # Other ConfigMaps (the controller manager's kube-root-ca.crt) may appear in the namespace too.
    changes = [e.type for e in seen if e.type != "BOOKMARK" and e.object["metadata"]["name"] == "w"]
    assert changes == ["ADDED", "MODIFIED", "DELETED"]
