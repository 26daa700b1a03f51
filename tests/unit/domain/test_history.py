"""The bounded record of revisions a cluster keeps: entries opened, settled, interrupted, trimmed."""

from __future__ import annotations

from dataclasses import replace

from syncer.domain.revision_history import MAX_ENTRY_TEXT, Actor, HistoryEntry, Outcome, note
from syncer.domain.sync_state import ClusterSyncState, Suspension, SyncPhase

AGENT = Actor("agent a-1", "ops")
A, B = "a" * 40, "b" * 40


def _state(revision: str, phase: SyncPhase, **more: object) -> ClusterSyncState:
    return replace(ClusterSyncState("eu-1", revision=revision, phase=phase, wave="canary"), **more)


def test_an_apply_opens_an_entry_and_the_gate_settles_it() -> None:
    history = note((), _state(A, SyncPhase.APPLYING), 10.0, AGENT, 20)
    assert history == (HistoryEntry(A, "ops", 10.0, 0.0, "canary", Outcome.APPLYING, "", "agent a-1"),)
    # A window judgement written while applying changes nothing.
    assert note(history, _state(A, SyncPhase.APPLYING, window="closed"), 11.0, AGENT, 20) == history
    history = note(history, _state(A, SyncPhase.APPLIED), 12.0, AGENT, 20)
    history = note(history, _state(A, SyncPhase.HEALTHY), 15.0, AGENT, 20)
    assert [(e.outcome, e.started, e.ended) for e in history] == [(Outcome.HEALTHY, 10.0, 15.0)]
    # Health written again on a healthy cluster changes nothing.
    assert note(history, _state(A, SyncPhase.HEALTHY, health="ok"), 30.0, AGENT, 20) == history


def test_a_failure_keeps_its_reason_and_a_retry_is_a_new_entry() -> None:
    history = note((), _state(A, SyncPhase.APPLYING), 1.0, AGENT, 20)
    history = note(history, _state(A, SyncPhase.FAILED, last_error="conflict with kubectl"), 2.0, AGENT, 20)
    assert (history[-1].outcome, history[-1].reason) == (Outcome.FAILED, "conflict with kubectl")
    history = note(history, _state(A, SyncPhase.APPLYING), 3.0, AGENT, 20)
    assert [e.outcome for e in history] == [Outcome.FAILED, Outcome.APPLYING]


def test_an_apply_left_for_another_revision_was_interrupted() -> None:
    history = note((), _state(A, SyncPhase.APPLYING), 1.0, AGENT, 20)
    history = note(history, _state(B, SyncPhase.APPLYING), 2.0, AGENT, 20)
    assert [(e.revision, e.outcome, e.ended) for e in history] == [
        (A, Outcome.INTERRUPTED, 2.0),
        (B, Outcome.APPLYING, 0.0),
    ]
    # A suspension that put the cluster back says so.
    suspended = Suspension("incident 42", "ops", 0.0)
    back = note(history, _state(A, SyncPhase.HEALTHY, suspension=suspended), 3.0, AGENT, 20)
    assert back[-1].outcome is Outcome.INTERRUPTED
    assert "suspended by ops" in back[-1].reason
    assert "incident 42" in back[-1].reason


def test_the_record_keeps_the_newest_entries_only() -> None:
    history: tuple[HistoryEntry, ...] = ()
    for i in range(30):
        history = note(history, _state(f"{i:040x}", SyncPhase.APPLYING), float(i), AGENT, 20)
        history = note(history, _state(f"{i:040x}", SyncPhase.HEALTHY), i + 0.5, AGENT, 20)
    assert len(history) == 20
    assert [e.revision for e in history] == [f"{i:040x}" for i in range(10, 30)]
    assert note(history, _state(A, SyncPhase.APPLYING), 99.0, AGENT, 5)[-1].revision == A
    assert len(note(history, _state(A, SyncPhase.APPLYING), 99.0, AGENT, 5)) == 5


def test_each_text_of_an_entry_is_bounded() -> None:
    huge = "x" * 100_000
    history = note((), _state(A, SyncPhase.APPLYING, wave=huge), 1.0, Actor(huge, huge), 20)
    history = note(history, _state(A, SyncPhase.FAILED, last_error=huge), 2.0, AGENT, 20)
    entry = history[-1]
    for text in (entry.signer, entry.wave, entry.reason, entry.by):
        assert len(text) == MAX_ENTRY_TEXT
        assert text.endswith("…")


def test_a_state_that_never_synced_records_nothing() -> None:
    assert note((), ClusterSyncState("eu-1"), 1.0, AGENT, 20) == ()
