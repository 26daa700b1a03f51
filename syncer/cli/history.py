"""``syncer history``: the revisions applied to each cluster, as the clusters themselves record them.

Read from each cluster's sync-state ConfigMap, directly (kubeconfigs, like the agent): it works with
the agent down and after the loss of any cache.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.table import Table
from rich.text import Text

from syncer.cli.tables import terminal_text
from syncer.config.settings import AGENT_NAMESPACE
from syncer.domain.revision_history import HistoryEntry


def _when(stamp: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(stamp)) if stamp else ""


def entry_row(entry: HistoryEntry) -> dict[str, Any]:
    """One entry as ``-o json`` gives it (stable keys)."""
    return {
        "revision": entry.revision,
        "signer": entry.signer,
        "started": entry.started,
        "ended": entry.ended,
        "wave": entry.wave,
        "outcome": str(entry.outcome),
        "reason": entry.reason,
        "by": entry.by,
    }


def read_histories(
    config_path: Path, clusters: tuple[str, ...], where: tuple[str, str]
) -> list[dict[str, Any]]:
    """Each cluster's history (the clusters named, or every one of the config), oldest entry first;
    a cluster that cannot be read, or whose record is unreadable, has ``error`` instead."""
    from syncer.config import ClusterAccess, load_agent_config
    from syncer.errors import SyncerError
    from syncer.kube import ClusterClient
    from syncer.status.history import history_of
    from syncer.status.state_store import StateStore

    config = load_agent_config(config_path)
    names = list(dict.fromkeys(clusters)) if clusters else sorted(config.clusters)
    kubeconfig, state_namespace = where
    rows: list[dict[str, Any]] = []
    for name in names:
        row: dict[str, Any] = {"cluster": name}
        try:
            access = config.clusters.get(name, ClusterAccess(context=name))
            client = ClusterClient.from_kubeconfig(str(access.kubeconfig or kubeconfig), access.context, name)
            try:
                loaded = StateStore(client, state_namespace).load()
            finally:
                client.close()
            row["entries"] = [entry_row(e) for e in history_of(loaded.configmap or {}, name)]
        except SyncerError as err:
            row["error"] = str(err)
        rows.append(row)
    return rows


def _table(rows: list[dict[str, Any]]) -> Table:
    table = Table(title="revisions applied, oldest first", title_justify="left")
    for column in ("cluster", "revision", "signer", "started (UTC)", "ended (UTC)", "wave", "outcome"):
        table.add_column(column, no_wrap=True)
    table.add_column("by", overflow="fold")
    table.add_column("reason", overflow="fold", ratio=1)
    for row in rows:
        for entry in row.get("entries", []):
            cells = (
                row["cluster"],
                entry["revision"][:12],
                entry["signer"],
                _when(entry["started"]),
                _when(entry["ended"]),
                entry["wave"],
                entry["outcome"],
                entry["by"],
                entry["reason"],
            )
            table.add_row(*(Text(terminal_text(str(cell))) for cell in cells))  # data, never markup
    return table


@click.command("history")
@click.option(
    "--config", "config_path", required=True, type=click.Path(path_type=Path, dir_okay=False, exists=True)
)
@click.option("--cluster", "clusters", multiple=True, help="A cluster (repeat for more) [default: all].")
@click.option("--kubeconfig", default="", envvar="KUBECONFIG")
@click.option("--state-namespace", default=AGENT_NAMESPACE, show_default=True)
@click.option("-o", "--output", type=click.Choice(["table", "json"]), default="table", show_default=True)
def history(
    *, config_path: Path, clusters: tuple[str, ...], kubeconfig: str, state_namespace: str, output: str
) -> None:
    """The revisions applied to each cluster: signer, start and end, wave, outcome and who acted.

    Read from the clusters (works with the agent down). Exit 0 shown, 2 when a cluster or its
    record cannot be read (the others are shown).
    """
    from syncer.errors import SyncerError

    try:
        rows = read_histories(config_path, clusters, (kubeconfig, state_namespace))
    except (SyncerError, ValueError, OSError) as err:
        click.secho(f"error: {err}", fg="red", err=True)
        raise SystemExit(2) from None
    if output == "json":
        click.echo(json.dumps({"apiVersion": "syncer.dev/history/v1", "clusters": rows}, indent=2))
    else:
        Console().print(_table(rows))
    for row in rows:
        if "error" in row:
            click.secho(f"error: {row['cluster']}: {row['error']}", fg="red", err=True)
    if any("error" in row for row in rows):
        raise SystemExit(2)
