"""The rollout's status as ``syncer status`` and ``syncer history`` print it: the waves in the
policy's order or in the order the clusters' histories name them, one line per wave, git text as
text."""

from __future__ import annotations

import io

from rich.console import Console

from syncer.cli.status_rollout import print_rollout, rollout_json, wave_order
from syncer.domain.revision_history import HistoryEntry, Outcome
from syncer.domain.rollout_records import ClusterRecord
from syncer.domain.rollout_status import RolloutStatus, WavePhase, WaveStatus
from syncer.domain.sync_state import ClusterSyncState

GOOD, BAD = "a" * 40, "b" * 40


def _record(cluster: str, wave: str, started: float) -> ClusterRecord:
    entry = HistoryEntry(GOOD, started=started, wave=wave, outcome=Outcome.HEALTHY)
    return ClusterRecord(ClusterSyncState(cluster, GOOD, wave=wave), (entry,))


def test_the_waves_follow_the_policy_when_it_names_them_else_the_histories() -> None:
    records = {"us-1": _record("us-1", "us", 30), "canary": _record("canary", "canary", 10)}
    records["eu-1"] = _record("eu-1", "eu", 20)
    assert wave_order(["canary", "eu", "us"], records) == ["canary", "eu", "us"]
    assert wave_order(["all"], records) == ["canary", "eu", "us"], "a config without the rollout policy"


def test_one_line_per_wave_with_its_phase_cause_and_rollback_as_text() -> None:
    status = RolloutStatus(
        BAD,
        (
            WaveStatus("canary", WavePhase.FAILED, "[bold]unhealthy[/]", back=f"rolled back to {GOOD[:12]}"),
            WaveStatus("eu"),
        ),
    )
    out = io.StringIO()
    print_rollout(status, Console(file=out, width=200))
    assert out.getvalue().splitlines() == [
        f"rollout of {BAD[:12]}:",
        f"  canary  failed: [bold]unhealthy[/] (rolled back to {GOOD[:12]})",
        "  eu      pending",
    ]
    assert rollout_json(status)["waves"][0] == {
        "name": "canary",
        "phase": "failed",
        "cause": "[bold]unhealthy[/]",
        "hold": "",
        "back": f"rolled back to {GOOD[:12]}",
        "summary": f"failed: [bold]unhealthy[/] (rolled back to {GOOD[:12]})",
    }
    empty = io.StringIO()
    print_rollout(RolloutStatus(), Console(file=empty))
    assert empty.getvalue() == ""
