"""A shipped analysis template judging real Redis: a fleet of its own with ``--redis`` (a real
redis-server and redis_exporter behind every Redis pod, scraped by the fleet's Prometheus), a real
controller per cluster forming each RedisCluster, and a client load the test runs against every pod.

A revision with ``maxmemory`` and an evicting policy stays Ready under that load while its servers
evict keys; ``redis-evicted-keys`` from policies/analysis-templates.yaml fails it on the canary.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import pytest
import redis

from devfleet import fleet as devfleet
from devfleet import prometheus
from devfleet.prometheus import LocalPrometheus
from syncer.config.rollout import RolloutPolicy, parse_rollout_policy
from syncer.controller.model import API_VERSION, KIND
from syncer.domain.analysis import AnalysisVerdict, MeasurementOutcome
from syncer.domain.objects import DesiredFleet
from syncer.domain.progress import PassEvent, Step
from syncer.domain.sync_state import SyncPhase
from syncer.engine.diff import DiffOptions
from syncer.engine.rollout import FleetRollout
from syncer.engine.rollout_model import RolloutOptions
from syncer.errors import KubeError
from syncer.kube import ClusterClient
from syncer.rollout import Decision
from syncer.rollout.moves import RolloutOutcome
from syncer.status import StateStore
from tests.integration.analysis.test_wave_analysis import gate_verdicts, measured
from tests.integration.controller.kit import controller_running, install_crd
from tests.integration.controller.rediskit import controller_options
from tests.support.fleet_repo import LABELS, FleetRepo
from tests.support.unfenced import UNFENCED_HOOKS

pytestmark = pytest.mark.integration

POLICIES = Path(__file__).resolve().parents[3] / "policies"
PREFIX = "shop"
NAME = "sessions"
VALUE = b"x" * 10_000
KEYS = 600  # written over and over: about 6 MB per server, more than the bad revision's maxmemory


@pytest.fixture(scope="module")
def redis_fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[devfleet.Fleet]:
    root = tmp_path_factory.mktemp("redis-analysis") / "state"
    started = devfleet.up(root, devfleet.UpOptions(clusters=tuple(LABELS), redis=True), say=lambda _: None)
    try:
        yield started
    finally:
        assert devfleet.down(root, say=lambda _: None) == []


@pytest.fixture(scope="module")
def clients(redis_fleet: devfleet.Fleet) -> Iterator[dict[str, ClusterClient]]:
    made = {n: ClusterClient.from_kubeconfig(str(redis_fleet.kubeconfig), n) for n in LABELS}
    for each in made.values():
        install_crd(each)
    yield made
    for each in made.values():
        each.close()


@pytest.fixture(scope="module")
def local(redis_fleet: devfleet.Fleet) -> LocalPrometheus:
    return prometheus.start(redis_fleet.root, say=lambda _: None)


def _pod_ips(api: ClusterClient) -> list[str]:
    try:
        pods = api.list("v1", "Pod", namespace=PREFIX).items
    except KubeError:
        return []
    return [str(p["status"]["podIP"]) for p in pods if (p.get("status") or {}).get("podIP")]


def _write(ip: str, start: int) -> None:
    try:
        with redis.Redis(host=ip, port=6379, socket_timeout=2) as conn:
            pipe = conn.pipeline(transaction=False)
            for i in range(start, start + 100):
                pipe.set(f"k{i % KEYS}", VALUE)
            pipe.execute()
    except redis.RedisError:
        pass  # a server starting, replaced, or not in a formed cluster yet: the next round writes


@contextmanager
def client_load(clients: dict[str, ClusterClient]) -> Iterator[None]:
    """Writes to the server behind every Redis pod of every cluster until the block ends."""
    stop = threading.Event()

    def load() -> None:
        start = 0
        while not stop.is_set():
            for api in clients.values():
                for ip in _pod_ips(api):
                    _write(ip, start)
            start += 100
            stop.wait(0.2)

    thread = threading.Thread(target=load, name="redis-client-load", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=30)
        assert not thread.is_alive(), "the client load did not stop"


@pytest.fixture(scope="module")
def controllers(redis_fleet: devfleet.Fleet, clients: dict[str, ClusterClient]) -> Iterator[None]:
    """A real controller per cluster, forming each RedisCluster of the real servers, under load."""
    with ExitStack() as stack:
        for name in LABELS:
            options = controller_options(redis_fleet, PREFIX, name)
            stack.enter_context(controller_running(options))
        stack.enter_context(client_load(clients))
        yield


class Repo(FleetRepo):
    """The Namespace and a one-shard RedisCluster with an exporter, its redis.conf given."""

    def write(self, revision: str, config: dict[str, str]) -> DesiredFleet:
        spec = {
            "version": "7.2",
            "shards": 1,
            "replicasPerShard": 0,
            "persistence": {"enabled": False},
            "exporter": {"enabled": True},
            "redisConfig": config,
        }
        body = {"apiVersion": API_VERSION, "kind": KIND, "metadata": {"name": NAME, "namespace": PREFIX}}
        return self.write_documents(revision, [self.namespace(), {**body, "spec": spec}])


def policy(local: LocalPrometheus) -> RolloutPolicy:
    """Canary then the rest, the canary judged by the shipped redis-evicted-keys, turned on by name."""
    evicted = {
        "name": "redis-evicted-keys",
        "args": {"window": "30s", "initialDelay": "10s", "interval": "3s", "count": 3},
    }
    data: dict[str, Any] = {
        "prometheus": {"url": local.url, "caFile": str(local.ca_file)},
        "analysisTemplatesFile": "analysis-templates.yaml",
        "defaults": {"bake": "0s", "healthTimeout": "240s", "maxConcurrent": 2},
        "waves": [
            {
                "name": "canary",
                "percent": 1,
                "selector": {"matchLabels": {"tier": "canary"}},
                "analysis": {"templates": [evicted]},
            },
            {"name": "rest", "percent": 100},
        ],
    }
    return parse_rollout_policy(json.loads(json.dumps(data)), str(POLICIES / "rollout.yaml"), POLICIES)


def rollout(clients: dict[str, ClusterClient], local: LocalPrometheus, log: list[PassEvent]) -> FleetRollout:
    options = RolloutOptions(
        rollout=policy(local), diff=DiffOptions(), state_namespace=f"{PREFIX}-state", health_poll=0.5
    )
    return FleetRollout(clients, options, listener=log.append, hooks=UNFENCED_HOOKS)


def _config(api: ClusterClient) -> dict[str, str]:
    return dict(api.get(API_VERSION, KIND, NAME, PREFIX)["spec"].get("redisConfig") or {})


GOOD = {"maxmemory": "0"}
BAD = {"maxmemory": "3mb", "maxmemory-policy": "allkeys-random"}


def test_a_healthy_revision_passes_the_shipped_template_with_its_measurements_recorded(
    clients: dict[str, ClusterClient], local: LocalPrometheus, controllers: None, tmp_path: Path
) -> None:
    desired = Repo(tmp_path / "repo", PREFIX).write("rev-good", GOOD)
    log: list[PassEvent] = []
    report = rollout(clients, local, log).sync(desired)
    assert report.outcome is RolloutOutcome.APPLIED, [e.reason for e in log if e.measurement is not None]
    assert [(w.name, w.decision) for w in report.waves] == [
        ("canary", Decision.PROCEED),
        ("rest", Decision.PROCEED),
    ]
    assert "analysis successful" in report.waves[0].reason
    assert [(c, o) for c, o, _ in measured(log)] == [("canary", MeasurementOutcome.SUCCESS)] * 3, measured(
        log
    )
    details = [e.measurement.detail for e in log if e.measurement is not None]
    assert details == ["result 0: result.all(s, s.value <= 0.0)"] * 3, "no key evicted"
    counts = StateStore(clients["canary"], f"{PREFIX}-state").load().state.analysis
    assert [(c.metric, c.taken, c.successes) for c in counts.metrics] == [("redis-evicted-keys", 3, 3)]
    # The load reached the servers: keys written and none evicted.
    assert local.query(f'sum(redis_db_keys{{cluster="canary",namespace="{PREFIX}"}})') > 0


def test_a_ready_revision_that_evicts_keys_is_failed_by_the_shipped_template_and_rolled_back(
    clients: dict[str, ClusterClient], local: LocalPrometheus, controllers: None, tmp_path: Path
) -> None:
    repo = Repo(tmp_path / "repo", PREFIX)
    good = repo.write("rev-good", GOOD)
    first = rollout(clients, local, []).sync(good)
    assert first.outcome in (RolloutOutcome.APPLIED, RolloutOutcome.UNCHANGED), first
    log: list[PassEvent] = []
    report = rollout(clients, local, log).sync(repo.write("rev-bad", BAD), last_good=good)
    assert report.outcome is RolloutOutcome.ROLLED_BACK, report
    assert [w.name for w in report.waves] == ["canary"], "later waves must not start"
    # Analysis, not health, failed it: the canary was Ready, its servers evicting keys.
    assert "canary: analysis failed: redis-evicted-keys" in report.message, report.message
    [(cluster, outcome, _)] = measured(log)
    assert (cluster, outcome) == ("canary", MeasurementOutcome.FAILURE)
    assert gate_verdicts(log) == [(Step.GATE_ROLLBACK, AnalysisVerdict.FAILED)]
    canary = StateStore(clients["canary"], f"{PREFIX}-state").load().state
    assert (canary.revision, canary.phase) == ("rev-good", SyncPhase.ROLLED_BACK)
    assert _config(clients["canary"]) == GOOD, "the canary's RedisCluster is back on the good config"
    for name in ("eu-1", "us-1"):
        state = StateStore(clients[name], f"{PREFIX}-state").load().state
        assert (state.revision, state.phase) == ("rev-good", SyncPhase.HEALTHY)
        assert _config(clients[name]) == GOOD
