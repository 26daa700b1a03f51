"""The failure-modes table of docs/agent.md names, for each row, the tests that drill it: each test
named there exists (a renamed or removed test fails here, so a row never points at nothing)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).parents[2]


def _rows() -> list[str]:
    text = (ROOT / "docs" / "agent.md").read_text()
    section = text.split("## Failure modes", 1)[1]
    return [line for line in section.splitlines() if line.startswith("| ") and not line.startswith("| fault")]


def test_every_test_a_failure_mode_row_names_exists() -> None:
    rows = [r for r in _rows() if not r.startswith("| ---")]
    assert len(rows) >= 15
    for row in rows:
        cell = row.rstrip(" |").rsplit(" | ", 1)[1]
        named = re.findall(r"`([\w/]+\.py)(?:::(\w+))?`|`::(\w+)`", cell)
        assert named, row
        files: list[Path] = []
        for path, name, more in named:
            if path:  # a unit test when the row says so, else a test on the real fleet
                kinds = ("unit",) if f"unit `{path}" in cell else ("integration", "unit")
                files = [f for k in kinds if (f := ROOT / "tests" / k / path).is_file()]
                assert files, (path, row)
            test = name or more
            if test:
                assert any(f"def {test}(" in f.read_text() for f in files), (test, row)
