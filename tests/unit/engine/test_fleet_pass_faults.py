"""The pass through the faults a fleet meets, over in-memory clusters: a cluster unhealthy after its
wave passed is degraded, not failed; unreachable, unconnectable or unwritable clusters stay their own
problem; a cluster back from an outage gets only a revision descending from its own; a newer revision
takes over at a wave boundary; a pass that loses the Lease writes nothing more."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from syncer.domain.progress import PassEvent, Step
from syncer.domain.sync_state import ClusterSyncState, SyncPhase
from syncer.engine.cluster_reads import ClusterReads
from syncer.engine.fleet_pass import FleetPass
from syncer.errors import ConfigError, FencedOut, ServerError
from syncer.rollout import Decision
from syncer.rollout.moves import RolloutOutcome
from syncer.status.state_store import STATE_CONFIGMAP, StateStore
from tests.support.memory_kube import MemoryKube
from tests.support.unfenced import unfenced_pass
from tests.unit.engine.test_fleet_pass import CLUSTERS, STATE_NAMESPACE, Rig, fleet, options, rig
from tests.unit.engine.test_pin_pass import pin

__all__ = ["rig"]  # the fixture


def test_a_cluster_that_turns_unhealthy_after_its_wave_passed_is_degraded_not_failed(rig: Rig) -> None:
    rig.revisions.push(fleet("rev-1"))
    rig.run()
    namespace = rig.clusters["eu-1"].objects[("v1", "Namespace", "", "app")]
    namespace["status"] = {"phase": "Terminating"}  # unhealthy long after the rollout, nothing drifted
    result = rig.run()
    assert result.report is not None
    assert result.report.outcome is RolloutOutcome.UNCHANGED
    assert [w.decision for w in result.report.waves] == [Decision.PROCEED, Decision.PROCEED]
    assert "eu-1" in result.report.waves[-1].reason
    assert rig.steps(Step.CLUSTER_DEGRADED) == [("rest", "eu-1", Step.CLUSTER_DEGRADED)]
    assert rig.steps(Step.GATE_HALT, Step.GATE_ROLLBACK, Step.ROLLING_BACK, Step.APPLYING) == []
    state = rig.state("eu-1")
    assert (state.revision, state.phase, state.last_good, state.bad_revisions) == (
        "rev-1",
        SyncPhase.HEALTHY,
        "rev-1",
        (),
    )
    assert state.health != "healthy"
    assert rig.fleet_pass.heal(rig.stop) == (), "nothing drifted: nothing to repair"
    namespace["status"] = {"phase": "Active"}
    rig.run()
    assert rig.steps(Step.CLUSTER_RECOVERED) == [("rest", "eu-1", Step.CLUSTER_RECOVERED)]
    assert rig.state("eu-1").health == "healthy"


def test_an_object_deleted_after_its_wave_passed_is_repaired_by_the_pass_not_rolled_out_again(
    rig: Rig,
) -> None:
    rig.revisions.push(fleet("rev-1"))
    rig.run()
    rig.clusters["eu-1"].delete("v1", "Namespace", "app")  # out of band, long after the rollout
    result = rig.run()
    assert result.report is not None
    assert result.report.outcome is RolloutOutcome.APPLIED, "the pass re-applied what drifted"
    assert [w.decision for w in result.report.waves] == [Decision.PROCEED, Decision.PROCEED]
    assert [(c, s) for _, c, s in rig.steps(Step.DRIFT_REPAIRED)] == [("eu-1", Step.DRIFT_REPAIRED)]
    assert rig.steps(Step.GATE_HALT, Step.GATE_ROLLBACK, Step.ROLLING_BACK, Step.APPLYING) == []
    assert ("v1", "Namespace", "", "app") in rig.clusters["eu-1"].objects
    state = rig.state("eu-1")
    assert (state.revision, state.phase, state.last_good, state.bad_revisions) == (
        "rev-1",
        SyncPhase.HEALTHY,
        "rev-1",
        (),
    )


def test_a_failed_revision_on_a_cluster_whose_state_cannot_be_written_is_not_tried_again(rig: Rig) -> None:
    rig.revisions.push(fleet("rev-1"))
    rig.run()
    rig.clusters["canary"].fail[("apply", "ConfigMap", STATE_CONFIGMAP)] = ServerError(
        "etcd is gone", cluster="canary"
    )
    rig.revisions.push(fleet("rev-2", never_ready=True))
    first = rig.run()
    assert first.report is not None
    assert first.report.outcome is RolloutOutcome.ROLLED_BACK
    applied = rig.applies("RedisCluster", "sessions")["canary"]
    for _ in range(3):
        again = rig.run()
        assert again.report is not None
        assert again.report.outcome is RolloutOutcome.HALTED, again.report
        assert rig.steps(Step.APPLYING, Step.ROLLING_BACK) == []
    assert rig.applies("RedisCluster", "sessions")["canary"] == applied
    assert rig.state("canary").revision == "rev-1", "the stored state is the last one written"
    assert "rev-2" not in rig.state("canary").bad_revisions
    # Once the state can be written, the next pass writes what was decided (and only that)...
    del rig.clusters["canary"].fail[("apply", "ConfigMap", STATE_CONFIGMAP)]
    written = rig.run()
    assert written.report is not None
    assert (written.report.outcome, written.report.unsaved) == (RolloutOutcome.HALTED, ())
    assert rig.applies("RedisCluster", "sessions")["canary"] == applied
    state = rig.state("canary")
    assert (state.revision, state.phase, state.last_good) == ("rev-1", SyncPhase.ROLLED_BACK, "rev-1")
    assert "rev-2" in state.bad_revisions
    # ...and a newer revision goes out.
    rig.revisions.push(fleet("rev-3"))
    newer = rig.run()
    assert newer.report is not None
    assert newer.report.outcome is RolloutOutcome.APPLIED
    assert "rev-2" in rig.state("canary").bad_revisions


def test_a_newer_verified_revision_takes_over_at_the_next_wave_boundary(rig: Rig) -> None:
    rig.revisions.push(fleet("rev-1"))

    def push_newer_after_the_canary(event: PassEvent) -> None:
        rig.events.append(event)
        if event.step is Step.GATE_PROCEED and event.wave == "canary" and event.revision == "rev-1":
            rig.revisions.push(fleet("rev-2"))

    rig.fleet_pass.listener = push_newer_after_the_canary
    result = rig.run()
    assert result.report is not None
    assert (result.report.revision, result.report.outcome) == ("rev-2", RolloutOutcome.APPLIED)
    assert [(e.step, e.revision) for e in rig.events if e.step is Step.SUPERSEDED] == [
        (Step.SUPERSEDED, "rev-2")
    ]
    applying = [(e.cluster, e.revision) for e in rig.events if e.step is Step.APPLYING]
    assert applying[0] == ("canary", "rev-1")
    assert ("eu-1", "rev-1") not in applying
    assert ("us-1", "rev-1") not in applying
    assert {rig.state(n).revision for n in CLUSTERS} == {"rev-2"}
    assert rig.revisions.synced == ["rev-2"]


def test_a_new_tip_is_taken_while_a_cluster_cannot_be_read_and_reaches_the_others(rig: Rig) -> None:
    rig.fleet_pass = rig.new_pass(known=CLUSTERS)
    rig.revisions.recorded = rig.fleet_pass.reads.recorded_revisions
    rig.revisions.push(fleet("rev-1"))
    rig.run()
    rig.clusters["us-1"].down = True
    rig.revisions.push(fleet("rev-2"))
    result = rig.run()
    assert result.report is not None
    assert (result.report.revision, result.report.outcome) == ("rev-2", RolloutOutcome.WAITING)
    assert list(rig.revisions.seen_recorded[-1]) == ["rev-1"], "judged against the clusters that answer"
    assert {n: result.states[n].revision for n in ("canary", "eu-1")} == dict.fromkeys(
        ("canary", "eu-1"), "rev-2"
    )
    assert rig.steps(Step.CLUSTER_UNREACHABLE) == [("", "us-1", Step.CLUSTER_UNREACHABLE)]
    rig.clusters["us-1"].down = False
    again = rig.run()
    assert again.report is not None
    assert again.report.outcome is RolloutOutcome.APPLIED
    assert rig.state("us-1").revision == "rev-2"


def test_a_cluster_back_from_an_outage_does_not_get_a_revision_that_does_not_descend_from_its_own(
    rig: Rig,
) -> None:
    rig.fleet_pass = rig.new_pass(known=CLUSTERS)
    rig.revisions.push(fleet("rev-1"))
    rig.run()
    # us-1 went to rev-1b while this replica could not read it; rev-1b was then rewritten away.
    store = StateStore(rig.clusters["us-1"], STATE_NAMESPACE)
    store.save(ClusterSyncState("us-1", revision="rev-1b", phase=SyncPhase.HEALTHY, last_good="rev-1b"))
    rig.revisions.rewritten_away.add("rev-1b")
    rig.revisions.push(fleet("rev-2"))
    assert rig.applies()["us-1"] == 1
    result = rig.run()
    assert result.report is not None
    assert result.report.outcome is RolloutOutcome.WAITING
    assert "us-1: it records rev-1b, which rev-2 does not descend from" in result.report.message
    assert rig.state("us-1").revision == "rev-1b", "not written to"
    assert rig.applies()["us-1"] == 1, "us-1 got nothing after rev-1"


def test_a_cluster_whose_connection_cannot_be_opened_is_reported_and_the_others_go_on(rig: Rig) -> None:
    def connect(name: str) -> MemoryKube:
        if name == "eu-1":
            raise ConfigError("the kubeconfig's user eu-1-admin has no credentials")
        return rig.clusters[name]

    rig.fleet_pass = unfenced_pass(rig.revisions, connect, options(), rig.events.append)
    rig.revisions.push(fleet("rev-1"))
    result = rig.run()
    assert result.report is not None
    assert result.report.outcome is RolloutOutcome.WAITING
    assert result.unreachable["eu-1"].startswith("cannot connect: the kubeconfig's user")
    assert rig.applies() == {"canary": 1, "eu-1": 0, "us-1": 1}


class TripFence:
    """A fence that lets ``writes`` writes out and then refuses every other (the Lease was lost)."""

    token = 0
    lease = ""

    def __init__(self, writes: int) -> None:
        self.left = writes

    @contextlib.contextmanager
    def writing(self) -> Iterator[None]:
        self.check()
        yield

    def check(self) -> None:
        self.left -= 1
        if self.left < 0:
            raise FencedOut("not writing: this replica no longer holds the leader Lease")


def test_a_pass_that_loses_the_lease_mid_rollout_ends_without_writing_more(rig: Rig) -> None:
    fence = TripFence(writes=4)
    reads = ClusterReads(rig.clusters.__getitem__, lambda _: fence, options())
    rig.fleet_pass = FleetPass(rig.revisions, reads, options(), rig.events.append)
    rig.revisions.push(fleet("rev-1"))
    result = rig.run()
    assert result.report is not None
    assert result.report.outcome is RolloutOutcome.FENCED_OUT
    assert [s for _, _, s in rig.steps(Step.FENCED_OUT)] == [Step.FENCED_OUT]
    assert rig.revisions.synced == []
    writes = rig.writes()
    assert writes == 4, "the writes let out before the fence closed, and none after"
    assert rig.fleet_pass.heal(rig.stop) == ()
    assert rig.writes() == writes


def test_a_passed_cluster_waiting_for_an_unreachable_neighbour_is_watched_not_judged_again(rig: Rig) -> None:
    rig.revisions.push(fleet("rev-1"))
    rig.run()
    rig.clusters["us-1"].down = True
    rig.clusters["eu-1"].objects[("v1", "Namespace", "", "app")]["status"] = {"phase": "Terminating"}
    for _ in range(2):
        result = rig.run()
        assert result.report is not None
        assert result.report.outcome is RolloutOutcome.WAITING
        assert rig.steps(Step.GATE_HALT, Step.GATE_ROLLBACK, Step.ROLLING_BACK, Step.APPLYING) == []
    assert rig.steps(Step.CLUSTER_DEGRADED) == [], "told once, on the first pass"
    state = rig.state("eu-1")
    assert (state.phase, state.last_good, state.bad_revisions) == (SyncPhase.HEALTHY, "rev-1", ())
    assert state.health != "healthy"


def test_a_pass_whose_pin_rollback_loses_the_lease_ends_fenced_out_and_writes_nothing_more(rig: Rig) -> None:
    """The pinned cluster's rollback is the pass's last rollout: when its first write is fenced out,
    the pass is fenced out too (not applied, not synced), and nothing more is written."""
    tripped = TripFence(writes=10**6)
    reads = ClusterReads(rig.clusters.__getitem__, lambda _: tripped, options())
    rig.fleet_pass = FleetPass(rig.revisions, reads, options(), rig.events.append)
    rig.revisions.push(fleet("rev-1"))
    assert rig.run().synced
    rig.revisions.push(fleet("rev-2"))
    assert rig.run().synced
    pin(rig, "eu-1", "rev-1")
    synced = list(rig.revisions.synced)

    tripped.left = 0  # the Lease is lost as the pass begins its writes: the pin rollback's first
    result = rig.run()
    assert result.report is not None
    assert result.report.outcome is RolloutOutcome.FENCED_OUT, result.report
    assert result.report.revision == "rev-2"
    assert [e.step for e in rig.events if e.step is Step.FENCED_OUT] == [Step.FENCED_OUT]
    assert rig.revisions.synced == synced, "a fenced-out pass marks nothing synced"
    assert rig.state("eu-1").revision == "rev-2"
