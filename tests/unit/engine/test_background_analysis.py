"""The rollout's background analysis through in-memory clusters: measured on every cluster on the
revision from the canary's apply, its counts recorded in each cluster's own ``background`` record, and
a failure during a later wave failing the whole rollout: every cluster on the revision goes back."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import replace

from syncer.analysis import AnalysisPolicy, MetricSpec, PrometheusSource, QueryAnswer
from syncer.config.rollout import WaveGate
from syncer.domain.analysis import AnalysisVerdict
from syncer.domain.progress import PassEvent, Step
from syncer.domain.sync_state import SyncPhase
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
FIRST = desired_fleet("rev-1", LABELS, OBJECTS)
SECOND = desired_fleet("rev-2", LABELS, [{**OBJECTS[0], "metadata": {"name": "app", "labels": {"r": "2"}}}])


def program(source: str) -> Program:
    compiled = compile_expression(source, analysis=True)
    assert isinstance(compiled, Program)
    return compiled


ERRORS = MetricSpec(
    "errors", 'errors{cluster="${cluster}"}', failure=program("result > 0.1"), interval=0.01, count=50
)


def options(background: bool = True, rollback: bool = True) -> RolloutOptions:
    gate = WaveGate(max_concurrent=2, health_timeout=30.0, bake=0.0)
    policy = replace(
        canary_then_rest(gate, rollback=rollback),
        background=AnalysisPolicy((ERRORS,) if background else (), PROMETHEUS),
    )
    return RolloutOptions(rollout=policy, state_namespace=NAMESPACE, health_poll=0.01)


class Rollout:
    """A rollout over the clusters; Prometheus answers 0 everywhere until ``bad`` names a cluster
    (then 1 there): ``bad_after``, once the revision was applied there; with ``missing`` set to "?"
    that cluster's query gives no series instead."""

    def __init__(
        self,
        kube: dict[str, MemoryKube],
        *,
        background: bool = True,
        bad_after: str = "",
        once: bool = False,
        rollback: bool = True,
        owned: set[str] | None = None,
    ) -> None:
        self.once = once  # stop at the first measurement
        self.missing = ""  # a cluster whose query gives no series
        self.on_applied: Callable[[], None] = lambda: None  # called at each cluster's apply
        self.asked: list[str] = []
        self.events: list[PassEvent] = []
        self.bad = ""
        self.bad_after = bad_after
        self.stop = threading.Event()
        self.now = time.time()

        def query(source: PrometheusSource, promql: str, at: float | None) -> QueryAnswer:
            self.asked.append(promql)
            if self.missing and f'"{self.missing}"' in promql:
                return QueryAnswer(missing="the query gives no series")
            return QueryAnswer(1.0 if self.bad and f'"{self.bad}"' in promql else 0.0)

        self.rollout = FleetRollout(
            dict(kube),
            options(background, rollback),
            stop=self.stop,
            clock=self._clock,
            listener=self._tell,
            hooks=RolloutHooks(fences=UNFENCED_EVERYWHERE, query=query)
            if owned is None
            else RolloutHooks(fences=UNFENCED_EVERYWHERE, owns=owned.__contains__, sharded=True, query=query),
        )

    def _clock(self) -> float:
        """A clock that moves on 0.02s at each reading: every look finds the next measurement due
        (the interval is 0.01s), however fast the in-memory clusters answer."""
        self.now += 0.02
        return self.now

    def _tell(self, event: PassEvent) -> None:
        self.events.append(event)
        if event.step is Step.APPLIED:
            self.on_applied()
        if event.step is Step.APPLIED and event.cluster == self.bad_after:
            if self.missing == "?":
                self.missing = event.cluster
            else:
                self.bad = event.cluster
        if self.once and event.step is Step.ANALYSIS_MEASURED:
            self.stop.set()

    def steps(self, step: Step) -> list[PassEvent]:
        return [e for e in self.events if e.step is step]


def fleet_on_first() -> dict[str, MemoryKube]:
    kube = {name: MemoryKube(name) for name in LABELS}
    report = Rollout(kube, background=False).rollout.sync(FIRST)
    assert report.outcome is RolloutOutcome.APPLIED, report
    return kube


def recorded(kube: MemoryKube):  # type: ignore[no-untyped-def]
    return StateStore(kube, NAMESPACE).load().state


def test_a_background_metric_failing_during_a_later_wave_rolls_every_cluster_on_the_revision_back() -> None:
    kube = fleet_on_first()
    later = next(name for name in LABELS if name != "canary")
    rollout = Rollout(kube, bad_after=later)
    report = rollout.rollout.sync(SECOND, last_good=FIRST)

    assert report.outcome is RolloutOutcome.ROLLED_BACK, report
    assert [w.decision for w in report.waves] == [Decision.PROCEED, Decision.ROLLBACK], report
    assert "background analysis" in report.waves[-1].reason
    (failed,) = rollout.steps(Step.GATE_ROLLBACK)
    assert (failed.wave, failed.analysis, failed.clusters) == ("rest", AnalysisVerdict.FAILED, (later,))
    assert sorted(e.cluster for e in rollout.steps(Step.ROLLED_BACK)) == sorted(LABELS), "the canary too"
    for name, cluster in kube.items():
        state = recorded(cluster)
        assert (state.revision, state.phase) == ("rev-1", SyncPhase.ROLLED_BACK), name
        assert "rev-2" in state.bad_revisions, f"{name} refuses rev-2 until git changes or a retry"
    assert recorded(kube[later]).background.counts("errors").failures == 1
    assert "background analysis failed on " + later in recorded(kube["canary"]).last_error


def test_a_refused_revision_is_not_tried_again_on_the_next_pass() -> None:
    kube = fleet_on_first()
    Rollout(kube, bad_after=next(name for name in LABELS if name != "canary")).rollout.sync(SECOND, FIRST)
    again = Rollout(kube)
    report = again.rollout.sync(SECOND, last_good=FIRST)
    assert report.outcome is RolloutOutcome.HALTED, report
    assert again.steps(Step.APPLIED) == []
    assert all(recorded(c).revision == "rev-1" for c in kube.values())


def test_a_healthy_revision_records_its_background_counts_apart_from_the_wave_analysis() -> None:
    kube = fleet_on_first()
    rollout = Rollout(kube)
    report = rollout.rollout.sync(SECOND, last_good=FIRST)
    assert report.outcome is RolloutOutcome.APPLIED, report
    canary = recorded(kube["canary"])
    assert canary.background.revision == "rev-2"
    assert canary.background.counts("errors").taken >= 2, "measured during the canary's and the next wave"
    assert canary.analysis.metrics == (), "the wave's own analysis record is not touched"
    assert {e.cluster for e in rollout.steps(Step.ANALYSIS_MEASURED)} == set(LABELS)


def test_background_counts_resume_from_the_clusters_records() -> None:
    kube = fleet_on_first()
    report = Rollout(kube, once=True).rollout.sync(SECOND, last_good=FIRST)
    assert report.outcome is RolloutOutcome.INTERRUPTED, report
    before = recorded(kube["canary"]).background
    assert (before.revision, before.counts("errors").taken) == ("rev-2", 1)
    Rollout(kube).rollout.sync(SECOND, last_good=FIRST)
    after = recorded(kube["canary"]).background
    assert after.started == before.started, "a restart resumes the record, never starts it afresh"
    assert after.counts("errors").taken > 1


def test_without_rollback_a_background_failure_halts_and_every_cluster_on_the_revision_records_it() -> None:
    kube = fleet_on_first()
    later = next(name for name in LABELS if name != "canary")
    rollout = Rollout(kube, bad_after=later, rollback=False)
    report = rollout.rollout.sync(SECOND, last_good=FIRST)
    assert report.outcome is RolloutOutcome.HALTED, report
    assert [e.analysis for e in rollout.steps(Step.GATE_HALT)] == [AnalysisVerdict.FAILED]
    assert rollout.steps(Step.ROLLED_BACK) == []
    for name, cluster in kube.items():
        state = recorded(cluster)
        assert (state.revision, state.phase) == ("rev-2", SyncPhase.FAILED), name
        assert "rev-2" in state.bad_revisions, name


def test_an_inconclusive_background_metric_halts_for_a_person() -> None:
    kube = fleet_on_first()
    later = next(name for name in LABELS if name != "canary")
    rollout = Rollout(kube, bad_after=later)
    rollout.missing = "?"  # once the later wave is applied, its cluster's query gives no series
    report = rollout.rollout.sync(SECOND, last_good=FIRST)
    assert report.outcome is RolloutOutcome.HALTED, report
    (halted,) = rollout.steps(Step.GATE_HALT)
    assert (halted.analysis, halted.clusters) == (AnalysisVerdict.INCONCLUSIVE, (later,))
    assert "waiting for a person: syncer retry measures again" in report.message


def test_a_sharded_replica_fails_the_rollout_on_the_background_counts_the_canarys_owner_recorded() -> None:
    kube = fleet_on_first()
    owner = Rollout(kube, once=True, owned={"canary"})
    assert owner.rollout.sync(SECOND, last_good=FIRST).outcome is RolloutOutcome.INTERRUPTED
    store = StateStore(kube["canary"], NAMESPACE)

    def owner_records_a_failure() -> None:
        # The canary's owner measures it failed while this replica's wave is in flight.
        state = store.load().state
        counts = state.background.counts("errors")
        failed = replace(counts, taken=counts.taken + 1, failures=1, last_at=time.time() + 3600)
        store.save(replace(state, background=replace(state.background, metrics=(failed,))))

    other = Rollout(kube, owned={"eu-1", "us-1"})
    other.on_applied = owner_records_a_failure
    report = other.rollout.sync(SECOND, last_good=FIRST)
    assert not [q for q in other.asked if '"canary"' in q], "never measures a cluster it does not own"
    assert report.outcome is RolloutOutcome.ROLLED_BACK, report
    (failing,) = other.steps(Step.GATE_ROLLBACK)
    assert (failing.analysis, failing.clusters) == (AnalysisVerdict.FAILED, ("canary",))
    assert {e.cluster for e in other.steps(Step.ROLLED_BACK)} == {"eu-1", "us-1"}
