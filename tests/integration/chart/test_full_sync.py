"""A full sync under the chart's ServiceAccount identity on a real apiserver with RBAC.

The chart is rendered with the real helm binary and applied; its agent pod is laid out in a folder
(the rendered ConfigMap's files, a bound token of the chart's ServiceAccount where the kubelet would
mount it, the container's args and env). syncer then runs as that pod would, with no credentials but
the ServiceAccount's: a signed commit of a small fleet repository in a real bare git remote is
verified, applied, gated on the health the controller (same identity) reports, and recorded.

The controller watches one namespace (``controller.watchNamespace``): the fleet is shared with other
tests, and a cluster-wide controller would reconcile their RedisClusters too.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import ssl
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client, config

from syncer.domain.sync_state import SyncPhase
from syncer.errors import NotFound
from syncer.kube import ClusterClient
from syncer.status import StateStore
from tests.integration.chart import test_on_apiserver as on_apiserver
from tests.integration.chart.kit import LocalPod, agent_values, local_pod, only
from tests.integration.conftest import FleetHandle
from tests.integration.controller.kit import is_ready
from tests.integration.verify.kit import GitRepo, Keys, SshKey, bare_remote
from tests.support.waiting import eventually

pytestmark = pytest.mark.integration

# The chart's install fixture and the second namespace (the one the controller watches), shared.
install = on_apiserver.install
other_namespace = on_apiserver.other_namespace

RC_API = "redis.syncer.dev/v1alpha1"
TARGET = "home"  # the cluster's name in fleet.yaml; the chart reaches it in-cluster
IN_CLUSTER = "in-cluster"  # the context of the chart's in-cluster kubeconfig
ROLLOUT = {
    "waves": [{"name": "all", "percent": 100}],
    "defaults": {"maxConcurrent": 1, "healthTimeout": "2m", "bake": "1s"},
}
REFUSED = re.compile(r"forbidden|(?<![\w.:-])403(?![\w.:-])", re.IGNORECASE)


@pytest.fixture(scope="module")
def key(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SshKey]:
    with Keys(tmp_path_factory.mktemp("keys")) as keys:
        yield keys.ssh("ops")


@dataclass
class FleetRepo:
    """A fleet repository with one target cluster, pushed to a bare remote."""

    remote: Path
    work: GitRepo
    key: SshKey

    @classmethod
    def create(cls, root: Path, key: SshKey) -> FleetRepo:
        return cls(bare_remote(root / "remote.git"), GitRepo(root / "work"), key)

    def commit(self, app: str) -> str:
        fleet_file = {
            "apiVersion": "syncer.dev/v1alpha1",
            "kind": "Fleet",
            "defaults": {"namespace": app},
            "clusters": [{"name": TARGET, "labels": {"tier": "prod"}}],
        }
        objects = [
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": app, "labels": {"team": "cache"}}},
            {
                "apiVersion": RC_API,
                "kind": "RedisCluster",
                "metadata": {"name": "sessions", "namespace": app},
                "spec": {
                    "shards": 1,
                    "replicasPerShard": 1,
                    "version": "7.2.4",
                    "persistence": {"enabled": False},
                },
            },
        ]
        files = {"fleet.yaml": yaml.safe_dump(fleet_file), "base/objects.yaml": yaml.safe_dump_all(objects)}
        sha = self.work.commit("sessions cache", files, sign=self.key)
        self.work.git("push", "-q", str(self.remote), "main")
        return sha


def chart_values(remote: Path, app: str, key: SshKey) -> dict[str, Any]:
    # A file:// URL: the remote is outside the pod's folders, so its path is not one to rewrite.
    return agent_values(
        git={"url": remote.as_uri()},
        trustPolicy={"mode": "head", "signers": [{"name": "ops", "ssh": key.public_line}]},
        rolloutPolicy=ROLLOUT,
        clusters={"targets": {TARGET: {"inCluster": True}}},
        controller={"watchNamespace": app},
        replicaCount=1,
    )


def whoami(kubeconfig: str) -> str:
    """The user the apiserver sees behind ``kubeconfig`` (a SelfSubjectReview)."""
    configuration = client.Configuration()
    config.load_kube_config(config_file=kubeconfig, context=IN_CLUSTER, client_configuration=configuration)
    with client.ApiClient(configuration) as api:
        review = client.AuthenticationV1Api(api).create_self_subject_review({})
    return str(review.status.user_info.username)


def _env(pod: LocalPod) -> dict[str, str]:
    """The container's env and nothing else of this machine's but PATH (and PYTHONPATH, so that the
    syncer under test is the one imported): no credentials leak in."""
    found = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LC_ALL": "C.UTF-8", **pod.env}
    if os.environ.get("PYTHONPATH"):
        found["PYTHONPATH"] = os.environ["PYTHONPATH"]
    return found


def start(pod: LocalPod, args: list[str], log: str) -> subprocess.Popen[bytes]:
    with (pod.root / log).open("wb") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "syncer", *args],
            cwd=pod.root,
            env=_env(pod),
            stdout=out,
            stderr=subprocess.STDOUT,
        )


def stop(process: subprocess.Popen[bytes], timeout: float = 90) -> int:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
    try:
        return process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=10)
        raise


def refusals(text: str) -> list[str]:
    return [line for line in text.splitlines() if REFUSED.search(line)]


def managers(obj: dict[str, Any]) -> set[tuple[str, str]]:
    return {(m["manager"], m["operation"]) for m in obj["metadata"].get("managedFields") or []}


def remove_app(admin: ClusterClient, app: str) -> None:
    """Delete the RedisCluster while its controller still runs, so that it releases its finalizer."""
    try:
        admin.delete(RC_API, "RedisCluster", "sessions", app)
    except NotFound:
        return

    def gone() -> bool:
        return not admin.list(RC_API, "RedisCluster", namespace=app).items

    eventually("the controller to release the RedisCluster", gone, 60)


@dataclass
class Setup:
    """The chart installed for a fresh fleet repository, its pod laid out, and an admin client."""

    pod: LocalPod
    repo: FleetRepo
    admin: ClusterClient
    namespace: str  # the release's: state, Leases, events about syncs
    app: str  # the fleet repository's, watched by the controller


@pytest.fixture
def setup(  # fixtures by keyword: pytest passes them by name
    *,
    fleet: FleetHandle,
    cluster: str,
    namespace: str,
    other_namespace: str,
    install: Any,
    key: SshKey,
    tmp_path: Path,
) -> Iterator[Setup]:
    repo = FleetRepo.create(tmp_path / "git", key)
    installed = install(chart_values(repo.remote, other_namespace, key))
    pod = local_pod(installed.objects, tmp_path / "pod", installed.kubeconfig, cluster, namespace)
    account = only(installed.objects, "ServiceAccount")["metadata"]["name"]
    # The processes get this kubeconfig and nothing else: every request is the ServiceAccount's.
    assert whoami(pod.env["KUBECONFIG"]) == f"system:serviceaccount:{namespace}:{account}"
    assert pod.flag("state-namespace") == namespace
    assert pod.flag("watch-namespace") == other_namespace
    admin = ClusterClient.from_kubeconfig(str(fleet.kubeconfig), cluster)
    try:
        yield Setup(pod, repo, admin, namespace, other_namespace)
    finally:
        admin.close()


def test_sync_once_as_the_charts_service_account_applies_gates_and_records(setup: Setup) -> None:
    pod, admin, namespace, app = setup.pod, setup.admin, setup.namespace, setup.app
    revision = setup.repo.commit(app)
    kubeconfig = pod.env["KUBECONFIG"]
    controller = start(
        pod,
        [
            "controller",
            f"--kubeconfig={kubeconfig}",
            f"--context={IN_CLUSTER}",
            f"--watch-namespace={app}",
            "--no-leader-elect",
            "--metrics-port=0",
            f"--workers={pod.flag('workers')}",
            "--no-topology",
        ],
        "controller.log",
    )
    try:
        sync = subprocess.run(
            [
                sys.executable,
                "-m",
                "syncer",
                "sync",
                "--once",
                f"--config={pod.flag('config')}",
                f"--rollout-policy={pod.flag('rollout-policy')}",
                f"--state-namespace={pod.flag('state-namespace')}",
                f"--kubeconfig={kubeconfig}",
                # The pass holds the fleet's Lease where the chart's agent would (its RBAC allows it).
                f"--lease-namespace={pod.flag('lease-namespace')}",
            ],
            cwd=pod.root,
            env=_env(pod),
            capture_output=True,
            text=True,
            timeout=240,
            check=False,
        )
        output = sync.stdout + sync.stderr
        assert sync.returncode == 0, output
        assert not refusals(output), output

        # The gate waited for the controller's health: Ready when the sync ends.
        live = admin.get(RC_API, "RedisCluster", "sessions", app)
        assert is_ready(live), live.get("status")
        assert ("syncer", "Apply") in managers(live)
        assert ("syncer", "Apply") in managers(admin.get("v1", "Namespace", app))
        assert admin.get("v1", "Namespace", app)["metadata"]["labels"]["team"] == "cache"

        # The sync state, written as the ServiceAccount in the chart's state namespace.
        state_map = admin.get("v1", "ConfigMap", "syncer-sync-state", namespace)
        assert ("syncer-state", "Apply") in managers(state_map)
        state = StateStore(admin, namespace).load().state
        assert (state.revision, state.phase, state.last_good) == (revision, SyncPhase.HEALTHY, revision)
        assert {(e.kind, e.namespace, e.name) for e in state.inventory} >= {
            ("Namespace", "", app),
            ("RedisCluster", app, "sessions"),
        }

        # Events about the sync, created as the ServiceAccount (a refused event is dropped silently).
        events = admin.list("events.k8s.io/v1", "Event", namespace=namespace).items
        reasons = {e["reason"] for e in events if e.get("reportingController") == "syncer.dev/agent"}
        assert {"Applied", "WaveHealthy"} <= reasons, reasons
    finally:
        remove_app(admin, app)
        code = stop(controller)
    log = (pod.root / "controller.log").read_text(errors="replace")
    assert code == 0, log
    assert not refusals(log), log


def test_the_rendered_command_line_leads_syncs_and_reconciles_as_the_service_account(
    setup: Setup,
) -> None:
    """The container's own command line: leader election for the agent and its embedded controller
    through Leases in the release namespace, then a full sync, all as the chart's ServiceAccount."""
    pod, admin, namespace, app = setup.pod, setup.admin, setup.namespace, setup.app
    revision = setup.repo.commit(app)
    with socket.socket() as probe:  # a free port for the admission webhook the pod serves
        probe.bind(("127.0.0.1", 0))
        admission_port = probe.getsockname()[1]
    args = [re.sub(r"^--(http|probe)-port=.*", r"--\1-port=0", a) for a in pod.args]
    args = [re.sub(r"^--admission-port=.*", f"--admission-port={admission_port}", a) for a in args]
    assert args[0] == "run"
    assert "--controller" in args
    agent = start(pod, args, "agent.log")
    try:

        def synced() -> bool:
            state = StateStore(admin, namespace).load().state
            return state.revision == revision and state.phase is SyncPhase.HEALTHY

        eventually("the agent to sync the revision", synced, 180, every=1.0)
        assert agent.poll() is None
        live = admin.get(RC_API, "RedisCluster", "sessions", app)
        assert is_ready(live), live.get("status")
        assert ("syncer", "Apply") in managers(live)
        # Both Leases in the release namespace are held by this process (as it logged acquiring them).
        log = (pod.root / "agent.log").read_text(errors="replace")
        for lease in ("syncer-agent", "syncer-controller"):
            held = admin.get("coordination.k8s.io/v1", "Lease", lease, namespace)
            acquired = re.search(rf"acquired lease {namespace}/{lease} as ([\w.-]+)", log)
            assert acquired, log
            assert held["spec"].get("holderIdentity") == acquired.group(1), held
        events = admin.list("events.k8s.io/v1", "Event", namespace=namespace).items
        assert any(e["reason"] == "Applied" for e in events), [e["reason"] for e in events]
        # The pod serves the admission webhook with the certificate the chart made for its Service.
        tls = pod.root / "volumes" / "admission-tls"
        context = ssl.create_default_context(cafile=str(tls / "ca.crt"))
        service = f"{pod.env['POD_NAME'].removesuffix('-0')}.{namespace}.svc"  # the Deployment's name
        with (
            socket.create_connection(("127.0.0.1", admission_port), timeout=10) as raw,
            context.wrap_socket(raw, server_hostname=service) as conn,
        ):
            conn.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            assert conn.recv(64).startswith(b"HTTP/1.1 200")
    finally:
        remove_app(admin, app)
        code = stop(agent)
    log = (pod.root / "agent.log").read_text(errors="replace")
    assert code == 0, log
    assert not refusals(log), log
