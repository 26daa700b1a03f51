"""The pass's decisions, through in-memory clusters: wave order, one state read per cluster, resume
after an interruption, rollback to the last good revision, refused revisions, unsaved and unreadable
states, rejected tips and drift repair. Kubernetes itself is tested on the real fleet elsewhere."""

from __future__ import annotations

import threading
from collections.abc import Collection
from typing import Any

import pytest

from syncer.apply import ApplyPolicy, RetryPolicy
from syncer.config.rollout import WaveGate
from syncer.domain.objects import DesiredFleet
from syncer.domain.progress import PassEvent, Step
from syncer.domain.sync_state import SyncPhase
from syncer.engine.fleet_pass import FleetPass, PassResult
from syncer.engine.rollout_model import RolloutOptions
from syncer.errors import KubeError, ServerError, SourceError, VerificationError
from syncer.rollout import Decision
from syncer.rollout.moves import RolloutOutcome
from syncer.status.state_store import STATE_CONFIGMAP, STATE_KEY, StateStore
from tests.support.fleet_repo import LABELS, canary_then_rest
from tests.support.memory_kube import MemoryKube
from tests.support.memory_revisions import MemoryRevisions, desired_fleet
from tests.support.unfenced import unfenced_pass

CLUSTERS = LABELS
STATE_NAMESPACE = "syncer-state"
RC = "redis.syncer.dev/v1alpha1"


def fleet(revision: str, *, never_ready: bool = False) -> DesiredFleet:
    """A namespace labelled with the revision (healthy once it exists); ``never_ready`` adds a
    RedisCluster no controller will ever report Ready."""
    objects: list[dict[str, Any]] = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "app", "labels": {"rev": revision}}},
    ]
    if never_ready:
        objects.append(
            {
                "apiVersion": RC,
                "kind": "RedisCluster",
                "metadata": {"name": "sessions", "namespace": "app"},
                "spec": {"shards": 1, "version": "7.2.4"},
            }
        )
    return desired_fleet(revision, CLUSTERS, objects)


def options() -> RolloutOptions:
    return RolloutOptions(
        rollout=canary_then_rest(WaveGate(max_concurrent=2, health_timeout=0.0, bake=0.0)),
        apply=ApplyPolicy(retry=RetryPolicy(attempts=3, base_delay=0.01, max_delay=0.02)),
        state_namespace=STATE_NAMESPACE,
        health_poll=0.01,
    )


class Rig:
    """Three in-memory clusters, a branch in memory and a pass over them that records its events."""

    def __init__(self) -> None:
        self.clusters = {name: MemoryKube(name) for name in CLUSTERS}
        self.revisions = MemoryRevisions()
        self.events: list[PassEvent] = []
        self.stop = threading.Event()
        self.fleet_pass = self.new_pass()

    def new_pass(self, known: Collection[str] = ()) -> FleetPass:
        """A pass as a freshly started agent has it: no memory but what the clusters record;
        ``known``: the clusters whose records join every tip's history check."""
        return unfenced_pass(
            self.revisions, self.clusters.__getitem__, options(), self.events.append, known=known
        )

    def run(self) -> PassResult:
        self.events.clear()
        return self.fleet_pass.run_pass(self.stop)

    def steps(self, *steps: Step) -> list[tuple[str, str, Step]]:
        return [(e.wave, e.cluster, e.step) for e in self.events if e.step in steps]

    def state_reads(self) -> dict[str, int]:
        return {n: c.count("get", "ConfigMap", STATE_CONFIGMAP) for n, c in self.clusters.items()}

    def applies(self, kind: str = "Namespace", name: str = "app") -> dict[str, int]:
        return {n: c.count("apply", kind, name) for n, c in self.clusters.items()}

    def writes(self) -> int:
        return sum(
            n for c in self.clusters.values() for (v, _, _), n in c.calls.items() if v not in {"get", "list"}
        )

    def state(self, cluster: str) -> Any:
        return StateStore(self.clusters[cluster], STATE_NAMESPACE).load().state


@pytest.fixture
def rig() -> Rig:
    return Rig()


def test_the_canary_wave_is_applied_and_healthy_before_the_rest_starts(rig: Rig) -> None:
    rig.revisions.push(fleet("rev-1"))
    result = rig.run()
    assert result.report is not None
    assert result.report.outcome is RolloutOutcome.APPLIED, result.report
    assert [(w.name, sorted(w.clusters)) for w in result.report.waves] == [
        ("canary", ["canary"]),
        ("rest", ["eu-1", "us-1"]),
    ]
    order = rig.steps(Step.APPLYING, Step.GATE_PROCEED)
    assert order[:2] == [("canary", "canary", Step.APPLYING), ("canary", "", Step.GATE_PROCEED)]
    assert sorted(order[2:]) == [
        ("rest", "", Step.GATE_PROCEED),
        ("rest", "eu-1", Step.APPLYING),
        ("rest", "us-1", Step.APPLYING),
    ]
    assert order[-1] == ("rest", "", Step.GATE_PROCEED)
    assert rig.revisions.synced == ["rev-1"]
    assert result.synced
    for name in CLUSTERS:
        state = rig.state(name)
        assert (state.revision, state.phase, state.last_good) == ("rev-1", SyncPhase.HEALTHY, "rev-1")
        assert result.states[name].phase is SyncPhase.HEALTHY


def test_a_pass_reads_each_clusters_sync_state_once(rig: Rig) -> None:
    rig.revisions.push(fleet("rev-1"))
    rig.run()
    assert rig.state_reads() == dict.fromkeys(CLUSTERS, 1)
    rig.run()  # nothing new: the same revision is checked, not applied
    assert rig.state_reads() == dict.fromkeys(CLUSTERS, 2)
    # A failing revision makes the pass rebuild the revision the failed cluster last ran healthy and
    # roll back to it: still one read of each cluster's state.
    rig.revisions.push(fleet("rev-2", never_ready=True))
    result = rig.run()
    assert result.report is not None
    assert result.report.outcome is RolloutOutcome.ROLLED_BACK
    assert result.states["canary"].revision == "rev-1"
    assert rig.revisions.rebuilt == ["rev-1"]
    assert rig.state_reads() == dict.fromkeys(CLUSTERS, 3)
    rig.fleet_pass.heal(rig.stop)
    assert rig.state_reads() == dict.fromkeys(CLUSTERS, 4)


def test_an_interrupted_pass_resumes_from_the_clusters_without_applying_again(rig: Rig) -> None:
    rig.revisions.push(fleet("rev-1"))

    def stop_after_the_canary(event: PassEvent) -> None:
        if event.step is Step.GATE_PROCEED and event.wave == "canary":
            rig.stop.set()

    rig.fleet_pass.listener = stop_after_the_canary
    first = rig.run()
    assert first.report is not None
    assert first.report.outcome is RolloutOutcome.INTERRUPTED
    assert first.report.message == "stopped between waves"
    assert rig.revisions.synced == []
    assert rig.applies() == {"canary": 1, "eu-1": 0, "us-1": 0}

    rig.stop = threading.Event()
    rig.fleet_pass = rig.new_pass()  # a restarted agent: nothing but the clusters' states to go on
    second = rig.run()
    assert second.report is not None
    assert second.report.outcome is RolloutOutcome.APPLIED
    # The canary wave had passed: it is only looked at, not applied or judged again.
    assert rig.steps(Step.ALREADY_APPLIED) == []
    assert ("", "canary", Step.HEALTH_CHECKED) in rig.steps(Step.HEALTH_CHECKED)
    assert [w for w, _, _ in rig.steps(Step.GATE_PROCEED)] == ["rest"]
    assert sorted(c for _, c, _ in rig.steps(Step.APPLYING)) == ["eu-1", "us-1"]
    assert rig.applies() == dict.fromkeys(CLUSTERS, 1)
    assert rig.revisions.synced == ["rev-1"]


def test_a_failed_wave_is_rolled_back_to_the_last_good_revision_and_later_waves_are_untouched(
    rig: Rig,
) -> None:
    rig.revisions.push(fleet("rev-1"))
    rig.run()
    before = rig.applies()
    rig.revisions.push(fleet("rev-2", never_ready=True))
    result = rig.run()
    assert result.report is not None
    assert result.report.outcome is RolloutOutcome.ROLLED_BACK, result.report
    assert [(w.name, str(w.decision)) for w in result.report.waves] == [("canary", "rollback")]
    assert result.report.message.startswith("canary: not healthy 0s after apply")
    assert rig.steps(Step.ROLLING_BACK) == [("canary", "", Step.ROLLING_BACK)]
    canary = rig.state("canary")
    assert (canary.revision, canary.phase) == ("rev-1", SyncPhase.ROLLED_BACK)
    assert "rev-2" in canary.bad_revisions
    assert rig.clusters["canary"].count("delete", "RedisCluster") == 1, "the rollback pruned it"
    after = rig.applies()
    assert {n: after[n] - before[n] for n in CLUSTERS} == {"canary": 2, "eu-1": 0, "us-1": 0}
    assert rig.revisions.synced == ["rev-1"]


def test_a_revision_that_failed_is_refused_until_a_newer_one_arrives(rig: Rig) -> None:
    rig.revisions.push(fleet("rev-1"))
    rig.run()
    rig.revisions.push(fleet("rev-2", never_ready=True))
    rig.run()
    before = dict(rig.clusters["canary"].calls)
    again = rig.run()
    assert again.report is not None
    assert again.report.outcome is RolloutOutcome.HALTED
    assert again.report.message.startswith("canary: refused: failed before (content): not healthy")
    assert again.report.message.endswith("not retried until git changes its objects for this cluster")
    writes = {k: n for k, n in rig.clusters["canary"].calls.items() if k[0] != "get" and n != before.get(k)}
    assert writes == {}, "a refused revision writes nothing"
    rig.revisions.push(fleet("rev-3"))
    newer = rig.run()
    assert newer.report is not None
    assert newer.report.outcome is RolloutOutcome.APPLIED
    assert {rig.state(n).revision for n in CLUSTERS} == {"rev-3"}


def test_without_a_last_good_revision_a_failed_wave_halts(rig: Rig) -> None:
    rig.revisions.push(fleet("rev-1", never_ready=True))
    result = rig.run()
    assert result.report is not None
    assert result.report.outcome is RolloutOutcome.HALTED
    assert rig.steps(Step.ROLLING_BACK) == []
    assert rig.steps(Step.ROLLBACK_UNAVAILABLE) == [("canary", "canary", Step.ROLLBACK_UNAVAILABLE)]
    assert "never ran a revision healthy" in result.report.message
    assert rig.state("canary").phase is SyncPhase.FAILED
    assert rig.applies() == {"canary": 1, "eu-1": 0, "us-1": 0}


def test_a_last_good_revision_that_cannot_be_rebuilt_halts_and_says_why(rig: Rig) -> None:
    rig.revisions.push(fleet("rev-1"))
    rig.run()
    rig.revisions.unrebuildable.add("rev-1")
    rig.revisions.push(fleet("rev-2", never_ready=True))
    result = rig.run()
    assert result.report is not None
    assert result.report.outcome is RolloutOutcome.HALTED
    [unavailable] = [e for e in rig.events if e.step is Step.LAST_GOOD_UNAVAILABLE]
    assert unavailable.revision == "rev-1"
    assert isinstance(unavailable.cause, SourceError)


def test_a_state_that_cannot_be_written_is_reported_and_the_rollout_goes_on(rig: Rig) -> None:
    rig.revisions.push(fleet("rev-1"))
    rig.clusters["eu-1"].fail[("apply", "ConfigMap", STATE_CONFIGMAP)] = ServerError(
        "etcd is gone", cluster="eu-1"
    )
    result = rig.run()
    assert result.report is not None
    assert result.report.outcome is RolloutOutcome.APPLIED
    assert [name for name, _ in result.report.unsaved] == ["eu-1"]
    unsaved = [e for e in rig.events if e.step is Step.STATE_UNSAVED]
    assert {e.cluster for e in unsaved} == {"eu-1"}
    assert all(isinstance(e.cause, KubeError) for e in unsaved)
    assert rig.applies() == dict.fromkeys(CLUSTERS, 1)
    assert result.states["eu-1"].phase is SyncPhase.HEALTHY, "the pass went on from what it knew"


def test_a_cluster_whose_state_cannot_be_read_is_reported_and_waited_for_while_the_others_go_on(
    rig: Rig,
) -> None:
    rig.revisions.push(fleet("rev-1"))
    rig.clusters["us-1"].down = True
    result = rig.run()
    assert result.report is not None
    assert result.report.outcome is RolloutOutcome.WAITING
    assert result.report.message.startswith("waiting for us-1: cannot read its sync state: [us-1]")
    assert [(w.name, w.decision) for w in result.report.waves] == [
        ("canary", Decision.PROCEED),
        ("rest", Decision.WAIT),
    ]
    assert list(result.unreachable) == ["us-1"]
    assert rig.steps(Step.CLUSTER_UNREACHABLE) == [("", "us-1", Step.CLUSTER_UNREACHABLE)]
    # The others got the revision, in their waves; us-1 was not written to.
    assert rig.applies() == {"canary": 1, "eu-1": 1, "us-1": 0}
    assert [k for k in rig.clusters["us-1"].calls if k[0] not in {"get", "list"}] == []
    assert rig.revisions.synced == []
    # Once it answers again, it catches up and the revision is synced.
    rig.clusters["us-1"].down = False
    again = rig.run()
    assert again.report is not None
    assert again.report.outcome is RolloutOutcome.APPLIED
    assert rig.applies() == dict.fromkeys(CLUSTERS, 1)
    assert rig.revisions.synced == ["rev-1"]


def test_a_rejected_tip_is_told_once_and_the_revision_in_force_stays(rig: Rig) -> None:
    rig.revisions.push(fleet("rev-1"))
    rig.run()
    rig.revisions.push_bad("rev-2", VerificationError("commit rev-2 is unsigned", verdict="unsigned"))
    first = rig.run()
    assert first.new_rejection
    [rejected] = [e for e in rig.events if e.step is Step.REVISION_REJECTED]
    assert rejected.revision == "rev-2"
    assert isinstance(rejected.cause, VerificationError)
    assert first.report is not None
    assert (first.report.revision, first.report.outcome) == ("rev-1", RolloutOutcome.UNCHANGED)
    second = rig.run()
    assert not second.new_rejection
    assert [e for e in rig.events if e.step is Step.REVISION_REJECTED] == []
    rig.revisions.source_down = SourceError("the remote does not answer")
    third = rig.run()
    assert third.new_rejection
    assert [e.step for e in rig.events if e.step in {Step.SOURCE_FAILED, Step.REVISION_REJECTED}] == [
        Step.SOURCE_FAILED
    ]


def test_nothing_is_rolled_out_before_any_revision_passed(rig: Rig) -> None:
    rig.revisions.push_bad("rev-1", VerificationError("unsigned", verdict="unsigned"))
    result = rig.run()
    assert result.report is None
    assert all(not cluster.calls for cluster in rig.clusters.values())


def test_heal_repairs_an_object_deleted_out_of_band_on_clusters_that_finished(rig: Rig) -> None:
    rig.revisions.push(fleet("rev-1"))
    rig.run()
    rig.clusters["us-1"].objects.pop(("v1", "Namespace", "", "app"))
    rig.events.clear()
    repaired = rig.fleet_pass.heal(rig.stop)
    assert [(c.cluster, c.writes) for c in repaired] == [("us-1", 1)]
    assert [(e.cluster, e.step, e.objects) for e in rig.events if e.step is Step.DRIFT_REPAIRED] == [
        ("us-1", Step.DRIFT_REPAIRED, 1)
    ]
    assert ("v1", "Namespace", "", "app") in rig.clusters["us-1"].objects
    assert rig.fleet_pass.heal(rig.stop) == (), "nothing drifted any more"


def test_heal_leaves_clusters_still_rolling_out_to_the_rollout(rig: Rig) -> None:
    rig.revisions.push(fleet("rev-1", never_ready=True))
    rig.run()  # the canary fails; the rest never got it
    rig.clusters["canary"].objects.pop(("v1", "Namespace", "", "app"))
    assert rig.fleet_pass.heal(rig.stop) == ()


def test_a_corrupt_sync_state_is_rebuilt_and_said(rig: Rig) -> None:
    rig.revisions.push(fleet("rev-1"))
    rig.run()
    stored = rig.clusters["eu-1"].objects[("v1", "ConfigMap", STATE_NAMESPACE, STATE_CONFIGMAP)]
    stored["data"][STATE_KEY] = "{not json"
    rig.run()
    [rebuilt] = [e for e in rig.events if e.step is Step.STATE_REBUILT]
    assert rebuilt.cluster == "eu-1"
    assert "unreadable" in rebuilt.reason


def test_the_revisions_the_clusters_record_are_read_with_the_pass_and_not_again(rig: Rig) -> None:
    rig.fleet_pass = rig.new_pass(known=CLUSTERS)
    rig.revisions.recorded = rig.fleet_pass.reads.recorded_revisions
    rig.revisions.push(fleet("rev-1"))
    rig.run()
    # Judged before any cluster recorded a revision (asked again between waves, from the same reads).
    assert rig.revisions.seen_recorded[0] == {}
    assert rig.state_reads() == dict.fromkeys(CLUSTERS, 1)
    rig.revisions.push(fleet("rev-2"))
    rig.run()
    assert list(rig.revisions.seen_recorded[-1]) == ["rev-1"]
    assert rig.state_reads() == dict.fromkeys(CLUSTERS, 2), "one read per cluster per pass"


def test_a_pass_with_nothing_to_do_watches_the_passed_waves_and_writes_nothing(rig: Rig) -> None:
    rig.revisions.push(fleet("rev-1"))
    assert rig.run().report is not None
    assert [w for w, _, _ in rig.steps(Step.GATE_PROCEED)] == ["canary", "rest"]
    writes = rig.writes()
    again = rig.run()
    assert again.report is not None
    assert again.report.outcome is RolloutOutcome.UNCHANGED
    assert rig.steps(Step.GATE_PROCEED, Step.GATE_STILL_HEALTHY) == []
    assert sorted(c for _, c, _ in rig.steps(Step.HEALTH_CHECKED)) == sorted(CLUSTERS)
    assert all(e.treatment.event_reason == "" for e in rig.events)
    assert rig.writes() == writes, "nothing written: no state, no Event"
