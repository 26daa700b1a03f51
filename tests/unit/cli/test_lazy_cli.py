"""The command line imports a command only when it runs: ``--version`` and ``--help`` stay light."""

from __future__ import annotations

import subprocess
import sys

import click
from click.testing import CliRunner

from syncer.cli import COMMANDS, cli


def test_the_listed_help_of_each_command_is_its_own() -> None:
    ctx = click.Context(cli)
    for name, (_, short) in COMMANDS.items():
        command = cli.get_command(ctx, name)
        assert command is not None
        assert command.get_short_help_str(limit=500) == short, name


def test_help_lists_every_command() -> None:
    result = CliRunner().invoke(cli, ["--help"])
    assert result.exit_code == 0
    for name in COMMANDS:
        assert f"  {name} " in result.output


def _imported_by(*argv: str) -> list[str]:
    """Every module ``syncer ARGV`` had imported when it ended, run in a fresh interpreter."""
    probe = (
        "import sys, runpy\n"
        f"sys.argv = ['syncer', *{argv!r}]\n"
        "try:\n"
        "    runpy.run_module('syncer', run_name='__main__')\n"
        "except SystemExit:\n"
        "    pass\n"
        "print('MODULES', *sorted(sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    return out.rpartition("MODULES ")[2].split()


def test_version_and_help_import_neither_the_commands_nor_the_kubernetes_client() -> None:
    for arg in ("--version", "--help"):
        heavy = [
            m
            for m in _imported_by(arg)
            if m.split(".")[0] in ("kubernetes", "rich", "git", "yaml", "jsonschema")
            or m.startswith(("syncer.cli.", "syncer.engine"))
        ]
        assert heavy == [], (arg, heavy)


def test_an_offline_diff_and_a_render_do_not_import_the_kubernetes_client() -> None:
    for argv in (("render", "--repo", "examples/repo"), ("diff", "--offline", "--repo", "examples/repo")):
        imported = _imported_by(*argv)
        assert "syncer.engine.rendered_fleet" in imported or "syncer.engine.diff" in imported, argv
        assert [m for m in imported if m.split(".")[0] in ("kubernetes", "urllib3")] == [], argv
