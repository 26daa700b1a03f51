"""The history record as kept in the sync-state ConfigMap: written with the state, bounded in size,
and a malformed record read as a clear error naming where it is, never a traceback."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from syncer.domain.revision_history import Actor, Outcome
from syncer.domain.sync_state import ClusterSyncState, SyncPhase
from syncer.errors import RecordUnreadable
from syncer.status.history import HISTORY_KEY, decode_history, encode_history, history_of
from syncer.status.state_store import STATE_CONFIGMAP, StateStore
from tests.support.memory_kube import MemoryKube

NS = "syncer-system"
CONFIGMAP_LIMIT = 1 << 20  # what the apiserver allows a ConfigMap's data


def _configmap(kube: MemoryKube) -> dict[str, object]:
    return dict(kube.get("v1", "ConfigMap", STATE_CONFIGMAP, NS))


def _apply_and_settle(store: StateStore, revision: str, at: float, error: str = "") -> None:
    state = ClusterSyncState("eu-1", revision=revision, phase=SyncPhase.APPLYING, wave="canary")
    store.save(state, at, Actor("agent a-1", "ops"))
    end = SyncPhase.FAILED if error else SyncPhase.HEALTHY
    store.save(replace(state, phase=end, last_error=error), at + 1, Actor("agent a-1", "ops"))


def test_each_state_write_keeps_the_history_and_trims_it() -> None:
    kube = MemoryKube("eu-1")
    store = StateStore(kube, NS, keep=3)
    for i in range(5):
        _apply_and_settle(store, f"{i:040x}", 100.0 * i)
    entries = history_of(_configmap(kube), "eu-1")
    assert [e.revision for e in entries] == [f"{i:040x}" for i in (2, 3, 4)]
    assert [(e.outcome, e.started, e.ended, e.by, e.signer) for e in entries][-1] == (
        Outcome.HEALTHY,
        400.0,
        401.0,
        "agent a-1",
        "ops",
    )
    # A fresh store (a restarted agent, no cache) goes on from what the cluster holds.
    _apply_and_settle(StateStore(kube, NS, keep=3), "f" * 40, 900.0)
    assert [e.revision[:1] for e in history_of(_configmap(kube), "eu-1")] == ["0", "0", "f"]


def test_a_full_record_of_huge_failures_stays_far_below_the_configmap_limit() -> None:
    kube = MemoryKube("eu-1")
    store = StateStore(kube, NS, keep=200)
    for i in range(200):
        _apply_and_settle(store, f"{i:040x}", float(i), error="e" * 50_000)
    data = _configmap(kube)["data"]
    assert isinstance(data, dict)
    assert len(history_of(_configmap(kube), "eu-1")) == 200
    assert sum(len(k) + len(v) for k, v in data.items()) < CONFIGMAP_LIMIT // 2


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("{not json", "not JSON"),
        ('{"version": 7, "entries": []}', "unknown format"),
        ('{"version": 1, "entries": {}}', "entries must be a list"),
        ('{"version": 1, "entries": [3]}', "entry 1 is not an object"),
        ('{"version": 1, "entries": [{"revision": "a", "outcome": "exploded"}]}', "outcome 'exploded'"),
        (
            '{"version": 1, "entries": [{"revision": "a", "outcome": "healthy", "started": "noon"}]}',
            "started must be a number",
        ),
        ('{"version": 1, "entries": [{"revision": 5, "outcome": "healthy"}]}', "revision must be a string"),
        ('{"version": 1, "entries": [{"outcome": "healthy"}]}', "revision is empty"),
    ],
)
def test_a_malformed_record_is_a_clear_error_naming_where_it_is(text: str, problem: str) -> None:
    configmap = {"metadata": {"name": STATE_CONFIGMAP, "namespace": NS}, "data": {HISTORY_KEY: text}}
    with pytest.raises(RecordUnreadable, match=problem) as caught:
        history_of(configmap, "eu-1")
    assert f"eu-1: ConfigMap {NS}/{STATE_CONFIGMAP}, key {HISTORY_KEY}: " in str(caught.value)


def test_the_agent_starts_an_unreadable_record_again_instead_of_failing_its_write() -> None:
    kube = MemoryKube("eu-1")
    store = StateStore(kube, NS)
    _apply_and_settle(store, "a" * 40, 1.0)
    body = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": STATE_CONFIGMAP, "namespace": NS},
        "data": {HISTORY_KEY: "{broken"},
    }
    kube.apply(body)
    _apply_and_settle(StateStore(kube, NS), "b" * 40, 5.0)
    assert [e.revision for e in history_of(_configmap(kube), "eu-1")] == ["b" * 40]


def test_the_record_survives_the_round_trip() -> None:
    kube = MemoryKube("eu-1")
    _apply_and_settle(StateStore(kube, NS), "a" * 40, 1.0, error="boom")
    entries = history_of(_configmap(kube), "eu-1")
    assert decode_history(encode_history(entries)) == entries
    assert json.loads(encode_history(entries))["entries"][0]["outcome"] == "failed"
