"""A rollout you can trace, on the real fleet with a real Jaeger: ``syncer run`` with its embedded
controllers rolls a signed revision out to two clusters with OTEL_EXPORTER_OTLP_ENDPOINT pointing at
the fleet's Jaeger; Jaeger's HTTP API then holds one trace with the pass, each wave, each cluster's
apply, and under each apply the controller's reconcile of the RedisCluster it applied (the
traceparent crossed the apiserver as an annotation), its StatefulSet write and the wait for its pods
to become Ready, with their attributes; the controller's log lines of those reconciles carry the
trace's id."""

from __future__ import annotations

import base64
import contextlib
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from devfleet.jaeger import LocalJaeger
from devfleet.pki import CertificateAuthority
from devfleet.probe import free_port
from syncer.domain.sync_state import SyncPhase
from syncer.errors import NotFound
from syncer.kube import ApplyOptions, ClusterClient
from syncer.status import StateStore
from tests.integration.agent.drills import binding, own_identity, remove
from tests.integration.agent.procs import Agents
from tests.integration.agent.runkit import run_args
from tests.integration.agent.test_agent_apply_errors import all_but_rediscluster_writes
from tests.integration.conftest import FleetHandle
from tests.integration.verify.kit import GitRepo, SshKey, bare_remote, write_policy
from tests.support.namespaces import delete_namespaces
from tests.support.waiting import eventually

pytestmark = pytest.mark.integration

RC_API = "redis.syncer.dev/v1alpha1"
CLUSTERS = {"canary": {"tier": "canary"}, "eu-1": {"tier": "prod"}}
POLICY = {
    "waves": [
        {"name": "canary", "percent": 1, "selector": {"matchLabels": {"tier": "canary"}}},
        {"name": "rest", "percent": 100},
    ],
    "defaults": {"maxConcurrent": 1, "healthTimeout": "60s", "bake": "1s"},
    "rollback": False,
}
ROLLOUT_TIMEOUT = 120


def _objects(namespace: str) -> list[dict[str, Any]]:
    cluster = {
        "apiVersion": RC_API,
        "kind": "RedisCluster",
        "metadata": {"name": "sessions", "namespace": namespace},
        "spec": {"shards": 1, "replicasPerShard": 0, "version": "7.2", "persistence": {"enabled": False}},
    }
    return [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}, cluster]


class TracedFleet:
    """A signed fleet repository of two clusters in a bare remote and the agent's config for them."""

    def __init__(self, root: Path, fleet: FleetHandle, key: SshKey, namespace: str) -> None:
        self.root, self.namespace = root, namespace
        self.state_namespace = f"{namespace}-state"
        self.remote = bare_remote(root / "remote.git")
        self.work = GitRepo(root / "work")
        fleet_file = {
            "apiVersion": "syncer.dev/v1alpha1",
            "kind": "Fleet",
            "defaults": {"namespace": namespace},
            "clusters": [{"name": n, "labels": labels} for n, labels in CLUSTERS.items()],
        }
        self.work.write({"fleet.yaml": yaml.safe_dump(fleet_file)})
        write_policy(root / "trust.yaml", signers=[{"name": "ops", "ssh": key.public_line}], keys=[])
        (root / "policy.yaml").write_text(yaml.safe_dump(POLICY))
        config = {
            "source": {"url": str(self.remote), "cacheDir": str(root / "cache"), "timeoutSeconds": 30},
            "trustPolicy": "trust.yaml",
            "clusters": {n: {"context": n, "kubeconfig": str(fleet.kubeconfig)} for n in CLUSTERS},
        }
        (root / "agent.yaml").write_text(yaml.safe_dump(config))
        self.config = config
        self.fleet = fleet
        self.webhook_name = ""
        self.kubeconfig = fleet.kubeconfig
        self.key = key
        self.clients = {n: ClusterClient.from_kubeconfig(str(fleet.kubeconfig), n) for n in CLUSTERS}

    def link_traces(self, template: str) -> None:
        """The agent config's ``tracing.urlTemplate``: each cluster's last trace id made a link."""
        self.config["tracing"] = {"urlTemplate": template}
        (self.root / "agent.yaml").write_text(yaml.safe_dump(self.config))

    def commit(self) -> str:
        body = {"base/objects.yaml": yaml.safe_dump_all(_objects(self.namespace))}
        sha = self.work.commit("sessions 7.2", body, sign=self.key)
        self.work.git("push", "-q", str(self.remote), "main")
        return sha

    def healthy(self, revision: str) -> bool:
        states = [StateStore(c, self.state_namespace).load().state for c in self.clients.values()]
        return all((s.revision, s.phase) == (revision, SyncPhase.HEALTHY) for s in states)

    def status(self) -> dict[str, Any]:
        """``syncer status -o json`` of this fleet."""
        command = [
            sys.executable,
            "-m",
            "syncer",
            "status",
            "-o",
            "json",
            "--config",
            str(self.root / "agent.yaml"),
        ]
        command += ["--state-namespace", self.state_namespace]
        done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=True)
        answer: dict[str, Any] = json.loads(done.stdout)
        return answer

    def agent_args(self, *extra: str) -> list[str]:
        """``syncer run`` with one embedded controller per cluster, watching the test's namespace."""
        return run_args(
            self.root,
            "policy.yaml",
            self.kubeconfig,
            self.state_namespace,
            "--no-leader-elect",
            "--controller-every-cluster",
            "--watch-namespace",
            self.namespace,
            *extra,
        )

    def webhook(self) -> list[str]:
        """The agent's admission webhook on a free port with a certificate for 127.0.0.1, registered in
        both clusters for the test's namespace; the ``syncer run`` arguments that serve it."""
        ca = CertificateAuthority.create(self.root / "webhook-ca", "webhook-ca")
        certs = self.root / "webhook-certs"
        certs.mkdir()
        ca.issue(certs / "tls", "webhook", server_ips=("127.0.0.1",))
        port = free_port()
        self.webhook_name = f"{self.namespace}.redisclusters.redis.syncer.dev"
        body = {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingWebhookConfiguration",
            "metadata": {"name": self.webhook_name},
            "webhooks": [
                {
                    "name": "redisclusters.redis.syncer.dev",
                    "admissionReviewVersions": ["v1"],
                    "sideEffects": "None",
                    "failurePolicy": "Fail",
                    "timeoutSeconds": 10,
                    "rules": [
                        {
                            "apiGroups": ["redis.syncer.dev"],
                            "apiVersions": ["*"],
                            "operations": ["CREATE", "UPDATE"],
                            "resources": ["redisclusters"],
                            "scope": "Namespaced",
                        }
                    ],
                    "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": self.namespace}},
                    "clientConfig": {
                        "url": f"https://127.0.0.1:{port}/validate/redisclusters",
                        "caBundle": base64.b64encode(ca.cert_path.read_bytes()).decode(),
                    },
                }
            ],
        }
        for client in self.clients.values():
            client.apply(body, ApplyOptions(field_manager="tracing-test"))
        return ["--admission-port", str(port), "--admission-cert-dir", str(certs)]

    def close(self) -> None:
        for client in self.clients.values():
            if self.webhook_name:
                with contextlib.suppress(NotFound):
                    client.delete(
                        "admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration", self.webhook_name
                    )
            for rc in client.list(RC_API, "RedisCluster", namespace=self.namespace).items:
                client.delete(RC_API, "RedisCluster", rc["metadata"]["name"], self.namespace)
            delete_namespaces([client], self.namespace, self.state_namespace)
            client.close()


@pytest.fixture
def traced_fleet(
    fleet: FleetHandle, namespace: str, tmp_path: Path, ops_key: SshKey, crd_installed: None
) -> Iterator[TracedFleet]:
    made = TracedFleet(tmp_path, fleet, ops_key, f"{namespace}-t")
    try:
        yield made
    finally:
        made.close()


def _traced_by(jaeger: LocalJaeger, service: str) -> list[str]:
    """The command prefix that starts the agent with its spans sent to ``jaeger`` as ``service``."""
    return [
        "env",
        f"OTEL_EXPORTER_OTLP_ENDPOINT={jaeger.otlp_http}",
        f"OTEL_SERVICE_NAME={service}",
        "OTEL_BSP_SCHEDULE_DELAY=200",
    ]


def _tags(span: dict[str, Any]) -> dict[str, Any]:
    return {t["key"]: t["value"] for t in span["tags"]}


def _parent(span: dict[str, Any]) -> str:
    refs = [r["spanID"] for r in span.get("references", []) if r.get("refType") == "CHILD_OF"]
    return refs[0] if refs else ""


def _rollout_trace(jaeger: LocalJaeger, service: str, revision: str) -> dict[str, Any] | None:
    """The trace of the pass that rolled ``revision`` out, once Jaeger holds all of it: the pass has
    ended (a span is exported when it ends) and both clusters' pods were seen Ready."""
    for found in jaeger.traces(service, limit=200):
        names = [s["operationName"] for s in found["spans"]]
        passes = [s for s in found["spans"] if s["operationName"] == "syncer.pass"]
        ended = any(_tags(p).get("syncer.revision") == revision for p in passes)
        if ended and names.count("controller.pods.ready") >= len(CLUSTERS):
            return found
    return None


def test_one_trace_holds_the_pass_its_waves_each_cluster_apply_and_the_controller_reconcile_it_caused(
    traced_fleet: TracedFleet, local_jaeger: LocalJaeger, tmp_path: Path
) -> None:
    service = f"syncer-{traced_fleet.namespace}"
    agents = Agents(tmp_path)
    try:
        with agents.shown_on_failure():
            revision = traced_fleet.commit()
            traced_fleet.link_traces(f"{local_jaeger.query}/trace/{{traceId}}")
            args = traced_fleet.agent_args(*traced_fleet.webhook())
            agent = agents.start("agent", args, prefix=_traced_by(local_jaeger, service))
            eventually("both clusters healthy", lambda: traced_fleet.healthy(revision), ROLLOUT_TIMEOUT)
            trace = eventually(
                "the rollout's trace in Jaeger", lambda: _rollout_trace(local_jaeger, service, revision), 30
            )
            logs = agent.logs()
            status, page = agent.get("/ui/state")
            assert status == 200, page
            shown = {c["name"]: (c["traceId"], c["traceUrl"]) for c in json.loads(page)["clusters"]}
    finally:
        agents.close()
    spans = {s["spanID"]: s for s in trace["spans"]}
    for span in sorted(spans.values(), key=lambda s: s["startTime"]):  # shown when the test fails
        print(span["spanID"], _parent(span) or "-", span["operationName"], _tags(span), flush=True)
    named = lambda name: [s for s in spans.values() if s["operationName"] == name]  # noqa: E731

    (root,) = [s for s in spans.values() if not _parent(s)]
    assert root["operationName"] == "syncer.pass"
    assert _tags(root)["syncer.revision"] == revision
    # The poll of the pass fetched the new tip from git, in a span of its own.
    polls = {p["spanID"] for p in named("syncer.poll") if _parent(p) == root["spanID"]}
    fetches = [f for f in named("syncer.git.fetch") if _parent(f) in polls]
    assert [_tags(f)["syncer.revision"] for f in fetches] == [revision], fetches
    assert _tags(fetches[0])["syncer.git.operation"] in {"clone", "fetch"}
    waves = {_tags(w)["syncer.wave"]: w for w in named("syncer.wave")}
    assert set(waves) >= {"canary", "rest"}
    assert all(_parent(w) == root["spanID"] for w in waves.values())

    applies = {_tags(a)["syncer.cluster"]: a for a in named("syncer.cluster.apply")}
    assert set(applies) == set(CLUSTERS)
    expected_wave = {"canary": "canary", "eu-1": "rest"}
    for cluster, apply in applies.items():
        assert _parent(apply) == waves[expected_wave[cluster]]["spanID"], cluster
        assert _tags(apply)["syncer.revision"] == revision
        assert _tags(apply)["syncer.result"] == "applied"
        # The apiserver asked the agent's admission webhook about the RedisCluster during the apply.
        reviews = [r for r in named("controller.admission.review") if _parent(r) == apply["spanID"]]
        assert reviews, f"no admission review under {cluster}'s apply"
        # (the create; the controller's updates of the object, its finalizer, are reviewed too)
        verdicts = {(_tags(r)["k8s.operation"], _tags(r)["syncer.result"]) for r in reviews}
        assert ("CREATE", "allowed") in verdicts, verdicts
        # The controller of that cluster continued the trace from the object's annotation.
        reconciles = [r for r in named("controller.reconcile") if _parent(r) == apply["spanID"]]
        assert reconciles, f"no reconcile under {cluster}'s apply"
        assert all(_tags(r)["syncer.rediscluster"] == "sessions" for r in reconciles)
        assert all(_tags(r)["syncer.cluster"] == cluster for r in reconciles)
        writes = [w for w in named("controller.write") if _parent(w) in {r["spanID"] for r in reconciles}]
        kinds = {(_tags(w)["k8s.kind"], _tags(w)["k8s.name"]) for w in writes}
        assert ("StatefulSet", "sessions-shard-0") in kinds, kinds
        assert any(kind == "ConfigMap" for kind, _ in kinds), kinds
        ready = [p for p in named("controller.pods.ready") if _parent(p) in {r["spanID"] for r in reconciles}]
        assert len(ready) == 1, cluster
        # Causal order: the apply began before its reconciles, the pods were Ready after the write.
        first_write = min(w["startTime"] for w in writes if _tags(w)["k8s.kind"] == "StatefulSet")
        assert apply["startTime"] <= min(r["startTime"] for r in reconciles)
        assert ready[0]["startTime"] + ready[0]["duration"] >= first_write

    # Each cluster's sync state records the trace of its last apply, and the views show it, with its
    # link by the config's tracing.urlTemplate (Jaeger's own page of that trace).
    link = f"{local_jaeger.query}/trace/{trace['traceID']}"
    assert shown == dict.fromkeys(CLUSTERS, (trace["traceID"], link))
    rows = traced_fleet.status()["clusters"]
    listed = {row["cluster"]: (row["traceId"], row["traceUrl"]) for row in rows}
    assert listed == dict.fromkeys(CLUSTERS, (trace["traceID"], link))

    # The controller's log lines of those reconciles carry the trace's id next to their reconcile id.
    joined = [r for r in logs if r.get("reconcile_id") and r.get("trace_id") == trace["traceID"]]
    assert joined, "no reconcile log line carries the trace id"


def _failed_apply(jaeger: LocalJaeger, service: str) -> dict[str, Any] | None:
    for found in jaeger.traces(service, limit=50):
        for span in found["spans"]:
            tags = _tags(span)
            if span["operationName"] == "syncer.cluster.apply" and tags.get("otel.status_code") == "ERROR":
                return span
    return None


def test_an_apply_the_apiserver_refuses_is_an_error_span_with_its_message(
    traced_fleet: TracedFleet, local_jaeger: LocalJaeger, tmp_path: Path
) -> None:
    service = f"syncer-{traced_fleet.namespace}"
    # The agent writes to canary as a user of its own that may do anything there but write RedisClusters.
    canary = traced_fleet.clients["canary"]
    user = own_identity(traced_fleet, "canary")  # type: ignore[arg-type]
    role = all_but_rediscluster_writes(canary, f"{user}-all-but-rediscluster-writes")
    narrowed = binding(user, role["metadata"]["name"])
    canary.apply(role)
    canary.apply(narrowed)
    agents = Agents(tmp_path)
    try:
        with agents.shown_on_failure():
            traced_fleet.commit()
            agents.start("agent", traced_fleet.agent_args(), prefix=_traced_by(local_jaeger, service))
            failed = eventually(
                "a failed apply in Jaeger", lambda: _failed_apply(local_jaeger, service), ROLLOUT_TIMEOUT
            )
    finally:
        agents.close()
        remove(canary, narrowed, role)
    tags = _tags(failed)
    assert tags["syncer.cluster"] == "canary"
    assert tags["syncer.result"] == "failed"
    message = tags["otel.status_description"]
    # The apiserver's answer, as it refused the write.
    assert "forbidden" in message, message
    assert f'User "{user}" cannot patch resource "redisclusters"' in message, message
