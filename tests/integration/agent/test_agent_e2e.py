"""End to end on the real 3-cluster fleet: a signed commit in a real git remote goes through
verification and the manifests, rolls out canary first, the embedded controller of each cluster
reconciles the RedisCluster until it reports Ready, and only then does the next wave start. An
unsigned commit is applied nowhere; a canary that never becomes Ready is rolled back."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml

from syncer.agent.service import Agent
from syncer.config import load_agent_config
from syncer.config.rollout import RolloutPolicy, load_rollout_policy
from syncer.config.settings import AgentSettings
from syncer.controller.model import ControllerOptions
from syncer.controller.runner import run_controller
from syncer.domain.progress import PassEvent
from syncer.domain.sync_state import SyncPhase
from syncer.engine.revision import Stage
from syncer.kube import ClusterClient
from syncer.rollout.moves import RolloutOutcome
from syncer.status import StateStore
from syncer.status.metrics import SyncerMetrics
from tests.integration.conftest import FleetHandle
from tests.integration.verify.kit import GitRepo, SshKey, bare_remote, write_policy
from tests.support.agent_config import UNLEASED
from tests.support.namespaces import delete_namespaces

pytestmark = pytest.mark.integration

LABELS = {"canary": {"tier": "canary"}, "eu-1": {"tier": "prod"}, "us-1": {"tier": "prod"}}
ROLLOUT = {
    "waves": [
        {"name": "canary", "percent": 1, "selector": {"matchLabels": {"tier": "canary"}}},
        {"name": "rest", "percent": 100},
    ],
    "defaults": {"maxConcurrent": 2, "healthTimeout": "40s", "bake": "2s"},
    "rollback": True,
}


def redis_cluster(namespace: str, version: str, hold: bool = False) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "shards": 1,
        "replicasPerShard": 1,
        "version": version,
        "persistence": {"enabled": False},
        "rolloutStrategy": {"steps": [{"percent": 100}], "stepTimeout": "20s", "revertOnFailure": True},
    }
    if hold:
        spec["podMetadata"] = {"labels": {"kwok.syncer.dev/hold-not-ready": "true"}}
    return {
        "apiVersion": "redis.syncer.dev/v1alpha1",
        "kind": "RedisCluster",
        "metadata": {"name": "sessions", "namespace": namespace},
        "spec": spec,
    }


class Setup:
    """A signed fleet repository in a bare remote, an agent config for the test fleet, and one
    embedded controller per cluster watching the test's namespace."""

    def __init__(self, root: Path, fleet: FleetHandle, key: SshKey, namespace: str) -> None:
        self.namespace = namespace
        self.key = key
        self.remote = bare_remote(root / "remote.git")
        self.work = GitRepo(root / "work")
        clusters = [{"name": n, "labels": labels} for n, labels in LABELS.items()]
        fleet_file = {
            "apiVersion": "syncer.dev/v1alpha1",
            "kind": "Fleet",
            "defaults": {"namespace": namespace},
            "clusters": clusters,
        }
        self.work.write({"fleet.yaml": yaml.safe_dump(fleet_file)})
        write_policy(root / "trust.yaml", signers=[{"name": "ops", "ssh": key.public_line}], keys=[])
        (root / "rollout.yaml").write_text(yaml.safe_dump(ROLLOUT))
        config = {
            "source": {"url": str(self.remote), "cacheDir": str(root / "cache"), "timeoutSeconds": 30},
            "trustPolicy": "trust.yaml",
            "clusters": {n: {"context": n, "kubeconfig": str(fleet.kubeconfig)} for n in fleet.names},
        }
        (root / "agent.yaml").write_text(yaml.safe_dump(config))
        self.settings = AgentSettings(state_namespace=f"{namespace}-state", health_poll=0.5)
        loaded = load_agent_config(root / "agent.yaml")
        agent_config = replace(loaded, rollout=load_rollout_policy(root / "rollout.yaml"))
        self.metrics = SyncerMetrics()
        self.stop = threading.Event()
        self.steps: list[PassEvent] = []
        self.agent = Agent(
            agent_config, self.settings, self.metrics, self.stop, UNLEASED, listener=self.steps.append
        )

    def restart(self, config: Path, rollout: RolloutPolicy | None = None) -> None:
        """A new agent in all but process: ``config`` (the agent config) loaded afresh, with
        ``rollout`` (default: the rollout policy of the agent it replaces), and no memory."""
        kept = rollout if rollout is not None else self.agent.config.rollout
        self.agent.close()
        self.steps.clear()
        self.agent = Agent(
            replace(load_agent_config(config), rollout=kept),
            self.settings,
            self.metrics,
            self.stop,
            UNLEASED,
            listener=self.steps.append,
        )

    def commit(self, message: str, objects: list[dict[str, Any]], *, signed: bool = True) -> str:
        docs = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": self.namespace}}, *objects]
        sha = self.work.commit(
            message, {"base/objects.yaml": yaml.safe_dump_all(docs)}, sign=self.key if signed else None
        )
        self.work.git("push", "-q", str(self.remote), "main")
        return sha


@pytest.fixture
def setup(
    fleet: FleetHandle, namespace: str, tmp_path: Path, ops_key: SshKey, crd_installed: None
) -> Iterator[Setup]:
    prefix = f"{namespace}-e2e"
    clients = {n: ClusterClient.from_kubeconfig(str(fleet.kubeconfig), n) for n in fleet.names}
    made = Setup(tmp_path, fleet, ops_key, prefix)
    threads = [
        threading.Thread(
            target=run_controller,
            args=(
                ControllerOptions(
                    kubeconfig=str(fleet.kubeconfig),
                    context=n,
                    watch_namespace=prefix,
                    leader_elect=False,
                    watch_timeout_seconds=5,
                    poll_seconds=1.0,
                ),
                made.stop,
            ),
            daemon=True,
        )
        for n in fleet.names
    ]
    for thread in threads:
        thread.start()
    try:
        yield made
    finally:
        for client in clients.values():
            for rc in client.list("redis.syncer.dev/v1alpha1", "RedisCluster", namespace=prefix).items:
                client.delete("redis.syncer.dev/v1alpha1", "RedisCluster", rc["metadata"]["name"], prefix)
        # The controllers remove their finalizers; stop them only once every RedisCluster is gone, or
        # the test's namespace would stay Terminating for good.
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and any(
            c.list("redis.syncer.dev/v1alpha1", "RedisCluster", namespace=prefix).items
            for c in clients.values()
        ):
            time.sleep(0.5)
        made.stop.set()
        for thread in threads:
            thread.join(timeout=30)
        made.agent.close()
        for client in clients.values():
            delete_namespaces([client], prefix, f"{prefix}-state")
            client.close()


def states(setup: Setup) -> dict[str, Any]:
    return {
        n: StateStore(c, setup.settings.state_namespace).load().state for n, c in setup.agent.clients.items()
    }


def test_a_signed_commit_rolls_out_wave_by_wave_once_the_controller_reports_ready(setup: Setup) -> None:
    revision = setup.commit("sessions cache", [redis_cluster(setup.namespace, "7.2.4")])
    result = setup.agent.sync_once()
    assert result.report is not None
    assert result.report.outcome is RolloutOutcome.APPLIED, result.report
    assert result.report.revision == revision

    found = states(setup)
    assert {n: (s.revision, s.phase) for n, s in found.items()} == dict.fromkeys(
        ("canary", "eu-1", "us-1"), (revision, SyncPhase.HEALTHY)
    )
    canary = found["canary"]
    for name in ("eu-1", "us-1"):
        assert found[name].applied_at >= canary.healthy_since + 2, (
            "the next wave started before the canary baked"
        )
    for client in setup.agent.clients.values():
        live = client.get("redis.syncer.dev/v1alpha1", "RedisCluster", "sessions", setup.namespace)
        ready = {c["type"]: c["status"] for c in live["status"]["conditions"]}
        assert ready["Ready"] == "True"
        assert live["status"]["observedGeneration"] == live["metadata"]["generation"]
    gates = [(p.wave, p.step) for p in setup.steps if p.step.startswith("gate-") and p.step != "gate-wait"]
    assert gates == [("canary", "gate-proceed"), ("rest", "gate-proceed")]


def test_an_unsigned_commit_is_applied_nowhere_and_metrics_and_events_say_why(setup: Setup) -> None:
    setup.commit("signed start", [])
    first = setup.agent.sync_once()
    assert first.report is not None
    assert first.report.outcome is RolloutOutcome.APPLIED
    before = states(setup)
    unsigned = setup.commit("unsigned", [redis_cluster(setup.namespace, "7.2.4")], signed=False)

    result = setup.agent.sync_once()
    assert result.advance.rejection is not None
    assert result.advance.rejection.stage is Stage.VERIFY
    assert result.advance.rejection.revision == unsigned
    after = states(setup)
    assert {n: s.revision for n, s in after.items()} == {n: s.revision for n, s in before.items()}
    for client in setup.agent.clients.values():
        assert client.list("redis.syncer.dev/v1alpha1", "RedisCluster", namespace=setup.namespace).items == []
    registry = setup.metrics.registry
    assert registry.get_sample_value("syncer_signature_verification_total", {"result": "unsigned"}) == 1
    assert registry.get_sample_value("syncer_sync_total", {"result": "rejected"}) == 1
    events = (
        setup.agent.clients["canary"]
        .list("events.k8s.io/v1", "Event", namespace=setup.settings.state_namespace)
        .items
    )
    rejected = [e for e in events if e["reason"] == "RevisionRejected"]
    assert rejected, "a RevisionRejected event in each cluster"
    assert "unsigned" in rejected[0]["note"]


def test_a_canary_that_never_becomes_ready_halts_and_returns_to_the_last_good_revision(setup: Setup) -> None:
    good = setup.commit("good", [redis_cluster(setup.namespace, "7.2.4")])
    assert setup.agent.sync_once().report.outcome is RolloutOutcome.APPLIED  # type: ignore[union-attr]
    bad = setup.commit("pods never ready", [redis_cluster(setup.namespace, "7.2.5", hold=True)])

    result = setup.agent.sync_once()
    assert result.report is not None
    assert result.report.outcome is RolloutOutcome.ROLLED_BACK, result.report
    assert [w.name for w in result.report.waves] == ["canary"]
    assert "canary: degraded" in result.report.message or "canary: not healthy" in result.report.message
    found = states(setup)
    assert (found["canary"].revision, found["canary"].phase) == (good, SyncPhase.ROLLED_BACK)
    assert bad in found["canary"].bad_revisions
    for name in ("eu-1", "us-1"):
        assert (found[name].revision, found[name].phase) == (good, SyncPhase.HEALTHY)
        live = setup.agent.clients[name].get(
            "redis.syncer.dev/v1alpha1", "RedisCluster", "sessions", setup.namespace
        )
        assert live["spec"]["version"] == "7.2.4", "later waves must be untouched"
    canary = setup.agent.clients["canary"].get(
        "redis.syncer.dev/v1alpha1", "RedisCluster", "sessions", setup.namespace
    )
    assert canary["spec"]["version"] == "7.2.4"
    assert "podMetadata" not in canary["spec"]
