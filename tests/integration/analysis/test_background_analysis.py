"""Background analysis on the real fleet and its real Prometheus: metrics measured on every cluster
on the revision from the canary's apply until the last wave passes.

The test's exporter serves ``analysis_test_background`` per cluster, set by the test; the fleet's
Prometheus scrapes it and the background analysis asks Prometheus. The canary turns bad only once
the third wave is applied: the whole rollout goes back, the canary and the second wave included.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from devfleet.prometheus import LocalPrometheus
from syncer.config.rollout import RolloutPolicy, parse_rollout_policy
from syncer.domain.analysis import AnalysisVerdict, MeasurementOutcome
from syncer.domain.progress import PassEvent, Step
from syncer.domain.sync_state import SyncPhase
from syncer.engine.diff import DiffOptions
from syncer.engine.rollout import FleetRollout
from syncer.engine.rollout_model import RolloutOptions
from syncer.kube import ClusterClient
from syncer.rollout import Decision
from syncer.rollout.moves import RolloutOutcome
from syncer.status import StateStore
from tests.integration.analysis.kit import exporter
from tests.support.fleet_repo import FleetRepo
from tests.support.unfenced import UNFENCED_HOOKS
from tests.support.waiting import eventually

pytestmark = pytest.mark.integration

LABELS = {
    "canary": {"tier": "canary"},
    "eu-1": {"tier": "prod", "region": "eu"},
    "us-1": {"tier": "prod", "region": "us"},
}
REVISION_LABEL = "quality.test/revision"


def policy(local: LocalPrometheus, job: str, background: bool) -> RolloutPolicy:
    """Three waves, canary, second (eu-1) and third (us-1, baking 30s); with ``background`` one
    background metric over every cluster on the revision, failing at its first bad measurement."""
    query = f'max(analysis_test_background{{cluster="${{cluster}}",job="{job}"}})'
    metric = {
        "name": "client-errors",
        "query": query,
        "failureCondition": "result > 0.1",
        "interval": "1s",
        "count": 1000,
        "inconclusiveLimit": 3,
    }
    data: dict[str, Any] = {
        "prometheus": {"url": local.url, "caFile": str(local.ca_file)},
        "defaults": {"bake": "0s", "healthTimeout": "60s", "maxConcurrent": 2},
        "waves": [
            {"name": "canary", "percent": 1, "selector": {"matchLabels": {"tier": "canary"}}},
            {"name": "second", "percent": 50, "selector": {"matchLabels": {"region": "eu"}}},
            {"name": "third", "percent": 100, "bake": "30s"},
        ],
    }
    if background:
        data["analysis"] = {"background": {"metrics": [metric]}}
    return parse_rollout_policy(json.loads(json.dumps(data)), "rollout.yaml")


def rollout(
    clients: dict[str, ClusterClient], prefix: str, rollout_policy: RolloutPolicy, log: Any
) -> FleetRollout:
    options = RolloutOptions(
        rollout=rollout_policy, diff=DiffOptions(), state_namespace=f"{prefix}-state", health_poll=0.5
    )
    return FleetRollout(clients, options, listener=log, hooks=UNFENCED_HOOKS)


def test_a_background_metric_turning_bad_during_the_third_wave_rolls_the_whole_rollout_back(
    clients: dict[str, ClusterClient], prefix: str, running_prometheus: LocalPrometheus, tmp_path: Path
) -> None:
    repo = FleetRepo(tmp_path / "repo", prefix, LABELS)
    good = repo.write_documents("rev-good", [repo.namespace({REVISION_LABEL: "good"})])
    first = rollout(clients, prefix, policy(running_prometheus, prefix, False), lambda _: None).sync(good)
    assert first.outcome is RolloutOutcome.APPLIED, first
    with exporter(running_prometheus, prefix, "analysis_test_background") as served:
        for name in LABELS:
            served.set(name, 0.0)
        probe = f'count(analysis_test_background{{job="{prefix}"}} == 0)'
        eventually("every cluster's series scraped", lambda: running_prometheus.query(probe) == 3.0, 60)
        log: list[PassEvent] = []

        def tell(event: PassEvent) -> None:
            log.append(event)
            if event.step is Step.APPLIED and event.wave == "third":
                served.set("canary", 0.5)  # the canary's clients suffer once the third wave is on

        nxt = repo.write_documents("rev-next", [repo.namespace({REVISION_LABEL: "next"})])
        report = rollout(clients, prefix, policy(running_prometheus, prefix, True), tell).sync(
            nxt, last_good=good
        )

    assert report.outcome is RolloutOutcome.ROLLED_BACK, report
    assert [(w.name, w.decision) for w in report.waves] == [
        ("canary", Decision.PROCEED),
        ("second", Decision.PROCEED),
        ("third", Decision.ROLLBACK),
    ], report
    assert "background analysis: canary: analysis failed: client-errors" in report.message, report.message
    failed = [e for e in log if e.step is Step.GATE_ROLLBACK]
    assert [(e.wave, e.analysis, e.clusters) for e in failed] == [
        ("third", AnalysisVerdict.FAILED, ("canary",))
    ]
    told = [(e.cluster, m.outcome) for e in log if (m := e.measurement) is not None]
    assert [c for c, outcome in told if outcome is MeasurementOutcome.FAILURE] == ["canary"], told
    assert {"canary", "eu-1", "us-1"} <= {c for c, _ in told}, "measured on every cluster on the revision"
    assert sorted(e.cluster for e in log if e.step is Step.ROLLED_BACK) == ["canary", "eu-1", "us-1"]
    for name in LABELS:
        state = StateStore(clients[name], f"{prefix}-state").load().state
        assert (state.revision, state.phase) == ("rev-good", SyncPhase.ROLLED_BACK), name
        assert "rev-next" in state.bad_revisions, f"{name} refuses rev-next until git changes or a retry"
        live = clients[name].get("v1", "Namespace", prefix)
        assert live["metadata"]["labels"][REVISION_LABEL] == "good", name
    canary = StateStore(clients["canary"], f"{prefix}-state").load().state
    counts = canary.background.counts("client-errors")
    assert (canary.background.revision, counts.failures) == ("rev-next", 1)
    assert counts.successes >= 1, "the canary measured good before the third wave"
