"""The pin decisions: which clusters a pin keeps off a revision, and which revisions a cluster's own
history lets it be pinned to."""

from __future__ import annotations

import pytest

from syncer.domain.revision_history import HistoryEntry, Outcome
from syncer.domain.sync_state import ClusterSyncState, Pin
from syncer.errors import RevisionNotNamed, RollbackRefused
from syncer.rollout.pins import pinned_away, pins_away, rollback_target

A, B, C = "a1" + "0" * 38, "b2" + "0" * 38, "c3" + "0" * 38
HISTORY = (
    HistoryEntry(A, outcome=Outcome.HEALTHY),
    HistoryEntry(B, outcome=Outcome.FAILED),
    HistoryEntry(C, outcome=Outcome.APPLIED),
)


def test_a_pin_keeps_a_cluster_off_every_revision_but_its_own() -> None:
    pinned = ClusterSyncState("eu-1", pin=Pin(A, "ops", "bad canary", 1.0))
    free = ClusterSyncState("us-1")
    assert pinned_away(pinned, C)
    assert not pinned_away(pinned, A)
    assert not pinned_away(free, C)
    assert pins_away({"eu-1": pinned, "us-1": free}, C) == {"eu-1": A}
    assert pins_away({"eu-1": pinned, "us-1": free}, A) == {}


def test_a_revision_applied_there_is_found_by_its_id_or_a_prefix() -> None:
    assert rollback_target("eu-1", HISTORY, A) == A
    assert rollback_target("eu-1", HISTORY, "c300000") == C


@pytest.mark.parametrize(
    ("wanted", "problem"),
    [
        (
            "d4" + "0" * 38,
            "eu-1: d400000000000000000000000000000000000000 was never verified and applied there;",
        ),
        (B, "it was only b20000000000 (failed) there"),
    ],
)
def test_anything_else_is_refused_naming_what_the_history_holds(wanted: str, problem: str) -> None:
    with pytest.raises(RollbackRefused) as refused:
        rollback_target("eu-1", HISTORY, wanted)
    assert problem in str(refused.value)
    if len(wanted) > 7:
        assert "its history holds, newest first: c30000000000 (applied), a10000000000 (healthy)" in str(
            refused.value
        )


def test_a_name_too_short_or_ambiguous_is_refused_by_the_shared_rule_with_the_candidates() -> None:
    with pytest.raises(RevisionNotNamed, match="give its id or at least 7 hexadecimal characters"):
        rollback_target("eu-1", HISTORY, "a1")
    twin = C[:8] + "9" * 32
    twins = (HistoryEntry(C, outcome=Outcome.APPLIED), HistoryEntry(twin, outcome=Outcome.HEALTHY))
    with pytest.raises(RevisionNotNamed, match="is ambiguous"):
        rollback_target("eu-1", twins, C[:8])


def test_an_empty_history_holds_nothing_to_roll_back_to() -> None:
    with pytest.raises(RollbackRefused, match="its history holds, newest first: none"):
        rollback_target("eu-1", (), A)
