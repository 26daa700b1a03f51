"""A canary analysis seen from sharded replicas, through in-memory clusters: the replica that owns the
canary measures it; a replica that owns none of the wave's clusters judges the wave from the counts
the owner records, so it neither proceeds while the canary is still measured nor after it failed."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import replace

from syncer.analysis import AnalysisPolicy, MetricSpec, PrometheusSource, QueryAnswer
from syncer.config.rollout import WaveGate
from syncer.domain.analysis import AnalysisVerdict, MetricCounts
from syncer.domain.progress import PassEvent, Step, Waiting
from syncer.engine.rollout import FleetRollout
from syncer.engine.rollout_model import RolloutHooks, RolloutOptions
from syncer.guards.language import Program, compile_expression
from syncer.rollout import Decision
from syncer.rollout.moves import RolloutOutcome
from syncer.status.state_store import StateStore
from tests.support.fleet_repo import LABELS, canary_then_rest
from tests.support.memory_kube import MemoryKube
from tests.support.memory_revisions import desired_fleet
from tests.support.unfenced import UNFENCED_EVERYWHERE

NAMESPACE = "syncer-state"
PROMETHEUS = PrometheusSource("http://prometheus.test")
OBJECTS = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "app"}}]


def program(source: str) -> Program:
    compiled = compile_expression(source, analysis=True)
    assert isinstance(compiled, Program)
    return compiled


ERRORS = MetricSpec("errors", "errors", failure=program("result > 0.1"), interval=3600.0, count=2)


def options(analysed: bool = True) -> RolloutOptions:
    analysis = AnalysisPolicy((ERRORS,) if analysed else (), PROMETHEUS)
    canary = WaveGate(max_concurrent=2, health_timeout=30.0, bake=0.0, analysis=analysis)
    policy = canary_then_rest(canary)
    rest = replace(policy.waves[1], gate=WaveGate(max_concurrent=2, health_timeout=30.0, bake=0.0))
    return RolloutOptions(
        rollout=replace(policy, waves=(policy.waves[0], rest)), state_namespace=NAMESPACE, health_poll=0.01
    )


class Replica:
    """One replica's rollout over the shared clusters, owning ``owned``; it stops once its gate waits
    for the analysis, and counts what it asks Prometheus."""

    def __init__(self, clusters: dict[str, MemoryKube], owned: set[str], analysed: bool = True) -> None:
        self.asked: list[str] = []
        self.events: list[PassEvent] = []
        self.stop = threading.Event()

        def query(source: PrometheusSource, promql: str, at: float | None) -> QueryAnswer:
            self.asked.append(promql)
            return QueryAnswer(0.0)

        hooks = RolloutHooks(fences=UNFENCED_EVERYWHERE, owns=owned.__contains__, sharded=True, query=query)
        self.rollout = FleetRollout(
            dict(clusters), options(analysed), stop=self.stop, listener=self._tell, hooks=hooks
        )

    def _tell(self, event: PassEvent) -> None:
        self.events.append(event)
        if event.step is Step.GATE_WAIT and event.waiting is Waiting.ANALYSIS:
            self.stop.set()

    def gate(self, step: Step) -> list[PassEvent]:
        return [e for e in self.events if e.step is step and not e.cluster]


def clusters() -> dict[str, MemoryKube]:
    return {name: MemoryKube(name) for name in LABELS}


FIRST = desired_fleet("rev-1", LABELS, OBJECTS)
SECOND = desired_fleet("rev-2", LABELS, [{**OBJECTS[0], "metadata": {"name": "app", "labels": {"r": "2"}}}])


def measuring() -> tuple[dict[str, MemoryKube], dict[str, int], Replica]:
    """Every cluster on rev-1, then rev-2 on the canary, whose owner stopped once it measured it;
    the clusters, their applies before rev-2, and the owner."""
    kube = clusters()
    report = Replica(kube, set(LABELS), analysed=False).rollout.sync(FIRST)
    assert report.outcome is RolloutOutcome.APPLIED, report
    before = applies(kube)
    owner = Replica(kube, {"canary"})
    report = owner.rollout.sync(SECOND, last_good=FIRST)
    assert report.outcome is RolloutOutcome.INTERRUPTED, report
    return kube, before, owner


def record_counts(kube: MemoryKube, change: Callable[[MetricCounts], MetricCounts]) -> None:
    store = StateStore(kube, NAMESPACE)
    state = store.load().state
    counts = change(state.analysis.counts(ERRORS.name))
    store.save(replace(state, analysis=replace(state.analysis, metrics=(counts,))))


def applies(kube: dict[str, MemoryKube]) -> dict[str, int]:
    return {name: c.count("apply", "Namespace", "app") for name, c in kube.items()}


def test_a_replica_owning_none_of_the_canary_waits_while_its_owner_measures() -> None:
    kube, before, owner = measuring()
    assert owner.asked == ["errors"], "the owner measured the canary once; the next is an hour away"

    other = Replica(kube, {"eu-1", "us-1"})
    report = other.rollout.sync(SECOND, last_good=FIRST)
    assert other.asked == [], "a replica never measures a cluster it does not own"
    assert applies(kube) == {**before, "canary": before["canary"] + 1}, "no later wave may start"
    assert report.outcome is RolloutOutcome.INTERRUPTED, report
    assert other.gate(Step.GATE_PROCEED) == []
    waits = other.gate(Step.GATE_WAIT)
    assert waits
    assert waits[-1].waiting is Waiting.ANALYSIS


def test_a_replica_owning_none_of_the_canary_fails_the_wave_on_the_counts_its_owner_recorded() -> None:
    kube, before, _ = measuring()
    # The owner's next measurement failed and is recorded; its rollback is yet to be written.
    record_counts(kube["canary"], lambda c: replace(c, taken=2, failures=1))

    other = Replica(kube, {"eu-1", "us-1"})
    report = other.rollout.sync(SECOND, last_good=FIRST)
    assert other.asked == []
    assert applies(kube) == {**before, "canary": before["canary"] + 1}, "no later wave may start"
    assert [w.decision for w in report.waves] == [Decision.ROLLBACK], report
    assert [e.analysis for e in other.gate(Step.GATE_ROLLBACK)] == [AnalysisVerdict.FAILED]
    assert [e.clusters for e in other.gate(Step.GATE_ROLLBACK)] == [("canary",)], "wave-failed names it"
