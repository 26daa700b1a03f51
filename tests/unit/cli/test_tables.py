"""Tables fit the terminal: whole columns dropped by priority, never columns cut to nothing."""

from __future__ import annotations

from typing import Any

from rich.console import Console

from syncer.cli.status_cmd import render_status
from syncer.cli.tables import Column, fit_table


def _rendered(table: Any, width: int) -> list[str]:
    console = Console(width=width, record=True, color_system=None)
    console.print(table)
    return console.export_text().splitlines()


def _row(name: str, **extra: Any) -> dict[str, Any]:
    row: dict[str, Any] = {
        "cluster": name,
        "owner": "syncer-agent-7f9c6d5b8-xk2lp",
        "wave": "canary",
        "revision": "4f1c2e9a7b3d5e6f",
        "phase": "Healthy",
        "health": "Ready",
        "lastGood": "0a1b2c3d4e5f6a7b",
        "window": "",
        "lastError": "",
    }
    row.update(extra)
    return row


def test_status_at_80_columns_keeps_whole_columns_and_names_the_ones_left_out() -> None:
    rows = [
        _row("eu-west-prod-cache-01", lastError="apply RedisCluster/cache/sessions: conflict with ops-tool"),
        _row("us-east-prod-cache-02", window="deny nightly-freeze until 06:00 UTC"),
    ]
    lines = _rendered_status(rows, 80)
    assert max(len(line) for line in lines) <= 80
    text = "\n".join(lines)
    # Every value a kept column shows is there whole; no ellipsis, no zero-width column.
    for kept in ("eu-west-prod-cache-01", "us-east-prod-cache-02", "4f1c2e9a7b3d", "Ready", "nightly"):
        assert kept in text
    for cut in ("…", "┳┳", "╇╇"):
        assert cut not in text
    caption = next(line for line in lines if "not shown at 80 columns" in line)
    for left_out in ("owner", "last good", "phase"):
        assert left_out in caption
    assert "ops-tool" in text  # the error folds over lines; it stays


def test_status_on_a_wide_terminal_shows_every_column_that_has_a_value() -> None:
    rows = [_row("a", lastError="boom"), _row("b")]
    text = "\n".join(_rendered_status(rows, 200))
    for header in ("cluster", "owner", "wave", "revision", "phase", "health", "last good", "last error"):
        assert header in text
    assert "not shown" not in text
    assert "window" not in text  # nobody has one: the column is not drawn empty


def test_a_column_nobody_fills_is_not_drawn_and_not_reported_as_dropped() -> None:
    rows = [_row("a", owner=""), _row("b", owner="")]
    text = "\n".join(_rendered_status(rows, 200))
    assert "owner" not in text


def test_columns_of_priority_zero_stay_even_when_nothing_fits() -> None:
    columns = [
        Column("cluster", priority=0),
        Column("detail", priority=1),
        Column("note", priority=0, fold=True),
    ]
    rows = [["a-very-long-cluster-name", "x" * 30, "a long note that folds over lines " * 2]]
    fitted = fit_table(columns, rows, 30)
    assert fitted.dropped == ("detail",)
    text = "\n".join(_rendered(fitted.table, 30))
    table_part = text.split("not shown")[0]
    for kept in ("cluster", "a-very-long", "note", "folds"):
        assert kept in table_part
    assert "detail" not in table_part


def test_the_lowest_priority_goes_first_and_the_rightmost_of_equals() -> None:
    columns = [
        Column("k", priority=0),
        Column("a", priority=1),
        Column("b", priority=2),
        Column("c", priority=2),
    ]
    rows = [["key", "a" * 10, "b" * 10, "c" * 10]]
    assert fit_table(columns, rows, 41).dropped == ("c",)
    assert fit_table(columns, rows, 28).dropped == ("c", "b")
    assert fit_table(columns, rows, 200).dropped == ()


def _rendered_status(rows: list[dict[str, Any]], width: int) -> list[str]:
    console = Console(width=width, record=True, color_system=None)
    render_status(rows, console)
    return console.export_text().splitlines()
