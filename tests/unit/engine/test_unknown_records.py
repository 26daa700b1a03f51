"""A cluster recording a commit the repository does not hold is taken as recording nothing there, its
record kept as evidence until it runs another revision (``syncer.engine.unknown_records``)."""

from __future__ import annotations

from syncer.domain.progress import PassEvent, Step
from syncer.domain.sync_state import ClusterSyncState, SyncPhase, UnknownRecord
from syncer.engine.unknown_records import ignore_unknown

GOOD, FORGED, TIP, LATER = "a" * 40, "f" * 40, "c" * 40, "d" * 40
NOW = 1_800_000_000.0


def test_the_unknown_commit_is_forgotten_kept_as_evidence_written_and_told() -> None:
    states = {
        "canary": ClusterSyncState("canary", FORGED, SyncPhase.HEALTHY, wave="canary", last_good=FORGED),
        "eu-1": ClusterSyncState("eu-1", GOOD, SyncPhase.HEALTHY, wave="eu", last_good=GOOD),
        "us-1": ClusterSyncState("us-1", GOOD, SyncPhase.HEALTHY, wave="us", last_good=FORGED),
    }
    unsaved: dict[str, str] = {}
    told: list[PassEvent] = []
    ignore_unknown(states, unsaved, {FORGED}, TIP, (told.append, NOW))
    canary, us = states["canary"], states["us-1"]
    assert (canary.revision, canary.phase, canary.last_good) == ("", SyncPhase.NEVER, "")
    assert canary.unknown_record == UnknownRecord(FORGED, NOW, TIP)
    assert (us.revision, us.phase, us.last_good) == (GOOD, SyncPhase.HEALTHY, ""), "only what is unknown"
    assert states["eu-1"].unknown_record == UnknownRecord()
    assert sorted(unsaved) == ["canary", "us-1"]
    assert [(e.step, e.cluster, e.revision) for e in told] == [
        (Step.RECORD_UNKNOWN, "canary", FORGED),
        (Step.RECORD_UNKNOWN, "us-1", FORGED),
    ]
    assert told[0].detail.startswith(f"records unknown commit {FORGED[:12]} (not in the repository; ")


def test_the_evidence_stays_while_the_cluster_runs_the_revision_it_was_taken_to() -> None:
    note = UnknownRecord(FORGED, NOW, TIP)
    states = {
        "on-tip": ClusterSyncState("on-tip", TIP, SyncPhase.HEALTHY, unknown_record=note),
        "moved": ClusterSyncState("moved", LATER, SyncPhase.APPLYING, unknown_record=note),
    }
    ignore_unknown(states, {}, set(), LATER, (lambda _: None, NOW + 60))
    assert states["on-tip"].unknown_record == note
    assert states["moved"].unknown_record == UnknownRecord()
