"""A ``provider: web`` metric judging the canary on the real fleet: a local HTTP server the test starts
(on a free port) answers JSON, and the metric's JSON path finds the number in it; the same server
hanging fails the measurement closed within the metric's timeout."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from syncer.config.rollout import RolloutPolicy, parse_rollout_policy
from syncer.domain.analysis import AnalysisVerdict, MeasurementOutcome
from syncer.domain.progress import PassEvent, Step
from syncer.domain.sync_state import SyncPhase
from syncer.kube import ClusterClient
from syncer.rollout.moves import RolloutOutcome
from tests.integration.analysis.test_wave_analysis import Repo, gate_verdicts, measured, rollout, state

pytestmark = pytest.mark.integration

TOKEN = "web-metric-token"


@dataclass
class Endpoint:
    """What the server answers (``errors``; ``hang``: nothing until the test ends) and what it was asked."""

    url: str
    errors: float = 0.0
    hang: bool = False
    asked: list[tuple[str, str, str, str]] = field(default_factory=list)  # method, path, auth, body
    released: threading.Event = field(default_factory=threading.Event)


@pytest.fixture
def endpoint() -> Iterator[Endpoint]:
    server: ThreadingHTTPServer

    class Handler(BaseHTTPRequestHandler):
        def _answer(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length).decode() if length else ""
            made.asked.append((self.command, self.path, self.headers.get("Authorization", ""), body))
            if made.hang:
                made.released.wait(60)
                return
            data = json.dumps({"data": {"errors": [made.errors]}}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = _answer

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    made = Endpoint(f"http://127.0.0.1:{server.server_address[1]}")
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield made
    finally:
        made.released.set()
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def policy(endpoint: Endpoint, folder: Path, **web: Any) -> RolloutPolicy:
    """Canary then the rest, the canary judged by one web metric (no Prometheus at all)."""
    (folder / "token").write_text(TOKEN + "\n")
    metric = {
        "name": "web-errors",
        "provider": "web",
        "web": {
            "url": endpoint.url + "/errors/${cluster}?wave=${wave}",
            "body": '{"cluster": "${cluster}"}',
            "jsonPath": "$.data.errors[0]",
            "tokenFile": "token",
            **web,
        },
        "failureCondition": "result > 0.1",
        "interval": "1s",
        "count": 2,
        "consecutiveErrorLimit": 0,
    }
    canary = {"name": "canary", "percent": 1, "selector": {"matchLabels": {"tier": "canary"}}}
    data = {
        "defaults": {"bake": "0s", "healthTimeout": "60s", "maxConcurrent": 2},
        "waves": [{**canary, "analysis": {"metrics": [metric]}}, {"name": "rest", "percent": 100}],
    }
    return parse_rollout_policy(json.loads(json.dumps(data)), str(folder / "rollout.yaml"), folder)


def test_a_web_metric_asks_the_endpoint_and_judges_the_number_at_its_json_path(
    clients: dict[str, ClusterClient], prefix: str, endpoint: Endpoint, tmp_path: Path
) -> None:
    repo = Repo(tmp_path / "repo", prefix)
    endpoint.errors = 0.01
    log: list[PassEvent] = []
    good = repo.write("rev-good", errors="0")
    report = rollout(clients, prefix, policy(endpoint, tmp_path), log).sync(good)
    assert report.outcome is RolloutOutcome.APPLIED, report
    assert measured(log) == [("canary", MeasurementOutcome.SUCCESS, 0.01)] * 2
    post = ("POST", "/errors/canary?wave=canary", f"Bearer {TOKEN}", '{"cluster": "canary"}')
    assert endpoint.asked == [post] * 2, "the token file read, the arguments filled"
    # The same metric, the endpoint now answering a bad number: the canary is rolled back.
    endpoint.errors = 0.5
    log = []
    report = rollout(clients, prefix, policy(endpoint, tmp_path), log).sync(
        repo.write("rev-bad", errors="0"), last_good=good
    )
    assert report.outcome is RolloutOutcome.ROLLED_BACK, report
    assert [w.name for w in report.waves] == ["canary"], "later waves must not start"
    assert measured(log) == [("canary", MeasurementOutcome.FAILURE, 0.5)]
    assert gate_verdicts(log) == [(Step.GATE_ROLLBACK, AnalysisVerdict.FAILED)]
    assert (state(clients, prefix, "canary").revision, state(clients, prefix, "canary").phase) == (
        "rev-good",
        SyncPhase.ROLLED_BACK,
    )
    assert state(clients, prefix, "eu-1").revision == "rev-good"


def test_a_hanging_endpoint_fails_closed_within_the_metric_s_timeout(
    clients: dict[str, ClusterClient], prefix: str, endpoint: Endpoint, tmp_path: Path
) -> None:
    endpoint.hang = True
    log: list[PassEvent] = []
    desired = Repo(tmp_path / "repo", prefix).write("rev-1", errors="0")
    started = time.monotonic()
    report = rollout(clients, prefix, policy(endpoint, tmp_path, timeout="1s"), log).sync(desired)
    took = time.monotonic() - started
    assert report.outcome is RolloutOutcome.HALTED, report
    assert gate_verdicts(log) == [(Step.GATE_HALT, AnalysisVerdict.INCONCLUSIVE)]
    [event] = [e for e in log if e.step is Step.ANALYSIS_MEASURED]
    assert event.measurement is not None
    assert event.measurement.outcome is MeasurementOutcome.ERROR
    assert "did not answer (timeout 1s)" in event.measurement.detail, event.measurement.detail
    assert len(endpoint.asked) == 1
    assert took < 30, f"one hanging request of 1s, and the rollout took {took:.1f}s"
    assert state(clients, prefix, "eu-1").revision == "", "later waves must not start"
