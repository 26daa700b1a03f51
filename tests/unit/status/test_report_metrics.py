"""What the pass's events set in the agent's metrics: failed applies are counted per cluster (the
chart's apply-error alert reads ``syncer_apply_errors_total``)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry

from syncer.domain.progress import PassEvent, Step
from syncer.status.metrics import SyncerMetrics
from syncer.status.report import EventReporter


def reporter() -> tuple[EventReporter, CollectorRegistry]:
    registry = CollectorRegistry()
    return EventReporter(SyncerMetrics(registry), {}, "syncer-system"), registry


def test_failed_applies_and_failed_drift_repairs_count_as_apply_errors_of_their_cluster() -> None:
    report, registry = reporter()
    report(PassEvent(Step.APPLY_FAILED, wave="canary", cluster="eu-1", error="Invalid: spec.shards"))
    report(PassEvent(Step.DRIFT_REPAIR_FAILED, cluster="eu-1", error="Forbidden"))
    report(PassEvent(Step.APPLY_FAILED, wave="canary", cluster="us-1", error="Conflict"))
    # A successful apply and a drift repair that worked are no errors.
    report(PassEvent(Step.APPLIED, wave="canary", cluster="eu-1", objects=3))
    report(PassEvent(Step.DRIFT_REPAIRED, cluster="us-1", objects=1))
    assert registry.get_sample_value("syncer_apply_errors_total", {"cluster": "eu-1"}) == 2
    assert registry.get_sample_value("syncer_apply_errors_total", {"cluster": "us-1"}) == 1
