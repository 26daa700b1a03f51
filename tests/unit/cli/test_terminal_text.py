"""Text from git, a person or a cluster's record is data in a terminal: no markup read, no control
character written, bounded; and a reason or a name a person types is one bounded line."""

from __future__ import annotations

import click
import pytest
from click.testing import CliRunner
from rich.console import Console

from syncer.cli.person_text import MAX_PERSON_TEXT, person_text
from syncer.cli.tables import MAX_CELL, Column, fit_table, markup_safe, terminal_text

HOSTILE = "[/] [link=https://evil.example]grafana[/link] \x1b]8;;https://evil.example\x07x\nforged: line"


def _printed(*renderables: object) -> str:
    console = Console(width=200, record=True, force_terminal=True, color_system="truecolor")
    for item in renderables:
        console.print(item, highlight=False)
    return console.export_text(styles=False)


def test_a_table_cell_is_shown_as_typed_never_as_markup_or_a_control_sequence() -> None:
    table = fit_table([Column("cluster", 0), Column("reason", 0, fold=True)], [["eu-1", HOSTILE]], 200).table
    shown = _printed(table)
    assert "[/] [link=https://evil.example]grafana[/link]" in shown
    assert "\x1b" not in shown
    assert "\\x1b]8;;https://evil.example\\x07x\\nforged: line" in shown


def test_a_message_printed_with_markup_keeps_its_text() -> None:
    shown = _printed(f"[red]error:[/red] {markup_safe(HOSTILE)}")
    assert shown.startswith("error: [/] [link=https://evil.example]grafana[/link]")
    assert "\n" not in shown.rstrip("\n")


def test_a_long_value_is_cut_saying_so() -> None:
    assert len(terminal_text("x" * 100_000)) == MAX_CELL
    assert terminal_text("x" * 100_000).endswith("…")


@pytest.mark.parametrize(
    ("given", "problem"),
    [
        ("line one\nforged: line two", "holds '\\n'"),
        ("a" * (MAX_PERSON_TEXT + 1), f"keep it to {MAX_PERSON_TEXT}"),
        ("right\u202eto left", "holds '\\u202e'"),
    ],
)
def test_a_persons_reason_is_one_bounded_visible_line_or_refused(given: str, problem: str) -> None:
    @click.command()
    @click.option("--reason", default="", callback=person_text)
    def cmd(reason: str) -> None:
        click.echo(f"recorded: {reason}")

    refused = CliRunner().invoke(cmd, ["--reason", given])
    assert refused.exit_code == 2
    assert problem in refused.output
    assert "recorded" not in refused.output
    fine = CliRunner().invoke(cmd, ["--reason", "  incident 7  "])
    assert fine.output == "recorded: incident 7\n"


def test_every_command_of_a_persons_act_takes_reason_and_by_as_one_bounded_line() -> None:
    from syncer.cli.gates import abort, promote
    from syncer.cli.retry import retry
    from syncer.cli.rollback import rollback
    from syncer.cli.suspend import resume, suspend
    from syncer.cli.windows import override_window

    for command in (suspend, resume, rollback, retry, promote, abort, override_window):
        options = {p.name: p for p in command.params}
        wanted = {"reason", "by"} if command is not override_window else {"reason"}
        for name in wanted:
            assert options[name].callback is person_text, (command.name, name)
