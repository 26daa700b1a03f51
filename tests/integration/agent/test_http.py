"""The agent's HTTP server on a real loopback socket."""

from __future__ import annotations

import hashlib
import hmac
import http.client
import threading
from collections.abc import Iterator

import pytest
from prometheus_client import CollectorRegistry

from syncer.agent.http import POLL_STARTS, AgentServer, Endpoints, HookAnswer
from syncer.config.settings import HttpSettings
from syncer.domain.progress import PassEvent, Step, Waiting
from syncer.domain.rollout_status import advance, initial
from syncer.status.metrics import SyncerMetrics

pytestmark = pytest.mark.integration


class Probe:
    def __init__(self) -> None:
        self.ready = False
        self.hooks = threading.Event()

    def hook(self) -> HookAnswer:
        self.hooks.set()
        return POLL_STARTS


@pytest.fixture
def served() -> Iterator[tuple[AgentServer, Probe, SyncerMetrics]]:
    probe = Probe()
    metrics = SyncerMetrics(CollectorRegistry())
    endpoints = Endpoints(
        registry=metrics.registry,
        healthy=lambda: (True, "alive"),
        ready=lambda: (probe.ready, "leader, synced" if probe.ready else "no revision synced yet"),
        hook_secret="s3cret",
        on_hook=probe.hook,
    )
    server = AgentServer(endpoints, HttpSettings(port=0)).start()
    yield server, probe, metrics
    server.stop()


def request(
    server: AgentServer, method: str, path: str, body: bytes = b"", headers: dict[str, str] | None = None
) -> tuple[int, str]:
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=5)
    try:
        conn.request(method, path, body=body, headers=headers or {})
        response = conn.getresponse()
        return response.status, response.read().decode()
    finally:
        conn.close()


def test_metrics_are_exported_in_the_prometheus_format(
    served: tuple[AgentServer, Probe, SyncerMetrics],
) -> None:
    server, _, metrics = served
    metrics.sync_total.labels(result="applied").inc()
    metrics.cluster_healthy.labels(cluster="eu-1").set(1)
    metrics.set_revision("abc123")
    baking = advance(initial(["canary", "rest"]), PassEvent(Step.APPLYING, "canary", "c1", "abc123"))
    metrics.show_rollout(
        advance(baking, PassEvent(Step.GATE_WAIT, "canary", revision="abc123", waiting=Waiting.BAKE))
    )
    status, text = request(server, "GET", "/metrics")
    assert status == 200
    assert 'syncer_sync_total{result="applied"} 1.0' in text
    assert 'syncer_cluster_healthy{cluster="eu-1"} 1.0' in text
    assert 'syncer_revision_info{revision="abc123"} 1.0' in text
    assert 'syncer_wave_state{revision="abc123",state="baking",wave="canary"} 1.0' in text
    assert 'syncer_wave_state{revision="abc123",state="passed",wave="canary"} 0.0' in text
    assert 'syncer_wave_state{revision="abc123",state="pending",wave="rest"} 1.0' in text
    newer = advance(initial(["canary", "rest"]), PassEvent(Step.ROLLOUT_STARTED, "canary", revision="def456"))
    metrics.show_rollout(newer)
    _, text = request(server, "GET", "/metrics")
    waves = [line for line in text.splitlines() if line.startswith("syncer_wave_state{")]
    assert not [line for line in waves if 'revision="abc123"' in line], "only the revision rolling out"
    assert 'syncer_wave_state{revision="def456",state="pending",wave="canary"} 1.0' in text


def test_readiness_follows_the_agent(served: tuple[AgentServer, Probe, SyncerMetrics]) -> None:
    server, probe, _ = served
    assert request(server, "GET", "/healthz") == (200, "alive\n")
    assert request(server, "GET", "/readyz") == (503, "no revision synced yet\n")
    probe.ready = True
    assert request(server, "GET", "/readyz") == (200, "leader, synced\n")


def test_the_webhook_needs_the_shared_secret(served: tuple[AgentServer, Probe, SyncerMetrics]) -> None:
    server, probe, _ = served
    assert request(server, "POST", "/hooks/git", b"{}")[0] == 401
    assert request(server, "POST", "/hooks/git", b"{}", {"Authorization": "Bearer wrong"})[0] == 401
    assert not probe.hooks.is_set()
    assert request(server, "POST", "/hooks/git", b"{}", {"Authorization": "Bearer s3cret"})[0] == 202
    assert probe.hooks.is_set()


def test_the_webhook_accepts_an_hmac_signature_of_the_body(
    served: tuple[AgentServer, Probe, SyncerMetrics],
) -> None:
    server, probe, _ = served
    body = b'{"ref": "refs/heads/main"}'
    good = "sha256=" + hmac.new(b"s3cret", body, hashlib.sha256).hexdigest()
    assert request(server, "POST", "/hooks/git", body + b" ", {"X-Hub-Signature-256": good})[0] == 401
    assert request(server, "POST", "/hooks/git", body, {"X-Hub-Signature-256": good})[0] == 202
    assert probe.hooks.is_set()


def test_unknown_paths_are_404(served: tuple[AgentServer, Probe, SyncerMetrics]) -> None:
    server, _, _ = served
    assert request(server, "GET", "/nope")[0] == 404
    assert request(server, "POST", "/metrics")[0] == 404
