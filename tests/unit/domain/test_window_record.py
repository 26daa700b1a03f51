"""A recorded window reason: written again while it stands, shown stale once no agent confirmed it
for the stale bound (an injected clock: no time passes in these tests)."""

from __future__ import annotations

from syncer.config.settings import POLL_INTERVAL, WINDOW_RECORD_REFRESH, WINDOW_STALE_AFTER
from syncer.domain.sync_state import ClusterSyncState
from syncer.domain.window_record import record_due, shown

REASON = "outside every maintenance window (deny friday-freeze until 2026-12-05 18:00 UTC)"
JUDGED = 1_800_000_000.0


def test_the_defaults_are_a_refresh_every_poll_and_stale_after_several_polls() -> None:
    assert WINDOW_RECORD_REFRESH == POLL_INTERVAL
    assert WINDOW_STALE_AFTER > 2 * WINDOW_RECORD_REFRESH, "a live agent confirms it well before"


def test_a_pass_writes_a_changed_reason_and_confirms_a_standing_one_once_per_refresh() -> None:
    state = ClusterSyncState("eu-1", window=REASON, window_at=JUDGED)
    assert record_due(state, "", JUDGED + 1, WINDOW_RECORD_REFRESH), "the window opened"
    assert record_due(state, "another reason", JUDGED + 1, WINDOW_RECORD_REFRESH)
    assert not record_due(state, REASON, JUDGED + WINDOW_RECORD_REFRESH - 1, WINDOW_RECORD_REFRESH)
    assert record_due(state, REASON, JUDGED + WINDOW_RECORD_REFRESH, WINDOW_RECORD_REFRESH)
    assert not record_due(ClusterSyncState("eu-1"), "", JUDGED, WINDOW_RECORD_REFRESH), "nothing to say"
    assert record_due(ClusterSyncState("eu-1", window=REASON), REASON, JUDGED, WINDOW_RECORD_REFRESH), (
        "a reason recorded by an older agent, with no time"
    )


def test_status_shows_the_reason_while_confirmed_and_stale_after_the_bound() -> None:
    state = ClusterSyncState("eu-1", window=REASON, window_at=JUDGED)
    fresh = shown(state, JUDGED + WINDOW_STALE_AFTER - 1, WINDOW_STALE_AFTER)
    assert (fresh.text, fresh.stale) == (REASON, False)
    later = shown(state, JUDGED + 25 * 60, WINDOW_STALE_AFTER)  # 25 minutes after the last agent
    assert later.stale
    assert later.text == f"stale window record (no agent confirmed it since 2027-01-15 08:00 UTC): {REASON}"
    unknown = shown(ClusterSyncState("eu-1", window=REASON), JUDGED, WINDOW_STALE_AFTER)
    assert unknown.stale
    assert "an unknown time" in unknown.text
    assert shown(ClusterSyncState("eu-1"), JUDGED, WINDOW_STALE_AFTER).text == ""
