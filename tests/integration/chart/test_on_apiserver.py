"""The rendered chart on a real apiserver with RBAC and PodSecurity admission: it applies, its pod passes
``restricted``, and its ServiceAccount may do exactly what syncer needs, proven as that identity."""

from __future__ import annotations

import copy
import hashlib
import json
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from devfleet import access
from syncer.controller.model import CONTROLLER_LEASE, ControllerOptions
from syncer.errors import Forbidden
from syncer.kube import ApplyOptions, ClusterClient
from tests.integration.chart.kit import agent_values, only, render
from tests.integration.conftest import FleetHandle
from tests.integration.controller.kit import controller_running, is_ready, redis_cluster
from tests.support.waiting import eventually

pytestmark = pytest.mark.integration

CRD_NAME = "redisclusters.redis.syncer.dev"
RC = ("redis.syncer.dev", "redisclusters")
Row = tuple[bool, str, str, str, str, str]  # allowed, verb, group, resource, namespace, name


@dataclass
class Installed:
    """A rendered release applied to the cluster, and a kubeconfig of its ServiceAccount."""

    release: str
    namespace: str
    objects: list[dict[str, Any]]
    kubeconfig: Path
    apply_stderr: str


def _kubectl(fleet: FleetHandle, cluster: str, *args: str) -> subprocess.CompletedProcess[str]:
    argv = ["kubectl", "--kubeconfig", str(fleet.kubeconfig), "--context", cluster, *args]
    return subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)


def _apply_crd(fleet: FleetHandle, cluster: str, crd: dict[str, Any]) -> None:
    """The chart's CRD, applied like the other suites apply it (it is shared by the whole session)."""
    kube = ClusterClient.from_kubeconfig(str(fleet.kubeconfig), cluster)
    try:
        kube.apply(crd, ApplyOptions(field_manager="syncer-tests", force=True))

        def served() -> bool:
            live = kube.get("apiextensions.k8s.io/v1", "CustomResourceDefinition", CRD_NAME)
            conditions = (live.get("status") or {}).get("conditions") or []
            return any(c["type"] == "Established" and c["status"] == "True" for c in conditions)

        eventually("the CRD to be Established", served, 30)
    finally:
        kube.close()


@pytest.fixture
def install(
    fleet: FleetHandle, cluster: str, namespace: str, tmp_path: Path, request: pytest.FixtureRequest
) -> Iterator[Any]:
    """``install(values)`` renders the chart as a release unique to this test and applies it with
    ``kubectl apply --server-side``; cluster-scoped objects are deleted afterwards."""
    digest = hashlib.sha1(request.node.nodeid.encode()).hexdigest()[:8]
    rendered_files: list[Path] = []

    def _install(values: dict[str, Any], suffix: str = "") -> Installed:
        release = f"syncer-{digest}{suffix}"
        objects = render(tmp_path, values, release=release, namespace=namespace, include_crds=True)
        crds = [o for o in objects if o["kind"] == "CustomResourceDefinition"]
        assert [c["metadata"]["name"] for c in crds] == [CRD_NAME]
        _apply_crd(fleet, cluster, crds[0])
        # The webhook configuration stays out: the local fleet has no pod network through which the
        # apiserver could reach a webhook behind a Service (test_admission.py applies it by URL).
        rest = [
            o
            for o in objects
            if o["kind"] not in ("CustomResourceDefinition", "ValidatingWebhookConfiguration")
        ]
        path = tmp_path / f"{release}.yaml"
        path.write_text(yaml.safe_dump_all(rest), encoding="utf-8")
        rendered_files.append(path)
        done = _kubectl(
            fleet, cluster, "apply", "--server-side", "--field-manager=helm-test", "-f", str(path)
        )
        assert done.returncode == 0, done.stderr
        account = only(rest, "ServiceAccount")["metadata"]["name"]
        out = tmp_path / f"{release}.kubeconfig"
        kubeconfig = access.service_account_kubeconfig(fleet.state, cluster, namespace, account, out)
        return Installed(release, namespace, objects, kubeconfig, done.stderr)

    yield _install
    for path in reversed(rendered_files):
        done = _kubectl(fleet, cluster, "delete", "--ignore-not-found", "--wait=false", "-f", str(path))
        assert done.returncode == 0, done.stderr


@pytest.fixture
def other_namespace(fleet: FleetHandle, cluster: str, namespace: str) -> Iterator[str]:
    """A second namespace for this test (the one the controller watches)."""
    with fleet.made_namespace(cluster, f"{namespace[:50]}-w") as name:
        yield name


def _can(api: client.ApiClient, row: Row) -> bool:
    _, verb, group, resource, namespace, name = row
    resource, _, subresource = resource.partition("/")
    attributes = client.V1ResourceAttributes(
        verb=verb,
        group=group,
        resource=resource,
        subresource=subresource or None,
        namespace=namespace or None,
        name=name or None,
    )
    review = client.V1SelfSubjectAccessReview(
        spec=client.V1SelfSubjectAccessReviewSpec(resource_attributes=attributes)
    )
    status = client.AuthorizationV1Api(api).create_self_subject_access_review(review).status
    return bool(status.allowed)


def _check_table(kubeconfig: Path, cluster: str, rows: list[Row]) -> None:
    api = client.ApiClient(_config(kubeconfig, cluster))
    try:
        wrong = [_describe(row) for row in rows if _can(api, row) != row[0]]
    finally:
        api.close()
    assert not wrong, "unexpected access:\n" + "\n".join(wrong)


def _describe(row: Row) -> str:
    allowed, verb, group, resource, namespace, name = row
    got = "denied" if allowed else "allowed"
    return f"{got}: {verb} {group or 'core'}/{resource} in {namespace or 'all namespaces'} {name}".rstrip()


def _config(kubeconfig: Path, cluster: str) -> client.Configuration:
    from kubernetes import config

    configuration = client.Configuration()
    config.load_kube_config(config_file=str(kubeconfig), context=cluster, client_configuration=configuration)
    return configuration


def _denied_everywhere(ns: str) -> list[Row]:
    """What neither the agent nor the controller ever needs, in any mode."""
    return [
        (False, "create", "", "secrets", ns, ""),
        (False, "update", "", "secrets", "kube-system", "x"),
        (False, "delete", "", "secrets", ns, "x"),
        (False, "list", "", "nodes", "", ""),
        (False, "get", "", "nodes", "", "n"),
        (False, "patch", "", "nodes", "", "n"),
        (False, "create", "rbac.authorization.k8s.io", "clusterroles", "", ""),
        (False, "bind", "rbac.authorization.k8s.io", "clusterroles", "", "cluster-admin"),
        (False, "escalate", "rbac.authorization.k8s.io", "clusterroles", "", "x"),
        (False, "create", "rbac.authorization.k8s.io", "rolebindings", ns, ""),
        (False, "create", "", "pods/exec", ns, "x"),
        (False, "get", "", "pods/exec", "default", "x"),
        (False, "create", "", "pods/portforward", ns, "x"),
        (False, "create", "", "pods", ns, ""),
        (False, "delete", "", "pods", ns, "x"),
        (False, "delete", "apiextensions.k8s.io", "customresourcedefinitions", "", CRD_NAME),
        (False, "create", "apiextensions.k8s.io", "customresourcedefinitions", "", ""),
        (False, "patch", "apiextensions.k8s.io", "customresourcedefinitions", "", CRD_NAME),
        (False, "impersonate", "", "users", "", "admin"),
        (False, "impersonate", "", "serviceaccounts", ns, "default"),
        (False, "create", "", "serviceaccounts/token", ns, "x"),
        (False, "patch", "apps", "deployments", ns, "x"),
        (False, "create", "apps", "deployments", ns, ""),
        (False, "create", "coordination.k8s.io", "leases", "kube-system", ""),
        (False, "update", "coordination.k8s.io", "leases", "kube-node-lease", "x"),
        (False, "create", "", "persistentvolumes", "", ""),
        (False, "delete", "", "services", ns, "x"),
        (False, "delete", "", "configmaps", ns, "syncer-sync-state"),
        (False, "create", "admissionregistration.k8s.io", "validatingwebhookconfigurations", "", ""),
        (False, "create", "certificates.k8s.io", "certificatesigningrequests", "", ""),
    ]


def test_default_agent_install_applies_passes_restricted_and_grants_only_its_needs(
    fleet: FleetHandle, cluster: str, namespace: str, install: Any
) -> None:
    core = client.CoreV1Api(fleet.api(cluster))
    enforce = "pod-security.kubernetes.io/enforce"
    core.patch_namespace(
        namespace, {"metadata": {"labels": {enforce: "restricted", f"{enforce}-version": "latest"}}}
    )
    installed = install(agent_values())
    assert "PodSecurity" not in installed.apply_stderr, installed.apply_stderr

    # PodSecurity "restricted" is enforced on pods: the chart's pod template is admitted ...
    template = only(installed.objects, "Deployment")["spec"]["template"]
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "probe", **template["metadata"]},
        "spec": template["spec"],
    }
    core.create_namespaced_pod(namespace, pod, dry_run="All")
    # ... and the same pod without the chart's securityContext is not (the check can fail).
    loose = copy.deepcopy(pod)
    del loose["spec"]["containers"][0]["securityContext"]
    with pytest.raises(ApiException) as refused:
        core.create_namespaced_pod(namespace, loose, dry_run="All")
    assert refused.value.status == 403
    assert 'violates PodSecurity "restricted:latest"' in json.loads(refused.value.body)["message"]

    # Cluster-wide mode: the controller reads Secrets everywhere (documented trade-off), writes none.
    ns, elsewhere = namespace, "default"
    rows: list[Row] = [
        (True, "list", *RC, "", ""),
        (True, "watch", *RC, elsewhere, ""),
        (True, "patch", *RC, elsewhere, "cache"),
        (True, "create", *RC, elsewhere, ""),
        (True, "delete", *RC, elsewhere, "cache"),
        (True, "patch", "redis.syncer.dev", "redisclusters/status", elsewhere, "cache"),
        (True, "update", "redis.syncer.dev", "redisclusters/finalizers", elsewhere, "cache"),
        (False, "update", *RC, elsewhere, "cache"),
        (False, "deletecollection", *RC, elsewhere, ""),
        (True, "create", "", "namespaces", "", ""),
        (True, "delete", "", "namespaces", "", "games"),
        (False, "update", "", "namespaces", "", "games"),
        (True, "get", "", "configmaps", ns, "syncer-sync-state"),
        (True, "patch", "", "configmaps", ns, "syncer-sync-state"),
        (True, "create", "coordination.k8s.io", "leases", ns, ""),
        (True, "update", "coordination.k8s.io", "leases", ns, "syncer-controller"),
        # One Event writer for the agent and the controller, events.k8s.io only: no core Events.
        (False, "create", "", "events", elsewhere, ""),
        (True, "create", "events.k8s.io", "events", elsewhere, ""),
        (True, "create", "apps", "statefulsets", elsewhere, ""),
        (True, "delete", "apps", "statefulsets", elsewhere, "cache-shard-1"),
        (True, "patch", "policy", "poddisruptionbudgets", elsewhere, "cache-shard-0"),
        (True, "delete", "", "persistentvolumeclaims", elsewhere, "data-cache-shard-0-0"),
        (True, "get", "", "secrets", elsewhere, "cache-auth"),
        (False, "list", "", "pods", elsewhere, ""),
        (False, "list", "coordination.k8s.io", "leases", "kube-system", ""),
        *_denied_everywhere(ns),
    ]
    _check_table(installed.kubeconfig, cluster, rows)

    # Real requests as the ServiceAccount, through syncer's own client.
    kube = ClusterClient.from_kubeconfig(str(installed.kubeconfig), cluster)
    try:
        state = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "syncer-sync-state", "namespace": ns},
            "data": {"state.json": "{}"},
        }
        kube.apply(state, ApplyOptions(field_manager="syncer-state", force=True))  # creates it
        assert kube.get("v1", "ConfigMap", "syncer-sync-state", ns)["data"] == {"state.json": "{}"}
        lease = {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": "lock", "namespace": ns},
        }
        kube.create(lease)
        assert kube.list("redis.syncer.dev/v1alpha1", "RedisCluster").items is not None
        with pytest.raises(Forbidden):
            kube.list("v1", "Node")
        with pytest.raises(Forbidden):
            kube.delete("apiextensions.k8s.io/v1", "CustomResourceDefinition", CRD_NAME)
        with pytest.raises(Forbidden):
            kube.create({**lease, "metadata": {"name": "lock", "namespace": "kube-system"}})
        with pytest.raises(Forbidden):
            kube.list("rbac.authorization.k8s.io/v1", "ClusterRole")
    finally:
        kube.close()


def test_a_watch_namespace_keeps_the_controller_out_of_every_other_namespace(
    fleet: FleetHandle, cluster: str, namespace: str, other_namespace: str, install: Any
) -> None:
    installed = install(agent_values(controller={"watchNamespace": other_namespace}))
    ns, watched = namespace, other_namespace
    rows: list[Row] = [
        (True, "get", "", "secrets", watched, "cache-auth"),
        (True, "watch", "", "secrets", watched, ""),
        (True, "patch", "apps", "statefulsets", watched, "cache-shard-0"),
        (True, "watch", *RC, watched, ""),
        (True, "patch", "redis.syncer.dev", "redisclusters/status", watched, "cache"),
        (True, "list", *RC, "", ""),  # the agent reads what it applied, across namespaces
        (True, "patch", *RC, "default", "cache"),  # and applies what git holds
        (False, "watch", *RC, "", ""),
        (False, "get", "", "secrets", ns, "x"),
        (False, "list", "", "secrets", "kube-system", ""),
        (False, "get", "", "secrets", "default", "x"),
        (False, "watch", "", "secrets", "", ""),
        (False, "list", "apps", "statefulsets", "default", ""),
        (False, "create", "apps", "statefulsets", ns, ""),
        (False, "patch", "", "configmaps", ns, "not-the-state"),
        (False, "get", "", "configmaps", "default", "kube-root-ca.crt"),
        (False, "list", "", "persistentvolumeclaims", "default", ""),
        (False, "patch", "redis.syncer.dev", "redisclusters/status", "default", "cache"),
        (False, "create", "", "events", "default", ""),
        *_denied_everywhere(ns),
    ]
    _check_table(installed.kubeconfig, cluster, rows)
    kube = ClusterClient.from_kubeconfig(str(installed.kubeconfig), cluster)
    try:
        # Only the state Role lets it write a ConfigMap here, and only the one by that name; the
        # apply creates it, so the rule must allow create by name as well as patch.
        state = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "syncer-sync-state", "namespace": ns},
        }
        kube.apply({**state, "data": {"state.json": "{}"}}, ApplyOptions(field_manager="syncer-state"))
        kube.apply({**state, "data": {"state.json": "[]"}}, ApplyOptions(field_manager="syncer-state"))
        assert kube.get("v1", "ConfigMap", "syncer-sync-state", ns)["data"] == {"state.json": "[]"}
        other = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "not-the-state", "namespace": ns},
        }
        with pytest.raises(Forbidden):
            kube.apply(other, ApplyOptions(field_manager="syncer-state"))
        with pytest.raises(Forbidden):
            kube.get("v1", "Secret", "x", "kube-system")
    finally:
        kube.close()


def test_the_controller_reconciles_under_the_charts_identity(
    fleet: FleetHandle, cluster: str, namespace: str, other_namespace: str, install: Any
) -> None:
    """The controller as the chart runs it: the chart's ServiceAccount, leader election in the release
    namespace, RedisClusters of the watched namespace; it builds children, reports Ready, finalizes."""
    installed = install(agent_values(controller={"watchNamespace": other_namespace}))
    admin = ClusterClient.from_kubeconfig(str(fleet.kubeconfig), cluster)
    options = ControllerOptions(
        kubeconfig=str(installed.kubeconfig),
        context=cluster,
        watch_namespace=other_namespace,
        leader_elect=True,
        lease=replace(CONTROLLER_LEASE, namespace=namespace),
        identity="chart-test",
        watch_timeout_seconds=5,
        resync_seconds=30.0,
        poll_seconds=1.0,
    )
    try:
        with controller_running(options):
            admin.create(redis_cluster("cache", other_namespace, shards=1, replicasPerShard=1))
            get = lambda: admin.get("redis.syncer.dev/v1alpha1", "RedisCluster", "cache", other_namespace)  # noqa: E731
            eventually("cache to be Ready under the chart's identity", lambda: is_ready(get()), 90)
            lease = admin.get("coordination.k8s.io/v1", "Lease", options.lease.name, namespace)
            assert lease["spec"]["holderIdentity"] == "chart-test"
            sets = admin.list("apps/v1", "StatefulSet", namespace=other_namespace).items
            assert [s["metadata"]["name"] for s in sets] == ["cache-shard-0"]
            admin.delete("redis.syncer.dev/v1alpha1", "RedisCluster", "cache", other_namespace)

            def gone() -> bool:
                return not admin.list(
                    "redis.syncer.dev/v1alpha1", "RedisCluster", namespace=other_namespace
                ).items

            eventually("the finalizer to be removed by the controller", gone, 60)
    finally:
        admin.close()


def test_controller_mode_grants_a_central_agent_what_it_needs_here(
    fleet: FleetHandle, cluster: str, namespace: str, install: Any, tmp_path: Path
) -> None:
    user = f"central-{namespace[-8:]}"
    values = {
        "mode": "controller",
        "centralAgent": {"enabled": True, "subjects": [{"kind": "User", "name": user}]},
    }
    installed = install(values)
    ns = namespace
    # The controller's own identity: no agent rights here.
    _check_table(
        installed.kubeconfig,
        cluster,
        [
            (True, "watch", *RC, "", ""),
            (False, "delete", *RC, "default", "cache"),
            (False, "create", "", "namespaces", "", ""),
            (False, "patch", "", "namespaces", "", "default"),
            *_denied_everywhere(ns),
        ],
    )
    # The central agent's identity: apply and prune RedisClusters and Namespaces, its state; nothing else.
    central = access.user_kubeconfig(fleet.state, cluster, user, (), tmp_path / "central.kubeconfig")
    _check_table(
        central,
        cluster,
        [
            (True, "patch", *RC, "default", "cache"),
            (True, "delete", *RC, "default", "cache"),
            (True, "create", "", "namespaces", "", ""),
            (True, "patch", "", "configmaps", ns, "syncer-sync-state"),
            (True, "create", "events.k8s.io", "events", "default", ""),
            (False, "watch", *RC, "", ""),
            (False, "get", "", "secrets", "default", "x"),
            (False, "list", "", "secrets", ns, ""),
            (False, "patch", "apps", "statefulsets", "default", "x"),
            (False, "create", "coordination.k8s.io", "leases", ns, ""),
            (False, "patch", "", "configmaps", ns, "not-the-state"),
            *_denied_everywhere(ns),
        ],
    )
