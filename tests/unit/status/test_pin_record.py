"""A person's pin as read from the sync-state ConfigMap: a readable one is the pin, an unreadable one
holds the cluster as a suspension does (fail closed), none is none."""

from __future__ import annotations

import pytest

from syncer.domain.sync_state import ClusterSyncState, Pin
from syncer.status.acts import PIN_KEY, with_acts


def _read(text: str) -> ClusterSyncState:
    return with_acts(ClusterSyncState("eu-1"), {"data": {PIN_KEY: text}} if text else {})


def test_a_recorded_pin_is_read_with_who_when_and_why() -> None:
    state = _read('{"revision": "abc1234", "by": "ops", "reason": "bad canary", "at": 5}')
    assert state.pin == Pin("abc1234", "ops", "bad canary", 5.0)
    assert not state.suspension.active
    assert _read("").pin == Pin()


@pytest.mark.parametrize(
    "text",
    ["{broken", "[]", '{"revision": 7}', '{"revision": "a", "at": true}', '{"revision": "a", "by": []}'],
)
def test_an_unreadable_pin_holds_the_cluster_like_a_suspension(text: str) -> None:
    state = _read(text)
    assert state.pin == Pin()
    assert state.suspension.active
    assert state.suspension.reason == f"unreadable {PIN_KEY}: taken as suspended"
