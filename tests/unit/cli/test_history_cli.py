"""``syncer history`` fits the terminal as ``syncer status`` does: whole columns dropped with a
caption naming them, the reason folding over lines, never a column cut to nothing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from syncer.cli import history as history_cmd
from syncer.cli.status_rollout import rollout_of
from syncer.domain.rollout_status import RolloutStatus

REASON = "canary error rate above 2% for five minutes after the sessions cache upgrade, rolled back"


def _rows(path: Path, *args: Any) -> tuple[list[dict[str, Any]], RolloutStatus]:
    entry = {
        "revision": "4f1c2e9a7b3d5e6f7a8b",
        "signer": "ops-release-key",
        "started": 1_764_900_000.0,
        "ended": 1_764_900_300.0,
        "wave": "canary",
        "outcome": "rolled-back",
        "reason": REASON,
        "by": "alice@example.org",
    }
    rows = [
        {"cluster": "eu-west-prod-cache-01", "entries": [{**entry, "goingBack": False}]},
        {
            "cluster": "us-east-prod-cache-02",
            "entries": [{**entry, "outcome": "healthy", "reason": "", "goingBack": False}],
        },
    ]
    return rows, rollout_of(["canary"], {})


def _history(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, columns: int) -> list[str]:
    monkeypatch.setattr(history_cmd, "read_histories", _rows)
    config = tmp_path / "agent.yaml"
    config.write_text("clusters: {}\n")
    done = CliRunner().invoke(
        history_cmd.history, ["--config", str(config)], env={"COLUMNS": str(columns)}, catch_exceptions=False
    )
    assert done.exit_code == 0, done.output
    return done.output.splitlines()


def test_history_at_80_columns_keeps_whole_columns_and_names_the_ones_left_out(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    lines = _history(monkeypatch, tmp_path, 80)
    assert max(len(line) for line in lines) <= 80
    text = "\n".join(lines)
    for whole in ("eu-west-prod-cache-01", "us-east-prod-cache-02", "4f1c2e9a7b3d", "rolled-back", "healthy"):
        assert whole in text
    for cut in ("…", "┳┳", "╇╇", "││"):
        assert cut not in text
    caption = next(line for line in lines if "not shown at 80 columns" in line)
    assert "started (UTC)" in caption
    # The reason folds over lines, every word of it there.
    for word in REASON.split():
        assert word in text


def test_history_at_120_columns_gives_the_reason_a_useful_width(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    lines = _history(monkeypatch, tmp_path, 120)
    assert max(len(line) for line in lines) <= 120
    header = next(line for line in lines if "reason" in line and "cluster" in line)
    reason_width = len(header.split("┃")[-2])
    assert reason_width >= 30, header
    assert "…" not in "\n".join(lines)
