from __future__ import annotations

import json

import pytest

from syncer.domain.sync_state import BAD_REVISIONS_KEPT, ClusterSyncState, InventoryEntry, SyncPhase
from syncer.status import decode, encode, inventory_of
from syncer.status.state_store import StateFormatError

STATE = ClusterSyncState(
    cluster="eu-1",
    revision="a" * 40,
    phase=SyncPhase.HEALTHY,
    wave="canary",
    inventory=(InventoryEntry("redis.syncer.dev/v1alpha1", "RedisCluster", "cache", "sessions", "u-1"),),
    health="healthy",
    last_good="a" * 40,
    bad_revisions=("b" * 40,),
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
        ('{"version": 1, "state": {"applied_at": "yesterday"}}', "applied_at must be a number"),
    ],
)
def test_corrupt_states_are_reported_not_crashed_on(text: str, problem: str) -> None:
    with pytest.raises(StateFormatError, match=problem):
        decode("eu-1", text)


def test_bad_revisions_are_bounded_and_deduplicated() -> None:
    state = ClusterSyncState("c")
    for i in range(BAD_REVISIONS_KEPT + 5):
        state = state.with_bad(f"r{i}")
    state = state.with_bad(f"r{BAD_REVISIONS_KEPT + 4}")
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
