"""What the fault drills of real ``syncer run`` processes share: a fast three-wave policy, signed
commits giving each cluster its own RedisCluster version (or pods that never become Ready), the
live objects and their generation, Lease flags, and an identity of its own for the agent on one
cluster, whose RBAC a drill can narrow and widen again."""

from __future__ import annotations

import contextlib
import json
import uuid
from typing import Any

import yaml

from devfleet import access
from syncer.errors import NotFound
from syncer.kube import ClusterClient
from tests.integration.agent.procs import AgentProc
from tests.integration.agent.test_agent_process import RC_API, Rig, redis_cluster
from tests.support.waiting import eventually

# A wave of FAST is healthy within about 2 s of its apply on a busy machine; a cluster held not Ready
# fails its wave after HEALTH_TIMEOUT, which the drills of failing waves wait out: 8 s is ample
# margin for the one and no more waiting than that for the other.
HEALTH_TIMEOUT = 8
FAST: dict[str, Any] = {
    "waves": [
        {"name": "canary", "percent": 1, "selector": {"matchLabels": {"tier": "canary"}}},
        {"name": "eu", "percent": 67, "selector": {"matchLabels": {"region": "eu"}}},
        {"name": "us", "percent": 100, "selector": {"matchLabels": {"region": "us"}}},
    ],
    "defaults": {"maxConcurrent": 1, "healthTimeout": f"{HEALTH_TIMEOUT}s", "bake": "1s"},
    "rollback": True,
}
LEASE = {"duration": 4, "deadline": 3, "retry": 1}
RBAC = "rbac.authorization.k8s.io/v1"


def write_policy(rig: Rig, name: str, policy: dict[str, Any]) -> str:
    (rig.root / name).write_text(yaml.safe_dump(policy))
    return name


def commit_per_cluster(rig: Rig, message: str, versions: dict[str, str], hold: tuple[str, ...] = ()) -> str:
    """A signed commit giving each cluster its own RedisCluster version; clusters in ``hold`` get pods
    that never become Ready."""
    files = {
        "base/objects.yaml": yaml.safe_dump(
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": rig.namespace}}
        )
    }
    for name, version in versions.items():
        rc = redis_cluster(rig.namespace, version)
        if name in hold:
            rc["spec"]["podMetadata"] = {"labels": {"kwok.syncer.dev/hold-not-ready": "true"}}
        files[f"clusters/{name}/rc.yaml"] = yaml.safe_dump(rc)
    sha = rig.work.commit(message, files, sign=rig.key)
    rig.work.git("push", "-q", str(rig.remote), "main")
    return sha


def live_version(client: ClusterClient, namespace: str) -> str:
    try:
        return str(client.get(RC_API, "RedisCluster", "sessions", namespace)["spec"]["version"])
    except NotFound:
        return ""


def live_generation(client: ClusterClient, namespace: str) -> int:
    """The RedisCluster's ``metadata.generation``: the apiserver raises it on every change of its spec,
    so it counts every apply that changed something, however briefly (0 while there is none)."""
    try:
        return int(client.get(RC_API, "RedisCluster", "sessions", namespace)["metadata"]["generation"])
    except NotFound:
        return 0


def live_ready(client: ClusterClient, namespace: str) -> bool:
    """True when the RedisCluster reports the Ready condition True for its current spec."""
    try:
        rc = client.get(RC_API, "RedisCluster", "sessions", namespace)
    except NotFound:
        return False
    status = rc.get("status") or {}
    if status.get("observedGeneration") != rc["metadata"]["generation"]:
        return False
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions") or ())


def lease_flags(rig: Rig, context: str) -> list[str]:
    return [
        "--leader-elect",
        "--lease-namespace",
        rig.lease_namespace,
        "--lease-context",
        context,
        "--lease-duration",
        f"{LEASE['duration']}s",
        "--lease-renew-deadline",
        f"{LEASE['deadline']}s",
        "--lease-retry-period",
        f"{LEASE['retry']}s",
    ]


def no_traceback(*procs: AgentProc) -> None:
    for proc in procs:
        text = proc.stderr_path.read_text(errors="replace")
        assert "Traceback" not in text, proc.describe(200)


def own_identity(rig: Rig, cluster: str) -> str:
    """Point the agent's config for ``cluster`` at a kubeconfig of a user of its own (a client
    certificate of the cluster's CA), with no rights until a binding grants some; returns the user."""
    user = f"{rig.namespace}-agent"
    kubeconfig = access.user_kubeconfig(
        rig.fleet.state, cluster, user, (), rig.root / f"{cluster}.kubeconfig"
    )
    config = yaml.safe_load((rig.root / "agent.yaml").read_text())
    config["clusters"][cluster] = {"context": cluster, "kubeconfig": str(kubeconfig)}
    (rig.root / "agent.yaml").write_text(yaml.safe_dump(config))
    return user


def binding(user: str, role: str) -> dict[str, Any]:
    """A ClusterRoleBinding of ``user`` to the ClusterRole ``role``, named after both."""
    return {
        "apiVersion": RBAC,
        "kind": "ClusterRoleBinding",
        "metadata": {"name": f"{user}-{role}"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}],
    }


def all_but_configmap_writes(client: ClusterClient, name: str) -> dict[str, Any]:
    """A ClusterRole allowing everything the cluster serves (from its discovery documents) except
    writing ConfigMaps, which may only be read. RBAC only adds rights, so "all but" is spelled out:
    every API group but the core one whole, and each core resource but ConfigMaps."""
    groups = [g["name"] for g in json.loads(client.get_text("/apis"))["groups"]]
    core = [r["name"] for r in json.loads(client.get_text("/api/v1"))["resources"]]
    return {
        "apiVersion": RBAC,
        "kind": "ClusterRole",
        "metadata": {"name": name},
        "rules": [
            {"apiGroups": groups, "resources": ["*"], "verbs": ["*"]},
            {"apiGroups": [""], "resources": [r for r in core if r != "configmaps"], "verbs": ["*"]},
            {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list", "watch"]},
        ],
    }


def remove(client: ClusterClient, *objects: dict[str, Any]) -> None:
    """Delete cluster-scoped ``objects`` that may already be gone."""
    for obj in objects:
        with contextlib.suppress(NotFound):
            client.delete(obj["apiVersion"], obj["kind"], obj["metadata"]["name"])


def event_notes(rig: Rig, reason: str) -> dict[str, list[str]]:
    """The notes of the Events of ``reason`` about each cluster's sync state, by cluster."""
    found: dict[str, list[str]] = {}
    for name, client in rig.clients.items():
        events = client.list("events.k8s.io/v1", "Event", namespace=rig.state_namespace).items
        found[name] = sorted(str(e.get("note", "")) for e in events if e.get("reason") == reason)
    return found


def working_again(client: ClusterClient, namespace: str, timeout: float = 180.0) -> None:
    """Until a cluster whose apiserver was restarted runs workloads again: its controller manager,
    scheduler and kwok watch the apiserver with client-go's backoff (up to 30 s between tries), so a
    RedisCluster applied right after the restart may sit longer than its step timeout. A throw-away
    StatefulSet of one pod turning Ready shows that the whole chain reconnected."""
    name = f"probe-{uuid.uuid4().hex[:6]}"
    labels = {"app": name}
    client.create(
        {
            "apiVersion": "apps/v1",
            "kind": "StatefulSet",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {
                "replicas": 1,
                "serviceName": name,
                "selector": {"matchLabels": labels},
                "template": {
                    "metadata": {"labels": labels},
                    "spec": {"containers": [{"name": "probe", "image": "probe"}]},
                },
            },
        }
    )
    try:

        def ready() -> bool:
            sts = client.get("apps/v1", "StatefulSet", name, namespace)
            return int((sts.get("status") or {}).get("readyReplicas") or 0) == 1

        eventually(f"a probe pod Ready on {client.cluster}", ready, timeout)
    finally:
        client.delete("apps/v1", "StatefulSet", name, namespace)
