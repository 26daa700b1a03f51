"""Rollback targets over every recorded state that can be enumerated: a cluster goes back only to a
revision it ran healthy itself, never to the revision being rolled back, never to one it refuses now
because it failed there since (judged by cause, as every refusal is), whatever the rest of the fleet
recorded; a passed wave is not a rollout any more."""

from __future__ import annotations

import itertools
from dataclasses import replace

import pytest

from syncer.domain.changeset import FailureCause
from syncer.domain.revision_history import HistoryEntry, Outcome
from syncer.domain.sync_state import ClusterSyncState, FailedRevision, RetryRequest, SyncPhase
from syncer.rollout.failures import refusal
from syncer.rollout.rollback_targets import good_before, rollback_target, rollback_targets, wave_passed

REVISIONS = ("", "a" * 40, "b" * 40, "c" * 40)
REAL = REVISIONS[1:]


def all_states(cluster: str = "eu-1") -> list[ClusterSyncState]:
    """Every combination of applied revision, phase, last good revision and set of bad revisions."""
    bad_sets = [c for n in range(len(REAL) + 1) for c in itertools.combinations(REAL, n)]
    return [
        ClusterSyncState(
            cluster,
            revision=rev,
            phase=phase,
            last_good=good,
            failures=tuple(FailedRevision(r) for r in bad),
        )
        for rev, phase, good, bad in itertools.product(REVISIONS, SyncPhase, REVISIONS, bad_sets)
    ]


STATES = all_states()


def test_the_space_is_the_whole_product() -> None:
    assert len(STATES) == 4 * len(SyncPhase) * 4 * 8


@pytest.mark.parametrize("failing", REAL)
def test_a_target_is_the_clusters_own_last_good_revision_and_never_the_failing_or_a_refused_one(
    failing: str,
) -> None:
    for state in STATES:
        refused = refusal(state, state.last_good, "", None) if state.last_good else None
        target = rollback_target(state, failing, refused)
        assert target.cluster == state.cluster
        assert target.reason
        if target.revision:
            assert target.revision == state.last_good
            assert target.revision != failing
            assert refused is None
        else:
            # No target only when the cluster's own record offers none.
            assert not state.last_good or state.last_good == failing or refused is not None


GOOD, FAILING = REAL[0], REAL[1]
CONTENT, LIVE = FailureCause.CONTENT, FailureCause.LIVE


def _failed_on_good(failure: FailedRevision, retry: RetryRequest = RetryRequest()) -> ClusterSyncState:
    return ClusterSyncState(
        "eu-1", FAILING, SyncPhase.APPLIED, last_good=GOOD, failures=(failure,), retry=retry
    )


@pytest.mark.parametrize(
    ("failure", "retry", "live_now", "target"),
    [
        (FailedRevision(GOOD, cause=FailureCause.CONTENT, at=1.0), RetryRequest(), None, ""),
        (FailedRevision(GOOD, cause=FailureCause.CONTENT, at=1.0), RetryRequest(at=2.0), None, GOOD),
        (
            FailedRevision(GOOD, cause=FailureCause.LIVE, fingerprint="held", at=1.0),
            RetryRequest(),
            "held",
            "",
        ),
        (
            FailedRevision(GOOD, cause=FailureCause.LIVE, fingerprint="held", at=1.0),
            RetryRequest(),
            "moved",
            GOOD,
        ),
        (FailedRevision(GOOD, cause=FailureCause.LIVE, fingerprint="", at=1.0), RetryRequest(), None, GOOD),
    ],
    ids=["content", "content-retried", "live-still-in-the-way", "live-resolved", "live-nothing-to-watch"],
)
def test_a_failure_of_the_last_good_revision_stands_in_the_way_as_it_refuses_it(
    failure: FailedRevision, retry: RetryRequest, live_now: str | None, target: str
) -> None:
    """The same judgement as the refusal of a revision: a live failure whose objects changed, or any
    failure a person's retry covers, leaves the last good revision a rollback target."""
    state = _failed_on_good(failure, retry)
    found = rollback_target(state, FAILING, refusal(state, GOOD, "", live_now))
    assert found.revision == target
    if not target:
        assert "failed there since: refused: failed before" in found.reason


def test_the_rest_of_the_fleet_never_changes_a_clusters_target() -> None:
    failing = REAL[2]
    mine = ClusterSyncState("us-1", revision=failing, phase=SyncPhase.APPLIED, last_good=REAL[0])
    for others in itertools.product(STATES[::7], repeat=2):
        states = {"canary": others[0], "eu-1": others[1], "us-1": mine}
        assert rollback_targets(["us-1"], states, failing)["us-1"].revision == REAL[0]


def test_after_a_restart_mid_rollout_the_failing_wave_goes_back_not_to_itself() -> None:
    """The fleet's earlier waves ran the new revision healthy; the failing last wave never did."""
    old, new = REAL[0], REAL[1]
    states = {
        "canary": ClusterSyncState("canary", new, SyncPhase.HEALTHY, last_good=new),
        "eu-1": ClusterSyncState("eu-1", new, SyncPhase.HEALTHY, last_good=new),
        "us-1": ClusterSyncState("us-1", new, SyncPhase.APPLIED, last_good=old),
        "ap-1": ClusterSyncState("ap-1", new, SyncPhase.FAILED, last_good=""),
    }
    targets = rollback_targets(["us-1", "ap-1"], states, new)
    assert targets["us-1"].revision == old
    assert targets["ap-1"].revision == ""
    assert "never ran a revision healthy" in targets["ap-1"].reason
    assert rollback_targets(["gone"], states, new)["gone"].revision == ""


@pytest.mark.parametrize("revision", REAL)
def test_a_wave_has_passed_only_when_every_cluster_recorded_the_revision_healthy(revision: str) -> None:
    sample = STATES[::5]
    for first, second in itertools.product(sample, repeat=2):
        states = {"a": first, "b": second}
        expected = all(s.revision == revision and s.phase is SyncPhase.HEALTHY for s in (first, second))
        assert wave_passed(["a", "b"], states, revision) is expected
    assert not wave_passed([], {}, revision)
    assert not wave_passed(["a"], {}, revision)


def test_a_cluster_whose_last_good_is_the_failing_revision_goes_back_to_the_one_before_in_its_history() -> (
    None
):
    """A passed wave whose revision a person aborted: its last good revision is the aborted one."""
    history = (
        HistoryEntry(REAL[0], outcome=Outcome.HEALTHY),
        HistoryEntry(REAL[1], outcome=Outcome.FAILED),
        HistoryEntry(REAL[2], outcome=Outcome.HEALTHY),
    )
    state = ClusterSyncState("eu-1", REAL[2], SyncPhase.HEALTHY, last_good=REAL[2])
    assert good_before(state, REAL[2], history) == REAL[0]
    assert rollback_target(state, REAL[2], None, history).revision == REAL[0]
    assert rollback_target(state, REAL[2]).reason.startswith("the last revision it ran healthy is")
    assert good_before(replace(state, last_good=REAL[0]), REAL[2], ()) == REAL[0]
    assert good_before(state, REAL[2], history[1:]) == ""
