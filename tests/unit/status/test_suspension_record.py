"""A person's suspension and its end as read from the sync-state ConfigMap: ``syncer resume``
records who resumed, when and why, and the pass tells that in the ``resumed`` notice."""

from __future__ import annotations

import json
from dataclasses import asdict

from click.testing import CliRunner

from syncer.cli.suspend import resume
from syncer.domain.sync_state import ClusterSyncState, Suspension
from syncer.status.acts import PIN_KEY, SUSPENSION_KEY, with_acts

AT = 1_764_900_000.0  # 2025-12-05 02:00 UTC


def _read(suspension: Suspension, pin: str = "") -> ClusterSyncState:
    data = {SUSPENSION_KEY: json.dumps(asdict(suspension))}
    if pin:
        data[PIN_KEY] = pin
    return with_acts(ClusterSyncState("eu-1"), {"data": data})


def test_a_resumption_is_read_with_who_when_and_why() -> None:
    state = _read(Suspension(by="ops", at=AT, resumed="incident 42 over"))
    assert not state.suspension.active
    assert state.suspension.describe() == ""
    assert state.suspension.describe_end() == "resumed by ops at 2025-12-05 02:00 UTC: incident 42 over"
    assert (
        _read(Suspension(by="ops", at=AT)).suspension.describe_end()
        == "resumed by ops at 2025-12-05 02:00 UTC"
    )


def test_a_suspension_says_nothing_of_an_end_and_an_old_record_says_resumed() -> None:
    assert _read(Suspension("incident 42", "ops", AT)).suspension.describe_end() == ""
    assert (
        with_acts(
            ClusterSyncState("eu-1"), {"data": {SUSPENSION_KEY: '{"reason": "", "by": "", "at": 0}'}}
        ).suspension.describe_end()
        == "resumed"
    )


def test_an_unreadable_pin_still_holds_a_resumed_cluster() -> None:
    state = _read(Suspension(by="ops", at=AT, resumed="over"), pin="{broken")
    assert state.suspension.active


def test_resume_refuses_a_reason_or_a_name_of_more_than_one_line_before_anything_is_read(
    tmp_path: object,
) -> None:
    runner = CliRunner()
    for option in ("--reason", "--by"):
        done = runner.invoke(resume, ["--config", __file__, "--all", option, "over\n<!channel>"])
        assert done.exit_code == 2, done.output
        assert "give one line of visible text" in done.output
