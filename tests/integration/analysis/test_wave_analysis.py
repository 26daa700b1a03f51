"""Waves judged by the fleet's metrics on the real fleet and the fleet's real Prometheus.

Each test serves ``analysis_test_errors`` per cluster from what the revision live there says (a label
of the test's Namespace, read at every scrape), so a revision makes a cluster measurably bad while
it is Ready; Prometheus scrapes it and the analysis asks Prometheus.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from devfleet import prometheus
from devfleet.prometheus import LocalPrometheus
from syncer.config.rollout import RolloutPolicy, parse_rollout_policy
from syncer.domain.analysis import AnalysisVerdict, MeasurementOutcome
from syncer.domain.objects import DesiredFleet
from syncer.domain.progress import PassEvent, Step
from syncer.domain.sync_state import ClusterSyncState, RetryRequest, SyncPhase
from syncer.engine.diff import DiffOptions
from syncer.engine.rollout import FleetRollout
from syncer.engine.rollout_model import RolloutOptions
from syncer.kube import ClusterClient
from syncer.rollout import Decision
from syncer.rollout.moves import RolloutOutcome
from syncer.status import StateStore
from syncer.status.acts import PersonActs
from tests.integration.analysis.kit import ERRORS_LABEL, live_exporter
from tests.integration.conftest import FleetHandle
from tests.support.fleet_repo import FleetRepo
from tests.support.unfenced import UNFENCED_HOOKS

pytestmark = pytest.mark.integration


class Repo(FleetRepo):
    """The tests' fleet repository: the prefix's Namespace, labelled with the error rate it causes."""

    def write(self, revision: str, errors: str) -> DesiredFleet:
        return self.write_documents(revision, [self.namespace({ERRORS_LABEL: errors})])


@pytest.fixture
def scraped(
    running_prometheus: LocalPrometheus, clients: dict[str, ClusterClient], prefix: str
) -> Iterator[LocalPrometheus]:
    """The fleet's Prometheus, scraping this test's live exporter."""
    with live_exporter(running_prometheus, prefix, clients, prefix):
        yield running_prometheus


def policy(local: LocalPrometheus, prefix: str, **metric: Any) -> RolloutPolicy:
    """Canary then the rest; the canary judged by one metric (``metric`` overrides its fields; no
    ``metric`` at all: no analysis)."""
    query = f'max(analysis_test_errors{{cluster="${{cluster}}",namespace="{prefix}"}})'
    base = {"name": "error-rate", "query": query, "interval": "1s", "count": 3, "initialDelay": "2s"}
    fields = {
        k: v for k, v in {**base, "failureCondition": "result > 0.1", **metric}.items() if v is not None
    }
    analysis = {"metrics": [fields]} if metric else {}
    canary: dict[str, Any] = {"name": "canary", "percent": 1, "selector": {"matchLabels": {"tier": "canary"}}}
    data = {
        "prometheus": {"url": local.url, "caFile": str(local.ca_file)},
        "defaults": {"bake": "0s", "healthTimeout": "60s", "maxConcurrent": 2},
        "waves": [{**canary, "analysis": analysis} if analysis else canary, {"name": "rest", "percent": 100}],
    }
    return parse_rollout_policy(json.loads(json.dumps(data)), "rollout.yaml")


def rollout(
    clients: dict[str, ClusterClient], prefix: str, rollout_policy: RolloutPolicy, log: list[PassEvent]
) -> FleetRollout:
    options = RolloutOptions(
        rollout=rollout_policy, diff=DiffOptions(), state_namespace=f"{prefix}-state", health_poll=0.5
    )
    return FleetRollout(clients, options, listener=log.append, hooks=UNFENCED_HOOKS)


def state(clients: dict[str, ClusterClient], prefix: str, name: str) -> ClusterSyncState:
    return StateStore(clients[name], f"{prefix}-state").load().state


def measured(log: list[PassEvent]) -> list[tuple[str, MeasurementOutcome, float | None]]:
    return [
        (e.cluster, e.measurement.outcome, e.measurement.value)
        for e in log
        if e.step is Step.ANALYSIS_MEASURED and e.measurement is not None
    ]


def gate_verdicts(log: list[PassEvent]) -> list[tuple[Step, AnalysisVerdict | None]]:
    """The gate's failing decisions and the analysis verdict each followed (None: health)."""
    return [(e.step, e.analysis) for e in log if e.step in (Step.GATE_HALT, Step.GATE_ROLLBACK)]


def test_a_healthy_revision_proceeds_with_its_measurements_recorded(
    clients: dict[str, ClusterClient], prefix: str, scraped: LocalPrometheus, tmp_path: Path
) -> None:
    desired = Repo(tmp_path / "repo", prefix).write("rev-1", errors="0.01")
    log: list[PassEvent] = []
    report = rollout(clients, prefix, policy(scraped, prefix, count=3), log).sync(desired)
    assert report.outcome is RolloutOutcome.APPLIED, report
    assert [(w.name, w.decision) for w in report.waves] == [
        ("canary", Decision.PROCEED),
        ("rest", Decision.PROCEED),
    ]
    assert "analysis successful" in report.waves[0].reason
    assert measured(log) == [("canary", MeasurementOutcome.SUCCESS, 0.01)] * 3
    counts = state(clients, prefix, "canary").analysis
    assert counts.revision == "rev-1"
    assert [(c.metric, c.taken, c.successes, c.last_value) for c in counts.metrics] == [
        ("error-rate", 3, 3, 0.01)
    ]
    assert state(clients, prefix, "eu-1").analysis.metrics == (), "the rest runs no analysis"


def test_a_measurably_bad_canary_fails_analysis_and_rolls_back_later_waves_untouched(
    clients: dict[str, ClusterClient], prefix: str, scraped: LocalPrometheus, tmp_path: Path
) -> None:
    repo = Repo(tmp_path / "repo", prefix)
    good = repo.write("rev-good", errors="0")
    assert rollout(clients, prefix, policy(scraped, prefix), []).sync(good).outcome is RolloutOutcome.APPLIED
    bad = repo.write("rev-bad", errors="0.5")
    log: list[PassEvent] = []
    report = rollout(clients, prefix, policy(scraped, prefix, count=3), log).sync(bad, last_good=good)
    assert report.outcome is RolloutOutcome.ROLLED_BACK, report
    assert [w.name for w in report.waves] == ["canary"], "later waves must not start"
    assert "canary: analysis failed: error-rate: 1 failed measurement(s), 0 allowed" in report.message
    assert measured(log) == [("canary", MeasurementOutcome.FAILURE, 0.5)]
    assert gate_verdicts(log) == [(Step.GATE_ROLLBACK, AnalysisVerdict.FAILED)], (
        "the gate says analysis decided"
    )
    canary = state(clients, prefix, "canary")
    assert (canary.revision, canary.phase) == ("rev-good", SyncPhase.ROLLED_BACK)
    assert "rev-bad" in canary.bad_revisions
    live = clients["canary"].get("v1", "Namespace", prefix)
    assert live["metadata"]["labels"][ERRORS_LABEL] == "0"
    for name in ("eu-1", "us-1"):
        assert (state(clients, prefix, name).revision, state(clients, prefix, name).phase) == (
            "rev-good",
            SyncPhase.HEALTHY,
        )


def test_a_condition_over_every_series_fails_on_one_series_of_three(
    clients: dict[str, ClusterClient], prefix: str, scraped: LocalPrometheus, tmp_path: Path
) -> None:
    repo = Repo(tmp_path / "repo", prefix)
    good = repo.write("rev-good", errors="0")
    assert rollout(clients, prefix, policy(scraped, prefix), []).sync(good).outcome is RolloutOutcome.APPLIED
    every = f'analysis_test_errors{{namespace="{prefix}"}}'  # one series per cluster: three
    every_low = "len(result) == 3 && result.all(s, s.value < 0.1)"
    conditions = {"failureCondition": None, "successCondition": every_low}
    log: list[PassEvent] = []
    report = rollout(clients, prefix, policy(scraped, prefix, query=every, **conditions), log).sync(
        repo.write("rev-bad", errors="0.5"), last_good=good
    )
    assert report.outcome is RolloutOutcome.ROLLED_BACK, report
    assert [w.name for w in report.waves] == ["canary"], "later waves must not start"
    assert "canary: analysis failed: error-rate: 1 failed measurement(s), 0 allowed" in report.message
    [event] = [e for e in log if e.step is Step.ANALYSIS_MEASURED and e.measurement is not None]
    assert event.measurement is not None
    assert event.measurement.outcome is MeasurementOutcome.FAILURE
    detail = event.measurement.detail
    for said in ("0.5 {", "cluster=canary", "cluster=eu-1", "cluster=us-1", "not len(result) == 3"):
        assert said in detail, detail
    assert state(clients, prefix, "eu-1").revision == "rev-good"


def test_one_template_with_arguments_judges_two_waves_each_by_its_own_threshold(
    clients: dict[str, ClusterClient], prefix: str, scraped: LocalPrometheus, tmp_path: Path
) -> None:
    repo = Repo(tmp_path / "repo", prefix)
    good = repo.write("rev-good", errors="0")
    assert rollout(clients, prefix, policy(scraped, prefix), []).sync(good).outcome is RolloutOutcome.APPLIED
    query = f'max(analysis_test_errors{{cluster="${{cluster}}",namespace="{prefix}"}})'
    template = {
        "name": "error-rate",
        "args": [{"name": "threshold"}, {"name": "count", "value": 2}],
        "metrics": [
            {
                "name": "error-rate",
                "query": query,
                "failureCondition": "result > {{args.threshold}}",
                "interval": "1s",
                "initialDelay": "2s",
                "count": "{{args.count}}",
            }
        ],
    }
    use = {"templates": [{"name": "error-rate", "args": {"threshold": 0.1}}]}
    strict = {"templates": [{"name": "error-rate", "args": {"threshold": 0.01, "count": 1}}]}
    data = {
        "prometheus": {"url": scraped.url, "caFile": str(scraped.ca_file)},
        "analysisTemplates": [template],
        "defaults": {"bake": "0s", "healthTimeout": "60s", "maxConcurrent": 2},
        "waves": [
            {
                "name": "canary",
                "percent": 1,
                "selector": {"matchLabels": {"tier": "canary"}},
                "analysis": use,
            },
            {"name": "rest", "percent": 100, "analysis": strict},
        ],
    }
    templated = parse_rollout_policy(json.loads(json.dumps(data)), "rollout.yaml")
    log: list[PassEvent] = []
    report = rollout(clients, prefix, templated, log).sync(
        repo.write("rev-next", errors="0.05"), last_good=good
    )
    # 0.05 is within the canary's 0.1 (two measurements) and beyond the rest's 0.01 (one).
    told = [e.reason for e in log if e.step is Step.ANALYSIS_MEASURED]
    assert report.waves[0].decision is Decision.PROCEED, told
    assert report.outcome is RolloutOutcome.ROLLED_BACK, report
    assert sorted(measured(log)) == [
        ("canary", MeasurementOutcome.SUCCESS, 0.05),
        ("canary", MeasurementOutcome.SUCCESS, 0.05),
        ("eu-1", MeasurementOutcome.FAILURE, 0.05),
        ("us-1", MeasurementOutcome.FAILURE, 0.05),
    ]
    assert "error-rate: 1 failed measurement(s), 0 allowed" in report.message


def test_a_query_with_no_series_is_inconclusive_and_halts_for_a_person(
    clients: dict[str, ClusterClient], prefix: str, scraped: LocalPrometheus, tmp_path: Path
) -> None:
    repo = Repo(tmp_path / "repo", prefix)
    good = repo.write("rev-good", errors="0")
    assert rollout(clients, prefix, policy(scraped, prefix), []).sync(good).outcome is RolloutOutcome.APPLIED
    nothing = f'max(analysis_test_nothing{{cluster="${{cluster}}",namespace="{prefix}"}})'
    log: list[PassEvent] = []
    report = rollout(clients, prefix, policy(scraped, prefix, query=nothing), log).sync(
        repo.write("rev-next", errors="0"), last_good=good
    )
    assert report.outcome is RolloutOutcome.HALTED, report
    assert gate_verdicts(log) == [(Step.GATE_HALT, AnalysisVerdict.INCONCLUSIVE)]
    assert [w.name for w in report.waves] == ["canary"]
    assert (
        "canary: analysis inconclusive: error-rate: 1 inconclusive measurement(s), 0 allowed"
        in report.message
    )
    assert "waiting for a person" in report.message
    assert state(clients, prefix, "eu-1").revision == "rev-good", "later waves must not start"


def test_prometheus_stopped_mid_analysis_is_inconclusive_and_a_retry_measures_again(
    clients: dict[str, ClusterClient],
    prefix: str,
    scraped: LocalPrometheus,
    tmp_path: Path,
    fleet: FleetHandle,
) -> None:
    repo = Repo(tmp_path / "repo", prefix)
    good = repo.write("rev-good", errors="0")
    assert rollout(clients, prefix, policy(scraped, prefix), []).sync(good).outcome is RolloutOutcome.APPLIED
    following = repo.write("rev-next", errors="0.001")
    log: list[PassEvent] = []

    def stop_prometheus_after_the_first_measurement(event: PassEvent) -> None:
        log.append(event)
        if event.step is Step.ANALYSIS_MEASURED and len(measured(log)) == 1:
            prometheus.stop(fleet.state.root, say=lambda msg: None)

    tolerant = policy(scraped, prefix, count=5, consecutiveErrorLimit=1)
    options = RolloutOptions(rollout=tolerant, state_namespace=f"{prefix}-state", health_poll=0.5)
    report = FleetRollout(
        clients, options, listener=stop_prometheus_after_the_first_measurement, hooks=UNFENCED_HOOKS
    ).sync(following, last_good=good)
    assert report.outcome is RolloutOutcome.HALTED, report
    assert "error-rate: 2 errors in a row, 1 allowed; waiting for a person" in report.message
    assert [outcome for _, outcome, _ in measured(log)] == [
        MeasurementOutcome.SUCCESS,
        MeasurementOutcome.ERROR,
        MeasurementOutcome.ERROR,
    ]
    assert state(clients, prefix, "eu-1").revision == "rev-good", "later waves must not start"

    prometheus.start(fleet.state.root, say=lambda msg: None)
    again = rollout(clients, prefix, tolerant, []).sync(following, last_good=good)
    assert again.outcome is RolloutOutcome.HALTED, "nothing but a person's act resumes it"
    assert "failed before" in again.message
    request = RetryRequest("rev-next", "ops@example.test", "Prometheus is back", time.time())
    PersonActs(clients["canary"], f"{prefix}-state").record_retry(request)
    log.clear()
    resumed = rollout(clients, prefix, tolerant, log).sync(following, last_good=good)
    assert resumed.outcome is RolloutOutcome.APPLIED, resumed
    assert measured(log) == [("canary", MeasurementOutcome.SUCCESS, 0.001)] * 5, "the retry measures afresh"


def test_a_baseline_of_the_clusters_not_yet_changed_passes_a_like_canary_and_fails_a_degraded_one(
    clients: dict[str, ClusterClient], prefix: str, scraped: LocalPrometheus, tmp_path: Path
) -> None:
    repo = Repo(tmp_path / "repo", prefix)
    first = repo.write("rev-1", errors="0.01")
    assert rollout(clients, prefix, policy(scraped, prefix), []).sync(first).outcome is RolloutOutcome.APPLIED
    compared = policy(
        scraped,
        prefix,
        count=2,
        baseline="previous",
        failureCondition=None,
        successCondition="result <= baseline * 1.2 + 0.001",
    )
    like = repo.write("rev-2", errors="0.011")
    log: list[PassEvent] = []
    assert (
        rollout(clients, prefix, compared, log).sync(like, last_good=first).outcome is RolloutOutcome.APPLIED
    )
    told = [e.measurement for e in log if e.measurement is not None]
    assert [(m.value, m.baseline, m.outcome) for m in told] == [(0.011, 0.01, MeasurementOutcome.SUCCESS)] * 2

    degraded = repo.write("rev-3", errors="0.05")
    log.clear()
    report = rollout(clients, prefix, compared, log).sync(degraded, last_good=like)
    assert report.outcome is RolloutOutcome.ROLLED_BACK, report
    assert "canary: analysis failed: error-rate: 1 failed measurement(s), 0 allowed" in report.message
    told = [e.measurement for e in log if e.measurement is not None]
    assert [(m.value, m.baseline, m.outcome) for m in told] == [(0.05, 0.011, MeasurementOutcome.FAILURE)]
    assert [state(clients, prefix, n).revision for n in ("canary", "eu-1", "us-1")] == ["rev-2"] * 3


def test_a_first_rollout_with_a_previous_baseline_passes_as_stated_or_halts_when_asked(
    clients: dict[str, ClusterClient], prefix: str, scraped: LocalPrometheus, tmp_path: Path
) -> None:
    """No cluster runs a revision yet: there is nothing to compare with. By default the measurement
    passes and says why; ``firstRollout: inconclusive`` halts for a person instead."""
    first = Repo(tmp_path / "repo", prefix).write("rev-1", errors="0.01")
    compared = {"count": 1, "baseline": "previous", "failureCondition": None}
    compared["successCondition"] = "result <= baseline * 1.2 + 0.001"
    log: list[PassEvent] = []
    halting = policy(scraped, prefix, **compared, firstRollout="inconclusive")
    report = rollout(clients, prefix, halting, log).sync(first)
    assert report.outcome is RolloutOutcome.HALTED, report
    assert [m.detail for e in log if (m := e.measurement) is not None] == [
        "first rollout: no cluster runs a previous revision (firstRollout: inconclusive)"
    ]
    # The person changes the policy and tries the revision again.
    retry = RetryRequest("rev-1", "ops", "first rollout: judged without a baseline", time.time())
    PersonActs(clients["canary"], f"{prefix}-state").record_retry(retry)
    log.clear()
    report = rollout(clients, prefix, policy(scraped, prefix, **compared), log).sync(first)
    assert report.outcome is RolloutOutcome.APPLIED, report
    told = [e.measurement for e in log if e.measurement is not None]
    assert [(m.outcome, m.detail) for m in told] == [
        (
            MeasurementOutcome.SUCCESS,
            "first rollout: no cluster runs a previous revision (firstRollout: pass)",
        )
    ]


def test_a_failing_dry_run_metric_lets_the_wave_proceed_and_says_so(
    clients: dict[str, ClusterClient], prefix: str, scraped: LocalPrometheus, tmp_path: Path
) -> None:
    repo = Repo(tmp_path / "repo", prefix)
    good = repo.write("rev-good", errors="0")
    assert rollout(clients, prefix, policy(scraped, prefix), []).sync(good).outcome is RolloutOutcome.APPLIED
    log: list[PassEvent] = []
    report = rollout(clients, prefix, policy(scraped, prefix, dryRun=True), log).sync(
        repo.write("rev-worse", errors="0.5"), last_good=good
    )
    assert report.outcome is RolloutOutcome.APPLIED, report
    assert "canary: error-rate failed (dry run): 1 failed measurement(s), 0 allowed" in report.waves[0].reason
    assert measured(log) == [("canary", MeasurementOutcome.FAILURE, 0.5)]
    assert state(clients, prefix, "us-1").revision == "rev-worse"


def test_a_stopped_rollout_resumes_its_analysis_without_resetting_the_counts(
    clients: dict[str, ClusterClient], prefix: str, scraped: LocalPrometheus, tmp_path: Path
) -> None:
    repo = Repo(tmp_path / "repo", prefix)
    good = repo.write("rev-good", errors="0")
    assert rollout(clients, prefix, policy(scraped, prefix), []).sync(good).outcome is RolloutOutcome.APPLIED
    following = repo.write("rev-next", errors="0.001")
    longer = policy(scraped, prefix, count=4)
    log: list[PassEvent] = []
    stop = threading.Event()

    def stop_after_two(event: PassEvent) -> None:
        log.append(event)
        if event.step is Step.ANALYSIS_MEASURED and len(measured(log)) == 2:
            stop.set()

    options = RolloutOptions(rollout=longer, state_namespace=f"{prefix}-state", health_poll=0.5)
    stopped = FleetRollout(clients, options, stop=stop, listener=stop_after_two, hooks=UNFENCED_HOOKS).sync(
        following, last_good=good
    )
    assert stopped.outcome is RolloutOutcome.INTERRUPTED, stopped
    counts = state(clients, prefix, "canary").analysis.counts("error-rate")
    assert (counts.taken, counts.successes) == (2, 2)
    log.clear()
    resumed = rollout(clients, prefix, longer, log).sync(following, last_good=good)
    assert resumed.outcome is RolloutOutcome.APPLIED, resumed
    assert len(measured(log)) == 2, "the two measurements left, not four again"
    assert state(clients, prefix, "canary").analysis.counts("error-rate").taken == 4
