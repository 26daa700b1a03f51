"""The agent's Prometheus metrics, on a registry the caller owns (one per agent; a fresh one per test)."""

from __future__ import annotations

import math

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from syncer.domain.analysis import Measurement
from syncer.domain.rollout_status import RolloutStatus, WavePhase


class SyncerMetrics:
    """Every metric the agent exports; see docs/metrics.md for meanings and labels."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        r = self.registry
        self.sync_total = Counter(
            "syncer_sync",
            "Syncs by result: applied, repaired, unchanged, rejected, error, halted, rolled-back, "
            "interrupted, waiting, superseded, fenced-out.",
            ["result"],
            registry=r,
        )
        self.sync_duration = Histogram(
            "syncer_sync_duration_seconds",
            "Time from the start of a sync to its end.",
            buckets=(1, 5, 15, 30, 60, 120, 300, 600, 1200, 3600),
            registry=r,
        )
        self.revision_info = Gauge(
            "syncer_revision_info",
            "1 for the revision in force (the last good one the agent rolled out).",
            ["revision"],
            registry=r,
        )
        self.wave_state = Gauge(
            "syncer_wave_state",
            "1 for the phase each wave of the revision rolling out is in, 0 for the other phases.",
            ["wave", "state", "revision"],
            registry=r,
        )
        self.cluster_healthy = Gauge(
            "syncer_cluster_healthy",
            "1 when every object synced to the cluster is healthy.",
            ["cluster"],
            registry=r,
        )
        self.cluster_window_open = Gauge(
            "syncer_cluster_window_open",
            "1 when the cluster may change now (inside its maintenance window, or overridden), 0 when a "
            "change to it waits for its window; set when a change or a drift repair is due.",
            ["cluster"],
            registry=r,
        )
        self.wave_awaiting_approval = Gauge(
            "syncer_wave_awaiting_approval",
            "1 while the wave waits at its manual gate for a person to promote the revision "
            "(syncer promote), 0 once it is promoted or aborted.",
            ["wave", "revision"],
            registry=r,
        )
        self.cluster_suspended = Gauge(
            "syncer_cluster_suspended",
            "1 while a person's suspension (syncer suspend) holds every change to the cluster back, "
            "0 otherwise; set at the end of each pass from what the cluster records.",
            ["cluster"],
            registry=r,
        )
        self.cluster_pinned = Gauge(
            "syncer_cluster_pinned",
            "1 while a person's pin (syncer rollback) keeps the cluster on a revision and off newer "
            "ones, 0 otherwise; set at the end of each pass from what the cluster records.",
            ["cluster"],
            registry=r,
        )
        self.cluster_reachable = Gauge(
            "syncer_cluster_reachable",
            "1 when the cluster's sync state could be read at the last pass, 0 when it could not.",
            ["cluster"],
            registry=r,
        )
        self.apply_objects = Counter(
            "syncer_apply_objects",
            "Objects applied, by cluster and action.",
            ["cluster", "action"],
            registry=r,
        )
        self.apply_errors = Counter(
            "syncer_apply_errors",
            "Applies to a cluster that failed, in a wave or repairing drift, by cluster.",
            ["cluster"],
            registry=r,
        )
        self.git_poll = Counter(
            "syncer_git_poll",
            "Polls of the git remote by result: unchanged, changed, error.",
            ["result"],
            registry=r,
        )
        self.signature_verification = Counter(
            "syncer_signature_verification",
            "Revisions verified, by result: trusted or the failing verdict.",
            ["result"],
            registry=r,
        )
        self.http_refused = Counter(
            "syncer_http_refused",
            "HTTP requests and connections refused, by reason: unauthorized, too-large, bad-length, "
            "chunked, malformed, timeout, busy, per-client.",
            ["reason"],
            registry=r,
        )
        self.notifications = Counter(
            "syncer_notifications",
            "Notifications by receiver and result: sent, failed (after its retries), dropped (the "
            "receiver's queue was full), folded (a duplicate within the fold window) or refused (the "
            "receiver's host resolved to a link-local, unspecified or multicast address).",
            ["receiver", "result"],
            registry=r,
        )
        self.leader = Gauge("syncer_leader", "1 while this agent holds the leader lease.", registry=r)
        self.cluster_owner = Gauge(
            "syncer_cluster_owner",
            "Sharded replicas: 1 for each cluster and the replica that owns it, as this replica sees it "
            "(itself for the clusters whose owner Lease it holds).",
            ["cluster", "replica"],
            registry=r,
        )

        self.analysis_value = Gauge(
            "syncer_analysis_value",
            "The last value a wave's analysis measured for a metric on a cluster (NaN: it had none).",
            ["metric", "cluster", "wave"],
            registry=r,
        )
        self.analysis_baseline = Gauge(
            "syncer_analysis_baseline",
            "The baseline the last measurement of a metric on a cluster was compared with.",
            ["metric", "cluster", "wave"],
            registry=r,
        )
        self.analysis_threshold = Gauge(
            "syncer_analysis_threshold",
            "1 for the conditions (CEL over result and baseline) a metric on a cluster is held to.",
            ["metric", "cluster", "wave", "condition"],
            registry=r,
        )
        self.analysis_total = Counter(
            "syncer_analysis",
            "Measurements of analysis metrics by result: success, failure, inconclusive, error.",
            ["metric", "result"],
            registry=r,
        )

    def set_revision(self, revision: str) -> None:
        self.revision_info.clear()
        self.revision_info.labels(revision=revision).set(1)

    def show_rollout(self, status: RolloutStatus) -> None:
        """``syncer_wave_state`` as ``status`` has it: one phase per wave, for the revision rolling
        out only (the series of an earlier revision are removed)."""
        if not status.revision:
            return
        shown = {labels[2] for labels in self._wave_series()}
        if shown - {status.revision}:
            self.wave_state.clear()
        for wave in status.waves:
            for phase in WavePhase:
                self.wave_state.labels(wave=wave.name, state=str(phase), revision=status.revision).set(
                    1 if phase is wave.phase else 0
                )

    def _wave_series(self) -> list[tuple[str, ...]]:
        return [
            tuple(sample.labels[k] for k in ("wave", "state", "revision"))
            for metric in self.wave_state.collect()
            for sample in metric.samples
        ]

    def measured(self, wave: str, cluster: str, measurement: Measurement) -> None:
        """Record one measurement of a wave's analysis."""
        where = {"metric": measurement.metric, "cluster": cluster, "wave": wave}
        self.analysis_value.labels(**where).set(math.nan if measurement.value is None else measurement.value)
        if measurement.baseline is not None:
            self.analysis_baseline.labels(**where).set(measurement.baseline)
        self.analysis_threshold.labels(**where, condition=measurement.threshold).set(1)
        self.analysis_total.labels(metric=measurement.metric, result=str(measurement.outcome)).inc()
