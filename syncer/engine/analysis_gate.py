"""The canary analysis of a wave that is healthy and baked: each metric measured on each cluster when
due, counted in the cluster's state, and the wave's verdict.

Each measurement is told as an ``analysis-measured`` event; the counts go into each cluster's state
(``ClusterSyncState.analysis``) by the gate, so a restarted agent goes on from them. Counts of another
revision, or older than a person's ``syncer retry`` of the revision (or of any), start afresh.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from statistics import fmean

from syncer.analysis import (
    AnalysisPolicy,
    Baseline,
    Judged,
    MeasurementOutcome,
    MetricSpec,
    PrometheusSource,
    QueryAnswer,
    QueryArgs,
    WebSource,
    advance,
    judge_value,
    next_due,
    render_query,
    verdict_of,
)
from syncer.analysis.model import FirstRollout
from syncer.analysis.query import uses_objects
from syncer.analysis.wave import MetricStanding, WaveAnalysisVerdict, judge_analysis
from syncer.domain.analysis import AnalysisRecord, AnalysisVerdict, Measurement
from syncer.domain.objects import DesiredFleet
from syncer.domain.progress import Listener, PassEvent, Step
from syncer.domain.sync_state import ClusterSyncState
from syncer.prom import PrometheusClient
from syncer.prom.web import fetch_web
from syncer.rollout import Wave
from syncer.tracing import span

QueryFn = Callable[[PrometheusSource, str, float | None], QueryAnswer]
"""Asks one Prometheus for the number ``promql`` gives now (``None``) or at a time."""
WebFn = Callable[[WebSource, QueryArgs], QueryAnswer]
"""Asks a web metric's endpoint for the number it gives now, its arguments filled from the args."""

# Worst first: the outcome a cluster's measurement takes when it is measured once per object.
_WORST = (
    MeasurementOutcome.FAILURE,
    MeasurementOutcome.ERROR,
    MeasurementOutcome.INCONCLUSIVE,
    MeasurementOutcome.SUCCESS,
)
_REDIS_CLUSTER = "RedisCluster"


def query_prometheus(source: PrometheusSource, promql: str, at: float | None) -> QueryAnswer:
    """``promql`` asked of ``source`` over HTTP (``syncer.prom``)."""
    client = PrometheusClient(source)
    try:
        return client.query(promql, at)
    finally:
        client.close()


@dataclass(frozen=True)
class AnalysisPass:
    """One look at a wave's analysis: the verdict, and the states of the clusters whose counts changed
    (only those are written: a look that measured nothing writes nothing)."""

    verdict: WaveAnalysisVerdict
    states: Mapping[str, ClusterSyncState]


class AnalysisGate:
    """Measures the metrics of a wave's analysis when due (see the module docstring)."""

    def __init__(
        self, query: QueryFn, clock: Callable[[], float], listener: Listener, web: WebFn = fetch_web
    ) -> None:
        self.query = query
        self.web = web
        self.clock = clock
        self.listener = listener

    def look(
        self,
        wave: Wave,
        fleet: DesiredFleet,
        states: Mapping[str, ClusterSyncState],
        measures: Callable[[str], bool] = lambda _: True,
        *,
        background: bool = False,
    ) -> AnalysisPass:
        """Measure what is due on each cluster of ``wave`` that this writer ``measures`` and judge the
        whole wave; ``states`` are every cluster's (the others' give the ``previous`` baselines).

        A cluster another writer measures (a sharded replica's) is judged from the counts its state
        records, read fresh by the caller: nothing is measured or written for it, and a record of
        another revision is an analysis that has not begun there. So every replica reaches the
        wave's verdict from the same counts, and none proceeds while the canary's owner measures.

        ``background``: ``wave`` is the rollout's background analysis over the clusters on the
        revision; its counts are the clusters' ``background`` record, not their wave's."""
        policy, name = wave.gate.analysis, wave.name
        standings: dict[str, tuple[MetricStanding, ...]] = {}
        updated: dict[str, ClusterSyncState] = {}
        for cluster in wave.clusters:
            state = states[cluster]
            measured = measures(cluster)
            kept = state.background if background else state.analysis
            record = self._record(state, kept, fleet.revision)
            found = []
            for metric in policy.metrics:
                counts = record.counts(metric.name)
                verdict, reason = verdict_of(metric, counts)
                now = self.clock()
                due = next_due(metric, counts, record.started)
                if not measured:
                    # Looked at again within an interval: its owner measures it when due.
                    due = max(due, now + metric.interval) if verdict is AnalysisVerdict.RUNNING else due
                elif verdict is AnalysisVerdict.RUNNING and due <= now:
                    attributes = {
                        "syncer.cluster": cluster,
                        "syncer.wave": name,
                        "syncer.metric": metric.name,
                    }
                    with span("syncer.analysis.measure", attributes) as measuring:
                        judged = self._measure(metric, policy, (cluster, name), fleet, states)
                        measuring.set("syncer.result", judged.outcome.value)
                    counts = advance(counts, judged, now)
                    verdict, reason = verdict_of(metric, counts)
                    due = next_due(metric, counts, record.started)
                    record = replace(
                        record, metrics=(*(c for c in record.metrics if c.metric != metric.name), counts)
                    )
                    self._tell(metric, judged, verdict, (name, cluster, fleet.revision))
                found.append(MetricStanding(metric, verdict, reason, due))
            standings[cluster] = tuple(found)
            if measured and record != kept:
                updated[cluster] = (
                    replace(state, background=record) if background else replace(state, analysis=record)
                )
        return AnalysisPass(judge_analysis(standings, self.clock()), updated)

    def _record(self, state: ClusterSyncState, record: AnalysisRecord, revision: str) -> AnalysisRecord:
        if record.revision != revision or state.retry.restarts(record):
            return AnalysisRecord(revision, self.clock())
        return record

    def _measure(
        self,
        metric: MetricSpec,
        policy: AnalysisPolicy,
        where: tuple[str, str],
        fleet: DesiredFleet,
        states: Mapping[str, ClusterSyncState],
    ) -> Judged:
        """One measurement of ``metric`` on a cluster (``where``: it and its wave), once per
        RedisCluster when the query names objects (the worst outcome counts)."""
        cluster, wave = where
        source = policy.source_for(cluster)
        if source is None and metric.web is None:
            return Judged(MeasurementOutcome.ERROR, None, f"no Prometheus for cluster {cluster}")
        args = [QueryArgs(cluster, fleet.revision, wave)]
        if uses_objects(metric.template):
            keys = [m.key for m in fleet.clusters[cluster].manifests if m.key.kind == _REDIS_CLUSTER]
            args = [replace(args[0], namespace=k.namespace, name=k.name) for k in keys]
        if not args:
            return Judged(MeasurementOutcome.INCONCLUSIVE, None, "no RedisCluster on the cluster to measure")
        first = metric.baseline is Baseline.PREVIOUS and not any(
            s.revision and s.revision != fleet.revision for other, s in states.items() if other != cluster
        )
        if first:
            # The fleet's first rollout: no cluster runs a revision the measurement could be
            # compared with, and none will until this one passes. Judged as the metric says.
            why = f"first rollout: no cluster runs a previous revision (firstRollout: {metric.first_rollout})"
            passes = metric.first_rollout is FirstRollout.PASS
            return Judged(
                MeasurementOutcome.SUCCESS if passes else MeasurementOutcome.INCONCLUSIVE, None, why
            )
        if metric.web is not None:
            web = metric.web
            judged = [judge_value(metric, self.web(web, arg), None) for arg in args]
            return min(judged, key=lambda j: _WORST.index(j.outcome))
        assert source is not None  # only a web metric measures without a Prometheus
        judged = []
        for arg in args:
            answer = self.query(source, render_query(metric.query, arg), None)
            judged.append(judge_value(metric, answer, self._baseline(metric, policy, arg, states)))
        return min(judged, key=lambda j: _WORST.index(j.outcome))

    def _baseline(
        self,
        metric: MetricSpec,
        policy: AnalysisPolicy,
        args: QueryArgs,
        states: Mapping[str, ClusterSyncState],
    ) -> QueryAnswer | None:
        """The baseline of one measurement: the same query over the measured cluster at its apply
        (``before``), or the mean over the clusters not on the revision (``previous``)."""
        if metric.baseline is Baseline.NONE:
            return None
        if metric.baseline is Baseline.BEFORE:
            source = policy.source_for(args.cluster)
            applied = states[args.cluster].applied_at
            if source is None or not applied:
                return QueryAnswer(missing="no apply time recorded")
            return self.query(source, render_query(metric.query, args), applied)
        values = []
        for other, state in sorted(states.items()):
            source = policy.source_for(other)
            if other == args.cluster or state.revision in ("", args.revision) or source is None:
                continue  # itself, a cluster on the revision, or one that runs nothing yet
            answer = self.query(source, render_query(metric.query, replace(args, cluster=other)), None)
            if answer.value is not None:
                values.append(answer.value)
        if not values:
            return QueryAnswer(missing="no cluster on the previous revision gave a value")
        return QueryAnswer(fmean(values))

    def _tell(
        self, metric: MetricSpec, judged: Judged, verdict: AnalysisVerdict, where: tuple[str, str, str]
    ) -> None:
        wave, cluster, revision = where
        measurement = Measurement(
            metric.name,
            judged.value,
            metric.threshold,
            judged.outcome,
            verdict,
            judged.detail,
            metric.dry_run,
            judged.baseline,
        )
        dry = " (dry run)" if metric.dry_run else ""
        reason = f"{metric.name}: {judged.outcome}{dry}: {judged.detail}"
        self.listener(
            PassEvent(Step.ANALYSIS_MEASURED, wave, cluster, revision, reason=reason, measurement=measurement)
        )


__all__ = ["AnalysisGate", "AnalysisPass", "QueryFn", "query_prometheus"]
