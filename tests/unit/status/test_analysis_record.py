"""A cluster's analysis counts as the state keeps them, as status shows them and as metrics tell them."""

from __future__ import annotations

import json
import math

import pytest
from prometheus_client import CollectorRegistry

from syncer.domain.analysis import (
    AnalysisRecord,
    AnalysisVerdict,
    Measurement,
    MeasurementOutcome,
    MetricCounts,
)
from syncer.domain.progress import PassEvent, Step
from syncer.domain.sync_state import ClusterSyncState
from syncer.status import decode, encode
from syncer.status.metrics import SyncerMetrics
from syncer.status.report import EventReporter
from syncer.status.state_store import StateFormatError

RECORD = AnalysisRecord(
    "a" * 40,
    100.0,
    (
        MetricCounts("errors", taken=3, successes=2, failures=1, last_at=130.0, last_value=0.25),
        MetricCounts("lag", taken=2, inconclusive=1, errors=1, consecutive_errors=1, last_at=131.0),
    ),
)


def test_the_counts_survive_the_round_trip_so_a_restart_goes_on_from_them() -> None:
    state = ClusterSyncState("eu-1", revision="a" * 40, analysis=RECORD)
    assert decode("eu-1", encode(state)).analysis == RECORD


def test_a_state_written_before_analysis_reads_as_none() -> None:
    text = json.dumps({"version": 1, "state": {"revision": "r"}})
    assert decode("eu-1", text).analysis == AnalysisRecord()


def test_unreadable_counts_are_a_format_problem() -> None:
    text = json.dumps({"version": 1, "state": {"analysis": {"metrics": [{"metric": "x", "taken": "many"}]}}})
    with pytest.raises(StateFormatError, match="taken must be a number"):
        decode("eu-1", text)


def test_status_shows_each_metric_in_one_line() -> None:
    assert RECORD.summary() == (
        "errors: 3 taken, 2 ok, 1 failed, 0 inconclusive, 0 errors, last 0.25; "
        "lag: 2 taken, 0 ok, 0 failed, 1 inconclusive, 1 errors"
    )


def test_a_measurement_sets_value_baseline_threshold_and_counts() -> None:
    registry = CollectorRegistry()
    reporter = EventReporter(SyncerMetrics(registry), {}, "syncer-system")
    measured = Measurement(
        "errors",
        0.02,
        "success: result <= baseline * 1.2",
        MeasurementOutcome.FAILURE,
        AnalysisVerdict.FAILED,
        "",
        baseline=0.01,
    )
    reporter(PassEvent(Step.ANALYSIS_MEASURED, "canary", "eu-1", "r", measurement=measured))
    missing = Measurement(
        "errors",
        None,
        "success: result <= baseline * 1.2",
        MeasurementOutcome.ERROR,
        AnalysisVerdict.RUNNING,
        "",
    )
    reporter(PassEvent(Step.ANALYSIS_MEASURED, "canary", "us-1", "r", measurement=missing))
    where = {"metric": "errors", "cluster": "eu-1", "wave": "canary"}
    assert registry.get_sample_value("syncer_analysis_value", where) == 0.02
    assert registry.get_sample_value("syncer_analysis_baseline", where) == 0.01
    condition = {**where, "condition": "success: result <= baseline * 1.2"}
    assert registry.get_sample_value("syncer_analysis_threshold", condition) == 1.0
    assert (
        registry.get_sample_value("syncer_analysis_total", {"metric": "errors", "result": "failure"}) == 1.0
    )
    assert registry.get_sample_value("syncer_analysis_total", {"metric": "errors", "result": "error"}) == 1.0
    nothing = registry.get_sample_value("syncer_analysis_value", {**where, "cluster": "us-1"})
    assert nothing is not None
    assert math.isnan(nothing)
