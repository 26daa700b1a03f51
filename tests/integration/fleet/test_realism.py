"""The local fleet behaves like real Kubernetes where syncer depends on it.

Each test exercises one behaviour against the real kube-apiserver, controller manager, scheduler and
kwok of the session fleet: server-side apply and managedFields, StatefulSet rollout to Ready pods,
owner-reference garbage collection, RBAC denial and field-manager conflicts.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, config
from kubernetes.client.exceptions import ApiException
from kubernetes.dynamic import DynamicClient
from kubernetes.dynamic.exceptions import ConflictError, UnprocessibleEntityError

from devfleet import access
from tests.integration.conftest import FleetHandle
from tests.support.waiting import eventually

pytestmark = pytest.mark.integration

GROUP = "realism.syncer.dev"
WIDGET_CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": f"widgets.{GROUP}"},
    "spec": {
        "group": GROUP,
        "scope": "Namespaced",
        "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "properties": {
                            "spec": {
                                "type": "object",
                                "properties": {
                                    "size": {"type": "integer", "minimum": 1},
                                    "color": {"type": "string"},
                                },
                            }
                        },
                    }
                },
            }
        ],
    },
}


@pytest.fixture(scope="module")
def widgets(fleet: FleetHandle) -> Any:
    """The Widget CRD installed on the first cluster, as a dynamic resource."""
    api_client = fleet.api(fleet.names[0])
    ext = client.ApiextensionsV1Api(api_client)
    ext.create_custom_resource_definition(WIDGET_CRD)

    def established() -> bool:
        crd = ext.read_custom_resource_definition(f"widgets.{GROUP}")
        return any(c.type == "Established" and c.status == "True" for c in crd.status.conditions or [])

    eventually("the Widget CRD to be Established", established, 60.0)
    return DynamicClient(api_client).resources.get(api_version=f"{GROUP}/v1", kind="Widget")


def widget(namespace: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP}/v1",
        "kind": "Widget",
        "metadata": {"name": "w", "namespace": namespace},
        "spec": spec,
    }


def test_server_side_apply_of_a_custom_resource_records_syncer_as_field_manager(
    fleet: FleetHandle, cluster: str, namespace: str, widgets: Any
) -> None:
    dyn = DynamicClient(fleet.api(cluster))
    applied = dyn.server_side_apply(
        widgets, body=widget(namespace, size=3, color="red"), field_manager="syncer"
    )
    assert applied.spec.size == 3

    live = widgets.get(name="w", namespace=namespace).to_dict()
    entries = live["metadata"]["managedFields"]
    assert [(e["manager"], e["operation"]) for e in entries] == [("syncer", "Apply")]
    owned = entries[0]["fieldsV1"]["f:spec"]
    assert set(owned) == {"f:size", "f:color"}


def test_server_side_apply_is_validated_by_the_crd_schema(
    fleet: FleetHandle, cluster: str, namespace: str, widgets: Any
) -> None:
    dyn = DynamicClient(fleet.api(cluster))
    with pytest.raises(UnprocessibleEntityError) as caught:
        dyn.server_side_apply(widgets, body=widget(namespace, size=0), field_manager="syncer")
    assert caught.value.status == 422
    causes = json.loads(caught.value.body)["details"]["causes"]
    assert [c["field"] for c in causes] == ["spec.size"]
    assert "should be greater than or equal to 1" in causes[0]["message"]


def test_a_second_manager_changing_a_syncer_field_conflicts_without_force(
    fleet: FleetHandle, cluster: str, namespace: str, widgets: Any
) -> None:
    dyn = DynamicClient(fleet.api(cluster))
    dyn.server_side_apply(widgets, body=widget(namespace, size=3, color="red"), field_manager="syncer")

    with pytest.raises(ConflictError) as caught:
        dyn.server_side_apply(widgets, body=widget(namespace, color="blue"), field_manager="intruder")
    assert caught.value.status == 409
    causes = json.loads(caught.value.body)["details"]["causes"]
    assert causes == [
        {"reason": "FieldManagerConflict", "message": 'conflict with "syncer"', "field": ".spec.color"}
    ]
    assert widgets.get(name="w", namespace=namespace).spec.color == "red"

    dyn.server_side_apply(
        widgets, body=widget(namespace, color="blue"), field_manager="intruder", force_conflicts=True
    )
    live = widgets.get(name="w", namespace=namespace).to_dict()
    assert live["spec"]["color"] == "blue"
    managers = {e["manager"]: e["fieldsV1"]["f:spec"] for e in live["metadata"]["managedFields"]}
    assert set(managers["intruder"]) == {"f:color"}
    assert set(managers["syncer"]) == {"f:size"}


def statefulset(namespace: str, replicas: int) -> dict[str, Any]:
    labels = {"app": "redis"}
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": "redis", "namespace": namespace},
        "spec": {
            "replicas": replicas,
            "serviceName": "redis",
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "redis", "image": "redis:7.0"}]},
            },
        },
    }


def test_a_statefulset_becomes_ready_through_scheduler_and_kwok(
    fleet: FleetHandle, cluster: str, namespace: str
) -> None:
    apps = client.AppsV1Api(fleet.api(cluster))
    core = client.CoreV1Api(fleet.api(cluster))
    apps.create_namespaced_stateful_set(namespace, statefulset(namespace, 3))

    def all_ready() -> bool:
        sts = apps.read_namespaced_stateful_set("redis", namespace)
        return (sts.status.ready_replicas or 0) == 3

    eventually("3 ready replicas", all_ready, 60.0)
    pods = core.list_namespaced_pod(namespace, label_selector="app=redis").items
    assert sorted(p.metadata.name for p in pods) == ["redis-0", "redis-1", "redis-2"]
    assert all(p.spec.node_name.startswith("kwok-node-") for p in pods)
    assert all(p.status.phase == "Running" for p in pods)


def test_deleting_an_owner_garbage_collects_its_dependents(
    fleet: FleetHandle, cluster: str, namespace: str
) -> None:
    core = client.CoreV1Api(fleet.api(cluster))
    owner = core.create_namespaced_config_map(namespace, {"metadata": {"name": "owner"}})
    reference = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "name": "owner",
        "uid": owner.metadata.uid,
        "blockOwnerDeletion": True,
    }
    for name in ("child-a", "child-b"):
        core.create_namespaced_config_map(
            namespace, {"metadata": {"name": name, "ownerReferences": [reference]}}
        )
    core.create_namespaced_config_map(namespace, {"metadata": {"name": "bystander"}})

    core.delete_namespaced_config_map("owner", namespace, propagation_policy="Background")

    def children_gone() -> bool:
        names = {cm.metadata.name for cm in core.list_namespaced_config_map(namespace).items}
        return not names & {"owner", "child-a", "child-b"}

    eventually("the garbage collector to delete the dependents", children_gone, 60.0)
    names = {cm.metadata.name for cm in core.list_namespaced_config_map(namespace).items}
    assert "bystander" in names


def test_a_user_without_the_permission_is_forbidden(
    fleet: FleetHandle, cluster: str, namespace: str, tmp_path: Path
) -> None:
    path = access.user_kubeconfig(
        fleet.state, cluster, "reader", ("readers",), tmp_path / "reader.kubeconfig"
    )
    rbac = client.RbacAuthorizationV1Api(fleet.api(cluster))
    rbac.create_namespaced_role(
        namespace,
        {
            "metadata": {"name": "configmap-reader"},
            "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list"]}],
        },
    )
    rbac.create_namespaced_role_binding(
        namespace,
        {
            "metadata": {"name": "reader"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "configmap-reader"},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "reader"}],
        },
    )
    reader_client = config.new_client_from_config(config_file=str(path), context=cluster)
    try:
        reader = client.CoreV1Api(reader_client)

        def can_list() -> bool:
            try:
                reader.list_namespaced_config_map(namespace)
            except ApiException as err:
                if err.status == 403:
                    return False
                raise
            return True

        eventually("the RoleBinding to take effect", can_list, 60.0)
        with pytest.raises(ApiException) as caught:
            reader.create_namespaced_config_map(namespace, {"metadata": {"name": "nope"}})
        assert caught.value.status == 403
        status = json.loads(caught.value.body)
        assert status["reason"] == "Forbidden"
        assert 'User "reader" cannot create resource "configmaps"' in status["message"]
        with pytest.raises(ApiException) as caught:
            reader.list_namespaced_secret(namespace)
        assert caught.value.status == 403
    finally:
        reader_client.close()


def test_a_service_account_token_authenticates_as_that_service_account(
    fleet: FleetHandle, cluster: str, namespace: str, tmp_path: Path
) -> None:
    core = client.CoreV1Api(fleet.api(cluster))
    core.create_namespaced_service_account(namespace, {"metadata": {"name": "agent"}})
    path = access.service_account_kubeconfig(
        fleet.state, cluster, namespace, "agent", tmp_path / "sa.kubeconfig"
    )
    sa_client = config.new_client_from_config(config_file=str(path), context=cluster)
    try:
        review = client.AuthenticationV1Api(sa_client).create_self_subject_review({})
        assert review.status.user_info.username == f"system:serviceaccount:{namespace}:agent"
        with pytest.raises(ApiException) as caught:
            client.CoreV1Api(sa_client).list_namespaced_pod(namespace)
        assert caught.value.status == 403
    finally:
        sa_client.close()
