"""Failed-before judged per cluster and per cause: pure, no cluster."""

from __future__ import annotations

from typing import Any

import pytest

from syncer.domain.changeset import ChangeEntry, ChangeSet, EntryOutcome, FailureCause
from syncer.domain.objects import ObjectKey
from syncer.domain.plans import Action
from syncer.domain.sync_state import (
    ClusterSyncState,
    FailedRevision,
    InventoryEntry,
    RetryRequest,
    SyncPhase,
)
from syncer.rollout.failures import apply_failure, blame, fingerprint, not_blamed, refusal, refusing

KEY = ObjectKey("eu-1", "", "ConfigMap", "cache", "tuning")
VERSIONS = {KEY: "v1"}
ENTRY = InventoryEntry("v1", "ConfigMap", "cache", "tuning")


def failed(*entries: ChangeEntry, error: str = "ConfigMap/cache/tuning: refused") -> ChangeSet:
    return ChangeSet("eu-1", "r2", entries, error)


@pytest.mark.parametrize(
    ("entry", "cause", "objects"),
    [
        (ChangeEntry(KEY, Action.CONFLICT, EntryOutcome.FAILED, cause=FailureCause.LIVE), "live", (ENTRY,)),
        (ChangeEntry(KEY, Action.UPDATE, EntryOutcome.FAILED, cause=FailureCause.LIVE), "live", (ENTRY,)),
        (ChangeEntry(KEY, Action.CREATE, EntryOutcome.FAILED, cause=FailureCause.CONTENT), "content", ()),
        (ChangeEntry(KEY, Action.CREATE, EntryOutcome.FAILED), "content", ()),  # cause unknown
        (ChangeEntry(KEY, Action.CONFLICT, EntryOutcome.SKIPPED), "live", (ENTRY,)),  # blocked plan
        (ChangeEntry(KEY, Action.DRIFT, EntryOutcome.SKIPPED), "live", (ENTRY,)),
        (ChangeEntry(KEY, Action.ERROR, EntryOutcome.SKIPPED), "content", ()),  # dry-run refused
    ],
)
def test_an_apply_failure_has_the_cause_of_its_objects(
    entry: ChangeEntry, cause: str, objects: tuple[InventoryEntry, ...]
) -> None:
    found = apply_failure(failed(entry), VERSIONS, "h2", 9.0)
    assert (found.revision, found.content, found.cause, found.objects, found.at) == (
        "r2",
        "h2",
        FailureCause(cause),
        objects,
        9.0,
    )
    assert found.reason == "apply failed: ConfigMap/cache/tuning: refused"


def test_one_refused_object_makes_the_failure_a_content_one_and_no_entry_at_all_a_live_one() -> None:
    live = ChangeEntry(KEY, Action.CONFLICT, EntryOutcome.SKIPPED)
    other = ObjectKey("eu-1", "", "ConfigMap", "cache", "other")
    content = ChangeEntry(other, Action.ERROR, EntryOutcome.SKIPPED)
    assert apply_failure(failed(live, content), VERSIONS, "", 0).cause is FailureCause.CONTENT
    unread = apply_failure(failed(error="reading live state failed: timed out"), VERSIONS, "", 0)
    assert (unread.cause, unread.objects) == (FailureCause.LIVE, ())


APPLIED = ClusterSyncState("eu-1", revision="r2", phase=SyncPhase.FAILED, applied_at=5.0)


def test_only_the_revision_that_was_applied_and_failed_on_a_healthy_cluster_is_blamed() -> None:
    blamed = blame(APPLIED, "r2", "not healthy 60s after apply", "h2", 9.0)
    assert blamed == FailedRevision("r2", "h2", FailureCause.CONTENT, "not healthy 60s after apply", at=9.0)
    assert not_blamed(APPLIED, "r2") == ""
    # Not applied there (another revision, or no apply finished): nothing to blame.
    assert blame(ClusterSyncState("eu-1", revision="r1", applied_at=5.0), "r2", "x", "h2", 9.0) is None
    assert blame(ClusterSyncState("eu-1", revision="r2"), "r2", "x", "h2", 9.0) is None
    # Not healthy before the revision came: the gate's failure is not the revision's.
    degraded = ClusterSyncState("eu-1", revision="r2", applied_at=5.0, degraded_before="degraded: Stalled")
    assert blame(degraded, "r2", "degraded: Stalled", "h2", 9.0) is None
    assert not_blamed(degraded, "r2") == "it was not healthy before r2 was applied (degraded: Stalled)"


def test_an_apply_failure_is_the_revisions_own_even_on_a_cluster_degraded_before() -> None:
    own = FailedRevision("r2", "h2", FailureCause.LIVE, "apply failed: owned by kubectl", (ENTRY,), at=6.0)
    state = ClusterSyncState(
        "eu-1", revision="r2", applied_at=5.0, degraded_before="degraded: Stalled", apply_failure=own
    )
    assert blame(state, "r2", "apply failed: owned by kubectl", "h2", 9.0) == own
    assert not_blamed(state, "r2") == ""


CONTENT = FailedRevision("r2", "h2", FailureCause.CONTENT, "apply failed: invalid", at=5.0)
LIVE = FailedRevision("r2", "h2", FailureCause.LIVE, "apply failed: owned by kubectl", (ENTRY,), "fp1", 5.0)


def remembering(failure: FailedRevision, cluster: str = "eu-1", **fields: Any) -> ClusterSyncState:
    return ClusterSyncState(
        cluster, revision="r1", phase=SyncPhase.ROLLED_BACK, failures=(failure,), **fields
    )


def test_a_content_failure_is_refused_whatever_the_live_state_until_git_changes_the_objects() -> None:
    state = remembering(CONTENT)
    refused = refusal(state, "r2", "h2", "anything")
    assert refused is not None
    assert refused.reason == (
        "eu-1: refused: failed before (content): apply failed: invalid; "
        "not retried until git changes its objects for this cluster"
    )
    assert refusal(state, "r3", "h2") is not None, "the same objects under another commit"
    assert refusal(state, "r3", "h3") is None, "git changed the cluster's objects"


def test_a_live_failure_is_refused_only_while_the_objects_in_the_way_are_as_they_were() -> None:
    state = remembering(LIVE)
    same = refusal(state, "r2", "h2", "fp1")
    assert same is not None
    assert "(live)" in same.reason
    assert "`syncer retry`" in same.reason
    assert refusal(state, "r2", "h2", "fp2") is None, "the objects in the way changed"
    assert refusal(state, "r2", "h2", None) is None, "they could not be looked at"
    nothing_watched = remembering(FailedRevision("r2", "h2", FailureCause.LIVE, "unreachable", at=5.0))
    assert refusal(nothing_watched, "r2", "h2", "fp1") is None


def test_a_persons_retry_covers_the_failures_recorded_before_it() -> None:
    for failure in (CONTENT, LIVE):
        assert (
            refusal(remembering(failure, retry=RetryRequest("r2", "ops", "fixed", 6.0)), "r2", "h2", "fp1")
            is None
        )
        assert (
            refusal(remembering(failure, retry=RetryRequest("", "ops", "fixed", 6.0)), "r2", "h2", "fp1")
            is None
        )
        # A retry of another revision, or one older than the failure, does not.
        assert refusal(remembering(failure, retry=RetryRequest("r9", "ops", "", 6.0)), "r2", "h2", "fp1")
        assert refusal(remembering(failure, retry=RetryRequest("r2", "ops", "", 4.0)), "r2", "h2", "fp1")


def test_a_cluster_that_runs_the_revision_healthy_does_not_refuse_it() -> None:
    healthy = ClusterSyncState("eu-1", revision="r2", phase=SyncPhase.HEALTHY, failures=(CONTENT,))
    assert refusal(healthy, "r2", "h2") is None


def test_refusing_names_only_the_clusters_that_refuse() -> None:
    states = {
        "a": remembering(CONTENT, "a"),
        "b": ClusterSyncState("b"),
        "c": remembering(LIVE, "c"),
        "d": remembering(LIVE, "d"),
    }
    contents = dict.fromkeys(states, "h2")
    found = refusing(tuple(states), "r2", contents, states, {"c": "fp2", "d": "fp1"})
    assert [(r.cluster, r.failure) for r in found] == [("a", CONTENT), ("d", LIVE)]


def managed(manager: str, time: str, subresource: str = "") -> dict[str, str]:
    entry = {"manager": manager, "operation": "Apply", "time": time}
    return entry | ({"subresource": subresource} if subresource else {})


def test_the_fingerprint_follows_other_managers_and_the_object_not_status_or_syncers_own() -> None:
    def obj(*entries: dict[str, str], uid: str = "u1") -> dict[str, Any]:
        return {"metadata": {"uid": uid, "resourceVersion": "7", "managedFields": list(entries)}}

    base = fingerprint({ENTRY: obj(managed("kubectl", "t1"))}, "syncer")
    assert base == fingerprint({ENTRY: obj(managed("kubectl", "t1"), managed("syncer", "t5"))}, "syncer")
    assert base == fingerprint(
        {ENTRY: obj(managed("kubectl", "t1"), managed("ctl", "t6", "status"))}, "syncer"
    )
    assert base != fingerprint({ENTRY: obj(managed("kubectl", "t2"))}, "syncer")
    assert base != fingerprint({ENTRY: obj(managed("kubectl", "t1"), uid="u2")}, "syncer")
    assert base != fingerprint({ENTRY: None}, "syncer")
