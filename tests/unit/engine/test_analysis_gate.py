"""The analysis gate's own decisions over recorded answers: what is asked when, of which Prometheus,
with which baseline, and how counts resume (no Prometheus here: the answers are given)."""

from __future__ import annotations

from dataclasses import replace

from syncer.analysis import AnalysisPolicy, Baseline, MetricSpec, PrometheusSource, QueryAnswer
from syncer.config.rollout import WaveGate
from syncer.domain.analysis import AnalysisRecord, AnalysisVerdict, MeasurementOutcome, MetricCounts
from syncer.domain.objects import ClusterManifests, DesiredFleet, Manifest, ObjectKey
from syncer.domain.progress import PassEvent
from syncer.domain.sync_state import ClusterSyncState, RetryRequest
from syncer.engine.analysis_gate import AnalysisGate
from syncer.errors import Location
from syncer.guards.language import Program, compile_expression
from syncer.rollout import Wave

HERE = PrometheusSource("http://prometheus.test")
OWN = PrometheusSource("http://eu-1.prometheus.test")


def program(source: str) -> Program:
    compiled = compile_expression(source, analysis=True)
    assert isinstance(compiled, Program)
    return compiled


def redis(cluster: str, name: str) -> Manifest:
    key = ObjectKey(cluster, "redis.syncer.dev", "RedisCluster", "cache", name)
    return Manifest(key, "redis.syncer.dev/v1alpha1", {"metadata": {"name": name}}, Location("fleet.yaml"))


FLEET = DesiredFleet(
    "rev-2",
    {
        "canary": ClusterManifests.of("canary", [redis("canary", "a"), redis("canary", "b")]),
        "eu-1": ClusterManifests.of("eu-1", []),
        "us-1": ClusterManifests.of("us-1", []),
    },
)


class Answers:
    """Recorded answers by (Prometheus URL, query), and what was asked."""

    def __init__(self, answers: dict[tuple[str, str], QueryAnswer]) -> None:
        self.answers = answers
        self.asked: list[tuple[str, str, float | None]] = []

    def __call__(self, source: PrometheusSource, promql: str, at: float | None) -> QueryAnswer:
        self.asked.append((source.url, promql, at))
        return self.answers.get((source.url, promql), QueryAnswer(missing="the query gives no series"))


def wave(*metrics: MetricSpec) -> Wave:
    policy = AnalysisPolicy(metrics, HERE, (("eu-1", OWN),))
    return Wave(0, "canary", ("canary",), WaveGate(analysis=policy))


def states(**changes: ClusterSyncState) -> dict[str, ClusterSyncState]:
    made = {
        "canary": ClusterSyncState("canary", revision="rev-2", applied_at=50.0),
        "eu-1": ClusterSyncState("eu-1", revision="rev-1"),
        "us-1": ClusterSyncState("us-1", revision="rev-1"),
    }
    return {**made, **changes}


def test_the_baseline_is_the_mean_of_the_clusters_on_the_previous_revision_each_from_its_own_prometheus() -> (
    None
):
    metric = MetricSpec(
        "errors",
        'sum(e{cluster="${cluster}"})',
        success=program("result <= baseline * 1.2 + 0.001"),
        baseline=Baseline.PREVIOUS,
    )
    answers = Answers(
        {
            (HERE.url, 'sum(e{cluster="canary"})'): QueryAnswer(0.0125),
            (OWN.url, 'sum(e{cluster="eu-1"})'): QueryAnswer(0.01),
            (HERE.url, 'sum(e{cluster="us-1"})'): QueryAnswer(0.012),
        }
    )
    told: list[PassEvent] = []
    looked = AnalysisGate(answers, lambda: 100.0, told.append).look(wave(metric), FLEET, states())
    assert looked.verdict.verdict is AnalysisVerdict.SUCCESSFUL
    (event,) = told
    assert event.measurement is not None
    assert (event.measurement.value, event.measurement.baseline) == (0.0125, 0.011)
    assert event.measurement.outcome is MeasurementOutcome.SUCCESS


def test_a_baseline_before_is_asked_at_the_apply_time() -> None:
    metric = MetricSpec(
        "errors", 'e{cluster="${cluster}"}', failure=program("result > baseline"), baseline=Baseline.BEFORE
    )
    answers = Answers({(HERE.url, 'e{cluster="canary"}'): QueryAnswer(0.5)})
    AnalysisGate(answers, lambda: 100.0, lambda _: None).look(wave(metric), FLEET, states())
    assert answers.asked == [(HERE.url, 'e{cluster="canary"}', None), (HERE.url, 'e{cluster="canary"}', 50.0)]


def test_a_query_naming_objects_is_asked_per_redis_cluster_and_the_worst_counts() -> None:
    metric = MetricSpec(
        "lag", 'lag{namespace="${namespace}",name="${name}"}', failure=program("result > 1.0")
    )
    answers = Answers(
        {
            (HERE.url, 'lag{namespace="cache",name="a"}'): QueryAnswer(0.2),
            (HERE.url, 'lag{namespace="cache",name="b"}'): QueryAnswer(3.0),
        }
    )
    looked = AnalysisGate(answers, lambda: 100.0, lambda _: None).look(wave(metric), FLEET, states())
    assert looked.verdict.verdict is AnalysisVerdict.FAILED
    assert looked.verdict.clusters == (
        ("canary", "analysis failed: lag: 1 failed measurement(s), 0 allowed"),
    )


def test_nothing_is_asked_before_it_is_due_and_recorded_counts_go_on() -> None:
    metric = MetricSpec("errors", "up", failure=program("result > 1.0"), interval=10.0, count=3)
    record = AnalysisRecord("rev-2", 40.0, (MetricCounts("errors", taken=2, successes=2, last_at=95.0),))
    answers = Answers({(HERE.url, "up"): QueryAnswer(0.0)})
    gate = AnalysisGate(answers, lambda: 100.0, lambda _: None)
    looked = gate.look(wave(metric), FLEET, states(canary=replace(states()["canary"], analysis=record)))
    assert answers.asked == []
    assert (looked.verdict.verdict, looked.verdict.wait) == (AnalysisVerdict.RUNNING, 5.0)
    assert looked.states == {}, "nothing measured, nothing to write"
    later = AnalysisGate(answers, lambda: 105.0, lambda _: None)
    looked = later.look(wave(metric), FLEET, states(canary=replace(states()["canary"], analysis=record)))
    assert looked.verdict.verdict is AnalysisVerdict.SUCCESSFUL
    assert looked.states["canary"].analysis.counts("errors").taken == 3


def test_a_retry_after_the_analysis_began_starts_it_afresh() -> None:
    metric = MetricSpec("errors", "up", failure=program("result > 1.0"))
    record = AnalysisRecord("rev-2", 40.0, (MetricCounts("errors", taken=1, inconclusive=1, last_at=41.0),))
    retried = replace(states()["canary"], analysis=record, retry=RetryRequest("rev-2", "ops", "back", 60.0))
    answers = Answers({(HERE.url, "up"): QueryAnswer(0.0)})
    looked = AnalysisGate(answers, lambda: 100.0, lambda _: None).look(
        wave(metric), FLEET, states(canary=retried)
    )
    assert looked.verdict.verdict is AnalysisVerdict.SUCCESSFUL
    assert looked.states["canary"].analysis.counts("errors") == MetricCounts(
        "errors", 1, 1, last_at=100.0, last_value=0.0
    )


def test_a_retry_of_another_revision_keeps_the_counts_of_the_analysis_in_progress() -> None:
    # `syncer retry --revision rev-1` lifts an old failure of rev-1 while rev-2's analysis runs: the
    # failure rev-2's analysis counted stays counted, and the wave fails on it.
    metric = MetricSpec("errors", "up", failure=program("result > 1.0"), interval=10.0, count=3)
    counted = MetricCounts("errors", taken=2, successes=1, failures=1, last_at=45.0)
    record = AnalysisRecord("rev-2", 40.0, (counted,))
    retried = replace(states()["canary"], analysis=record, retry=RetryRequest("rev-1", "ops", "old", 60.0))
    answers = Answers({(HERE.url, "up"): QueryAnswer(0.0)})
    looked = AnalysisGate(answers, lambda: 100.0, lambda _: None).look(
        wave(metric), FLEET, states(canary=retried)
    )
    assert looked.verdict.verdict is AnalysisVerdict.FAILED, looked.verdict
    assert answers.asked == [], "a failed analysis measures no more"
