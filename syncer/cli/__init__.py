"""The ``syncer`` command line: click commands that call the engine and render results with rich.

Owns: parsing arguments, exit codes and rendering. Must not: hold pipeline logic; each command calls
into the stages or the engine and renders the value it gets back.
"""

from __future__ import annotations

import click

from syncer import __version__


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="syncer")
def cli() -> None:
    """Keep fleets of Redis clusters on Kubernetes in step with a git repository.

    Manifests are pulled from git, their signatures checked against the agent's trust policy,
    diffed three ways against what is live, and rolled out with server-side apply in canary waves.
    """


def main() -> None:
    cli(prog_name="syncer")


from syncer.cli.verify import verify  # noqa: E402

cli.add_command(verify)


from syncer.cli.render import render  # noqa: E402

cli.add_command(render)


from syncer.cli.diff import diff  # noqa: E402

cli.add_command(diff)


from syncer.cli.controller import controller  # noqa: E402

cli.add_command(controller)


from syncer.cli.agent_cmds import run, status, sync  # noqa: E402

cli.add_command(run)
cli.add_command(sync)
cli.add_command(status)
