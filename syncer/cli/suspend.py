"""``syncer suspend`` and ``syncer resume``: stop every change syncer makes to clusters, and let it go on.

A suspension is recorded in each cluster itself, beside its sync state (its own ConfigMap key and
field manager, so the agent's state writes keep it), with who, when and why. Every replica's next
pass, and a pass already running at its next write to the cluster, sees it: a suspended cluster gets
no apply, prune, drift repair or rollback, and the waves that would change it wait with the reason.
It works with the agent down, directly against the clusters, like the agent. ``syncer resume`` ends
a pin of ``syncer rollback`` as well.
"""

from __future__ import annotations

import getpass
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import click

from syncer.cli.person_text import REQUIRED_REASON, person_options
from syncer.config.settings import AGENT_NAMESPACE
from syncer.domain.sync_state import Pin, Suspension

if TYPE_CHECKING:
    from syncer.config import AgentConfig
    from syncer.kube import KubeApi


def _names(config_path: Path, which: tuple[tuple[str, ...], bool]) -> tuple[AgentConfig, list[str]]:
    """The agent config and the clusters ``which`` names (the clusters given, or every one of the
    config with ``--all``)."""
    from syncer.config import load_agent_config
    from syncer.errors import SyncerError

    clusters, every = which
    if bool(clusters) == every:
        raise SyncerError("name the clusters with --cluster, or give --all")
    config = load_agent_config(config_path)
    names = sorted(config.clusters) if every else list(dict.fromkeys(clusters))
    if not names:
        raise SyncerError("--all: the agent config lists no clusters under clusters:")
    return config, names


def on_clusters(
    config_path: Path,
    which: tuple[tuple[str, ...], bool],
    kubeconfig: str,
    act: Callable[[str, KubeApi], None],
) -> list[str]:
    """Call ``act`` with each cluster ``which`` names and a client of it (directly, through the
    kubeconfigs, like the agent); returns the clusters."""
    from syncer.config import ClusterAccess
    from syncer.kube import ClusterClient

    config, names = _names(config_path, which)
    for name in names:
        access = config.clusters.get(name, ClusterAccess(context=name))
        client = ClusterClient.from_kubeconfig(str(access.kubeconfig or kubeconfig), access.context, name)
        try:
            act(name, client)
        finally:
            client.close()
    return names


def _record(
    config_path: Path, which: tuple[tuple[str, ...], bool], where: tuple[str, str], suspension: Suspension
) -> list[str]:
    """Record ``suspension`` (an empty one: its end, and the end of any pin) in each cluster
    ``which`` names; ``where`` is the kubeconfig and the state namespace. Returns the clusters."""
    from syncer.status.acts import PersonActs

    kubeconfig, state_namespace = where

    def act(_: str, client: KubeApi) -> None:
        acts = PersonActs(client, state_namespace)
        acts.record_suspension(suspension)
        if not suspension.active:
            acts.record_pin(Pin())

    return on_clusters(config_path, which, kubeconfig, act)


def _common(func: click.decorators.FC) -> click.decorators.FC:
    options = [
        click.option(
            "--config",
            "config_path",
            required=True,
            type=click.Path(path_type=Path, dir_okay=False, exists=True),
        ),
        click.option("--cluster", "clusters", multiple=True, help="A cluster (repeat for more)."),
        click.option("--all", "every", is_flag=True, help="Every cluster of the agent config."),
        click.option("--kubeconfig", default="", envvar="KUBECONFIG"),
        click.option("--state-namespace", default=AGENT_NAMESPACE, show_default=True),
    ]
    for option in reversed(options):
        func = option(func)
    return func


@click.command("suspend")
@_common
@person_options(REQUIRED_REASON)
def suspend(
    *,
    config_path: Path,
    clusters: tuple[str, ...],
    every: bool,
    kubeconfig: str,
    state_namespace: str,
    reason: str,
    by: str,
) -> None:
    """Stop every change syncer makes to clusters until `syncer resume` (an incident, a freeze).

    No replica applies, prunes, repairs drift on or rolls back a suspended cluster; waves that would
    change it wait with the reason. Exit 0 recorded, 2 error.
    """
    from syncer.errors import SyncerError

    try:
        if not reason.strip():
            raise SyncerError("--reason is required: say why the clusters are suspended")
        who = by.strip() or getpass.getuser()
        suspension = Suspension(reason.strip(), who, time.time())
        names = _record(config_path, (clusters, every), (kubeconfig, state_namespace), suspension)
    except (SyncerError, ValueError, OSError) as err:
        click.secho(f"error: {err}", fg="red", err=True)
        raise SystemExit(2) from None
    for name in names:
        click.echo(f"{name}: suspended by {who}: {reason.strip()}")


@click.command("resume")
@_common
@person_options("Why (recorded, shown by `syncer status` and told in the resumed notification).")
def resume(
    *,
    config_path: Path,
    clusters: tuple[str, ...],
    every: bool,
    kubeconfig: str,
    state_namespace: str,
    reason: str,
    by: str,
) -> None:
    """Let syncer change suspended clusters again: the next pass carries on where they were left.

    It lifts a pin of `syncer rollback` too: the clusters follow the revision in force again. Who
    resumed, when and why are recorded and told in the `resumed` notification. Exit 0 recorded,
    2 error.
    """
    from syncer.errors import SyncerError

    who = by or getpass.getuser()
    try:
        ended = Suspension(by=who, at=time.time(), resumed=reason)
        names = _record(config_path, (clusters, every), (kubeconfig, state_namespace), ended)
    except (SyncerError, ValueError, OSError) as err:
        click.secho(f"error: {err}", fg="red", err=True)
        raise SystemExit(2) from None
    for name in names:
        click.echo(f"{name}: resumed by {who}" + (f": {reason}" if reason else ""))
