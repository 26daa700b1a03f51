"""``syncer override-window``: let one cluster change outside its maintenance windows, for a while.

The override is recorded in the cluster itself, beside its sync state (its own ConfigMap key and
field manager, so the agent's state writes keep it): every replica's next pass sees it, and it ends
by itself at its deadline. ``--clear`` ends it at once.
"""

from __future__ import annotations

import time
from pathlib import Path

import click

from syncer.cli.person_text import person_options
from syncer.config.settings import AGENT_NAMESPACE


@click.command("override-window")
@click.option(
    "--config", "config_path", required=True, type=click.Path(path_type=Path, dir_okay=False, exists=True)
)
@click.option("--cluster", required=True, help="The cluster, as the agent config and fleet.yaml name it.")
@person_options("Why (recorded, shown in Events and `syncer status`).", by=False)
@click.option("--for", "duration", default="1h", show_default=True, help="How long the override lasts.")
@click.option("--clear", is_flag=True, help="End the cluster's override now.")
@click.option("--kubeconfig", default="", envvar="KUBECONFIG")
@click.option("--state-namespace", default=AGENT_NAMESPACE, show_default=True)
def override_window(
    *,
    config_path: Path,
    cluster: str,
    reason: str,
    duration: str,
    clear: bool,
    kubeconfig: str,
    state_namespace: str,
) -> None:
    """Let one cluster change outside its maintenance windows for a while (an emergency fix).

    Rollouts and drift repair treat the cluster as inside its window until the override ends; the
    agent reports each use as a MaintenanceWindowOverridden Warning Event. Exit 0 recorded, 2 error.
    """
    from syncer.config import ClusterAccess, load_agent_config
    from syncer.config.loading import check_kubeconfig
    from syncer.domain.durations import format_duration, parse_duration
    from syncer.errors import SyncerError
    from syncer.kube import ClusterClient
    from syncer.status.acts import PersonActs

    try:
        if not clear and not reason.strip():
            raise SyncerError("--reason is required: say why the window is overridden (or give --clear)")
        seconds = parse_duration(duration)
        config = load_agent_config(config_path)
        access = config.clusters.get(cluster, ClusterAccess(context=cluster))
        if access.kubeconfig is None:
            check_kubeconfig(kubeconfig)
        client = ClusterClient.from_kubeconfig(str(access.kubeconfig or kubeconfig), access.context, cluster)
        try:
            until = time.time() + seconds
            PersonActs(client, state_namespace).record_window_override("" if clear else reason.strip(), until)
        finally:
            client.close()
    except (SyncerError, ValueError) as err:
        click.secho(f"error: {err}", fg="red", err=True)
        raise SystemExit(2) from None
    if clear:
        click.echo(f"{cluster}: window override cleared")
    else:
        ends = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(until))
        click.echo(
            f"{cluster}: may change outside its maintenance windows until {ends} ({format_duration(seconds)})"
        )
