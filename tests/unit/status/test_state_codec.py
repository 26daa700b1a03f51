from __future__ import annotations

import json
from dataclasses import replace

import pytest

from syncer.domain.changeset import FailureCause
from syncer.domain.sync_state import (
    BAD_REVISIONS_KEPT,
    ClusterSyncState,
    FailedRevision,
    InventoryEntry,
    SyncPhase,
)
from syncer.status import decode, encode, inventory_of
from syncer.status.state_store import LEGACY_REASON, StateFormatError, decode_failures, encode_failures

STATE = ClusterSyncState(
    cluster="eu-1",
    revision="a" * 40,
    phase=SyncPhase.HEALTHY,
    wave="canary",
    inventory=(InventoryEntry("redis.syncer.dev/v1alpha1", "RedisCluster", "cache", "sessions", "u-1"),),
    health="healthy",
    last_good="a" * 40,
    degraded_before="progressing: eu-1: RedisCluster/cache/sessions: Reconciling",
    applied_at=100.0,
    healthy_since=120.0,
    updated_at=130.0,
)


def test_a_state_survives_the_round_trip() -> None:
    assert decode("eu-1", encode(STATE)) == STATE


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("{not json", "not JSON"),
        ('{"version": 99, "state": {}}', "unknown format"),
        ('{"version": 1}', "no state object"),
        ('{"version": 1, "state": {"phase": "exploded"}}', "bad inventory or phase"),
        ('{"version": 1, "state": {"inventory": [{"kind": "X"}]}}', "bad inventory or phase"),
        ('{"version": 1, "state": {"revision": 7}}', "revision must be a string"),
        ('{"version": 1, "state": {"bad_revisions": "abc"}}', "bad_revisions must be a list"),
        ('{"version": 1, "state": {"apply_failure": {"cause": "x"}}}', "bad failure cause"),
        ('{"version": 1, "state": {"applied_at": "yesterday"}}', "applied_at must be a number"),
    ],
)
def test_corrupt_states_are_reported_not_crashed_on(text: str, problem: str) -> None:
    with pytest.raises(StateFormatError, match=problem):
        decode("eu-1", text)


def test_bad_revisions_are_bounded_and_deduplicated() -> None:
    state = ClusterSyncState("c")
    for i in range(BAD_REVISIONS_KEPT + 5):
        state = state.with_failure(FailedRevision(f"r{i}"))
    state = state.with_failure(FailedRevision(f"r{BAD_REVISIONS_KEPT + 4}"))
    assert len(state.bad_revisions) == BAD_REVISIONS_KEPT
    assert state.bad_revisions[-1] == f"r{BAD_REVISIONS_KEPT + 4}"
    assert state.bad_revisions[0] == "r5"


def test_the_inventory_holds_only_labelled_objects() -> None:
    labelled = {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": "cache", "uid": "u", "labels": {"app.kubernetes.io/managed-by": "syncer"}},
    }
    stranger = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "other", "labels": {}}}
    assert inventory_of([stranger, labelled]) == (InventoryEntry("v1", "Namespace", "", "cache", "u"),)


def test_the_encoding_is_versioned_json() -> None:
    document = json.loads(encode(STATE))
    assert document["version"] == 1
    assert document["state"]["phase"] == "healthy"


FAILURES = (
    FailedRevision("a" * 40, "h1", FailureCause.CONTENT, "apply failed: invalid", at=5.0),
    FailedRevision(
        "b" * 40,
        "h2",
        FailureCause.LIVE,
        "apply failed: owned by kubectl",
        (InventoryEntry("v1", "ConfigMap", "cache", "tuning"),),
        "f" * 32,
        7.0,
    ),
)


def test_failures_survive_the_round_trip_under_their_own_key() -> None:
    assert decode_failures(encode_failures(FAILURES)) == FAILURES
    with_failure = replace(STATE, apply_failure=FAILURES[1])
    assert decode("eu-1", encode(with_failure)) == with_failure
    # The state's own key does not carry the failures: a corrupt state does not take them along.
    assert "failures" not in json.loads(encode(replace(STATE, failures=FAILURES)))["state"]


def test_a_state_written_before_failures_had_a_cause_still_loads_as_content_failures() -> None:
    old = {"version": 1, "state": {"revision": "r2", "bad_revisions": ["r1"], "bad_contents": ["h9"]}}
    state = decode("eu-1", json.dumps(old))
    assert state.failures == (
        FailedRevision("r1", reason=LEGACY_REASON),
        FailedRevision("", "h9", reason=LEGACY_REASON),
    )
    assert state.bad_revisions == ("r1",)
    assert state.failure_of("other", "h9") is not None


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("[]", "unknown format"),
        ('{"version": 1, "failures": {}}', "failures must be a list"),
        ('{"version": 1, "failures": [{"cause": "maybe"}]}', "bad failure cause"),
        ('{"version": 1, "failures": [{"objects": [{"kind": "X"}]}]}', "bad object entry"),
    ],
)
def test_corrupt_failures_are_reported_not_crashed_on(text: str, problem: str) -> None:
    with pytest.raises(StateFormatError, match=problem):
        decode_failures(text)
