"""The ``syncer`` command line: click commands that call the engine and render results with rich.

Owns: parsing arguments, exit codes and rendering. Must not: hold pipeline logic; each command calls
into the stages or the engine and renders the value it gets back.

Commands are imported only when they run (``syncer --version`` and ``syncer --help`` import click
alone); each command imports what it needs when it is called, the Kubernetes client only when a
cluster is contacted.
"""

from __future__ import annotations

import importlib
import textwrap

import click

from syncer import __version__

COMMANDS: dict[str, tuple[str, str]] = {
    "verify": (
        "syncer.cli.verify:verify",
        "Verify who signed a revision of a fleet repository, commit by commit.",
    ),
    "render": (
        "syncer.cli.render:render",
        "Print the desired objects of each cluster of a fleet repository as YAML.",
    ),
    "diff": (
        "syncer.cli.diff:diff",
        "Show what syncing a revision would create, update, prune or be blocked on, per wave and cluster.",
    ),
    "controller": (
        "syncer.cli.controller:controller",
        "Reconcile RedisCluster objects into StatefulSets, Services, ConfigMaps and PDBs.",
    ),
    "run": (
        "syncer.cli.agent_cmds:run",
        "Run the agent: poll git, verify, roll out in waves, repair drift, serve metrics.",
    ),
    "sync": (
        "syncer.cli.agent_cmds:sync",
        "Take the branch tip through verification and roll it out, showing each wave and cluster.",
    ),
    "status": (
        "syncer.cli.status_cmd:status",
        "Each cluster's sync state: owner, wave, applied revision, health, last good revision, last error.",
    ),
    "override-window": (
        "syncer.cli.windows:override_window",
        "Let one cluster change outside its maintenance windows for a while (an emergency fix).",
    ),
    "retry": (
        "syncer.cli.retry:retry",
        "Try again on one cluster a revision that failed there before (the live state was fixed).",
    ),
    "suspend": (
        "syncer.cli.suspend:suspend",
        "Stop every change syncer makes to clusters until `syncer resume` (an incident, a freeze).",
    ),
    "history": (
        "syncer.cli.history:history",
        "The revisions applied to each cluster: signer, start and end, wave, outcome and who acted.",
    ),
    "rollback": (
        "syncer.cli.rollback:rollback",
        "Pin clusters to a revision applied there before, off newer ones until `syncer resume`.",
    ),
    "resume": (
        "syncer.cli.suspend:resume",
        "Let syncer change suspended clusters again: the next pass carries on where they were left.",
    ),
    "promote": (
        "syncer.cli.gates:promote",
        "Let a wave held at its manual gate (approval: manual) start rolling out the waiting revision.",
    ),
    "abort": (
        "syncer.cli.gates:abort",
        "Stop the revision in flight: its clusters go back, and it is refused until `syncer retry`.",
    ),
}
"""Each command: where it lives, and the one-line help ``syncer --help`` lists without importing it
(a unit test checks it is the command's own)."""


class LazyGroup(click.Group):
    """A group whose commands are imported when they are looked up to run."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        entry = COMMANDS.get(cmd_name)
        if entry is None:
            return None
        module, _, attribute = entry[0].partition(":")
        command = getattr(importlib.import_module(module), attribute)
        if not isinstance(command, click.Command):
            raise TypeError(f"{entry[0]} is not a click command")
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        limit = formatter.width - 6 - max(len(name) for name in COMMANDS)
        rows = [
            (name, textwrap.shorten(short, width=max(limit, 20), placeholder="..."))
            for name, (_, short) in COMMANDS.items()
        ]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="syncer", package_name="syncer")
def cli() -> None:
    """Keep fleets of Redis clusters on Kubernetes in step with a git repository.

    Manifests are pulled from git, their signatures checked against the agent's trust policy,
    diffed three ways against what is live, and rolled out with server-side apply in canary waves.
    """


def main() -> None:
    cli(prog_name="syncer")
