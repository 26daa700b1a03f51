"""The rollout's status rebuilt from the clusters' records (states and histories written as the engine
writes them, through ``syncer.domain.revision_history.note``), and put beside the status an agent folded."""

from __future__ import annotations

from dataclasses import replace

from syncer.domain.changeset import FailureCause
from syncer.domain.gates import Abort, AwaitingPromotion
from syncer.domain.progress import PassEvent, Step
from syncer.domain.revision_history import Actor, HistoryEntry, note
from syncer.domain.rollout_records import ClusterRecord, going_back, rebuild, reconcile
from syncer.domain.rollout_status import HoldCause, RolloutStatus, WavePhase, advance, initial
from syncer.domain.sync_state import (
    ClusterSyncState,
    FailedRevision,
    Pin,
    RetryRequest,
    Suspension,
    SyncPhase,
)

GOOD, BAD, NEWER = "a" * 40, "b" * 40, "c" * 40
WAVES = ("canary", "eu", "us")
WAVE_OF = {"canary": "canary", "eu-1": "eu", "us-1": "us"}


class Cluster:
    """A cluster's state and history, written as the engine writes them."""

    def __init__(self, name: str) -> None:
        self.state = ClusterSyncState(name, wave=WAVE_OF[name])
        self.history: tuple[HistoryEntry, ...] = ()
        self.now = 1000.0

    def write(self, **changes: object) -> Cluster:
        self.now += 10
        self.state = replace(self.state, **changes)  # type: ignore[arg-type]
        self.history = note(self.history, self.state, self.now, Actor("agent"), 20)
        return self

    def healthy_on(self, revision: str) -> Cluster:
        self.write(revision=revision, phase=SyncPhase.APPLYING)
        return self.write(phase=SyncPhase.HEALTHY, last_good=revision)

    def fails_and_goes_back(self, revision: str, why: str) -> Cluster:
        self.write(revision=revision, phase=SyncPhase.APPLYING)
        failure = FailedRevision(revision, "h", FailureCause.CONTENT, why, at=self.now)
        self.write(phase=SyncPhase.FAILED, failures=(failure,), last_error=why)
        back = self.state.last_good
        self.write(revision=back, phase=SyncPhase.APPLYING)
        return self.write(phase=SyncPhase.ROLLED_BACK)

    @property
    def record(self) -> ClusterRecord:
        return ClusterRecord(self.state, self.history)


def fleet(*clusters: Cluster) -> dict[str, ClusterRecord]:
    return {c.state.cluster: c.record for c in clusters}


def phases(status: RolloutStatus) -> dict[str, str]:
    return {w.name: str(w.phase) for w in status.waves}


def test_a_wave_failed_by_analysis_reads_failed_with_its_cause_after_its_clusters_went_back() -> None:
    canary = Cluster("canary").healthy_on(GOOD).fails_and_goes_back(BAD, "analysis failed: errors 0.4 > 0.1")
    eu, us = Cluster("eu-1").healthy_on(GOOD), Cluster("us-1").healthy_on(GOOD)
    status = rebuild(WAVES, fleet(canary, eu, us))
    assert status.revision == BAD, "the rollback's apply of the older revision is not a revision rolling out"
    assert phases(status) == {"canary": "failed", "eu": "pending", "us": "pending"}
    wave = status.wave("canary")
    assert wave.cause == "analysis failed: errors 0.4 > 0.1"
    assert wave.back == f"rolled back to {GOOD[:12]}"
    assert wave.summary == f"failed: analysis failed: errors 0.4 > 0.1 (rolled back to {GOOD[:12]})"


def test_the_same_status_the_agent_folded_from_its_events() -> None:
    canary = Cluster("canary").healthy_on(GOOD).fails_and_goes_back(BAD, "unhealthy")
    live = initial(WAVES)
    for event in (
        PassEvent(Step.ROLLOUT_STARTED, "canary", revision=BAD),
        PassEvent(Step.APPLYING, "canary", "canary", BAD),
        PassEvent(Step.GATE_ROLLBACK, "canary", revision=BAD, reason="unhealthy"),
        PassEvent(Step.ROLLING_BACK, "canary", revision=GOOD),
        PassEvent(Step.GATE_PROCEED, "canary", revision=GOOD, reason="healthy"),
    ):
        live = advance(live, event)
    rebuilt = rebuild(WAVES, fleet(canary, Cluster("eu-1").healthy_on(GOOD)))
    assert (rebuilt.revision, phases(rebuilt)) == (live.revision, phases(live))
    assert (rebuilt.wave("canary").cause, rebuilt.wave("canary").back) == (
        live.wave("canary").cause,
        live.wave("canary").back,
    )


def test_a_newer_revision_or_a_retry_moves_a_failed_wave() -> None:
    canary = Cluster("canary").healthy_on(GOOD).fails_and_goes_back(BAD, "unhealthy")
    retried = replace(canary.state, retry=RetryRequest(BAD, "ops", "fixed the node", canary.now + 1))
    status = rebuild(WAVES, {"canary": ClusterRecord(retried, canary.history)})
    assert status.wave("canary").phase is WavePhase.PENDING, "the person's retry lifts the failure"
    canary.healthy_on(NEWER)
    status = rebuild(WAVES, fleet(canary))
    assert (status.revision, phases(status)["canary"]) == (NEWER, "passed")


def test_a_rolling_back_wave_reads_rolling_back_until_its_clusters_are_back() -> None:
    canary = Cluster("canary").healthy_on(GOOD)
    canary.write(revision=BAD, phase=SyncPhase.APPLYING)
    canary.write(phase=SyncPhase.FAILED, failures=(FailedRevision(BAD, reason="unhealthy", at=canary.now),))
    canary.write(revision=GOOD, phase=SyncPhase.APPLYING)
    wave = rebuild(WAVES, fleet(canary)).wave("canary")
    assert (wave.phase, wave.ended, wave.cause) == (WavePhase.ROLLING_BACK, WavePhase.FAILED, "unhealthy")


def test_holds_read_held_with_their_cause_and_a_pin_back_is_not_a_revision_rolling_out() -> None:
    canary = Cluster("canary").healthy_on(GOOD).healthy_on(BAD)
    pin = Pin(GOOD, "ops", "bad canary", canary.now)
    canary.write(pin=pin, revision=GOOD, phase=SyncPhase.APPLYING)
    canary.write(phase=SyncPhase.HEALTHY)
    assert going_back(canary.history, len(canary.history) - 1)
    eu = Cluster("eu-1").healthy_on(GOOD)
    eu.write(suspension=Suspension("incident 42", "ops", eu.now))
    us = Cluster("us-1").healthy_on(GOOD)
    us.write(window="outside every window (opens 22:00 UTC)")
    status = rebuild(WAVES, fleet(canary, eu, us))
    assert status.revision == BAD
    held = {w.name: (str(w.phase), w.hold) for w in status.waves}
    assert held == {
        "canary": ("held", HoldCause.PINNED),
        "eu": ("held", HoldCause.SUSPENDED),
        "us": ("held", HoldCause.WINDOW),
    }
    assert status.wave("canary").cause.startswith(f"pinned to {GOOD[:12]} by ops")
    assert status.wave("canary").back == f"rolled back to {GOOD[:12]}"


def test_an_aborted_revision_and_a_manual_gate() -> None:
    canary = Cluster("canary").healthy_on(GOOD).healthy_on(BAD)
    canary.write(abort=Abort(BAD, "ops", "wrong config", canary.now))
    eu = Cluster("eu-1").healthy_on(GOOD)
    eu.write(awaiting=AwaitingPromotion("eu", BAD, eu.now))
    status = rebuild(WAVES, fleet(canary, eu))
    assert phases(status) == {"canary": "aborted", "eu": "awaiting-promotion", "us": "pending"}
    assert "wrong config" in status.wave("canary").cause


def test_a_wave_of_several_clusters_names_each_cause() -> None:
    canary = Cluster("canary").healthy_on(GOOD).fails_and_goes_back(BAD, "unhealthy")
    other = Cluster("canary")
    other.state = replace(other.state, cluster="canary-2")
    other.healthy_on(GOOD).healthy_on(BAD)
    wave = rebuild(WAVES, {"canary": canary.record, "canary-2": other.record}).wave("canary")
    assert (wave.phase, wave.cause) == (WavePhase.FAILED, "canary: unhealthy")
    assert wave.back == f"canary rolled back to {GOOD[:12]}"


def test_reconcile_keeps_the_finer_live_phases_and_takes_what_the_records_settle() -> None:
    live = advance(
        advance(initial(WAVES), PassEvent(Step.APPLYING, "canary", "canary", BAD)),
        PassEvent(Step.GATE_WAIT, "canary", revision=BAD, reason="baking"),
    )
    applying = Cluster("canary").healthy_on(GOOD)
    applying.write(revision=BAD, phase=SyncPhase.APPLYING)
    applying.write(phase=SyncPhase.APPLIED)
    rebuilt = rebuild(WAVES, fleet(applying))
    assert phases(reconcile(live, rebuilt))["canary"] == "waiting-health"  # the live one, from events
    failed = rebuild(WAVES, fleet(Cluster("canary").healthy_on(GOOD).fails_and_goes_back(BAD, "unhealthy")))
    assert phases(reconcile(live, failed))["canary"] == "failed"
    restarted = reconcile(initial(WAVES), failed)
    assert restarted == failed
    assert reconcile(live, rebuild(WAVES, {})) == live
