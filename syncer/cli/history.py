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

from syncer.cli.status_rollout import print_rollout, rollout_json, rollout_of
from syncer.cli.tables import Column, console_for, fit_table
from syncer.config.settings import AGENT_NAMESPACE
from syncer.domain.revision_history import HistoryEntry
from syncer.domain.rollout_records import ClusterRecord, going_back
from syncer.domain.rollout_status import RolloutStatus


def _when(stamp: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(stamp)) if stamp else ""


def entry_row(entry: HistoryEntry, back: bool = False) -> dict[str, Any]:
    """One entry as ``-o json`` gives it (stable keys); ``goingBack``: the apply put the cluster back
    on a revision it ran before (a rollback or a person's pin), not a revision rolling out."""
    return {
        "revision": entry.revision,
        "signer": entry.signer,
        "started": entry.started,
        "ended": entry.ended,
        "wave": entry.wave,
        "outcome": str(entry.outcome),
        "reason": entry.reason,
        "by": entry.by,
        "goingBack": back,
    }


def read_histories(
    config_path: Path, clusters: tuple[str, ...], where: tuple[str, str]
) -> tuple[list[dict[str, Any]], RolloutStatus]:
    """Each cluster's history (the clusters named, or every one of the config), oldest entry first,
    and the rollout's status rebuilt from their records; a cluster that cannot be read, or whose
    record is unreadable, has ``error`` instead."""
    from syncer.config import ClusterAccess, load_agent_config
    from syncer.errors import SyncerError
    from syncer.kube import ClusterClient
    from syncer.status.history import history_of
    from syncer.status.state_store import StateStore

    config = load_agent_config(config_path)
    names = list(dict.fromkeys(clusters)) if clusters else sorted(config.clusters)
    kubeconfig, state_namespace = where
    rows: list[dict[str, Any]] = []
    records: dict[str, ClusterRecord] = {}
    for name in names:
        row: dict[str, Any] = {"cluster": name}
        try:
            access = config.clusters.get(name, ClusterAccess(context=name))
            client = ClusterClient.from_kubeconfig(str(access.kubeconfig or kubeconfig), access.context, name)
            try:
                loaded = StateStore(client, state_namespace).load()
            finally:
                client.close()
            entries = history_of(loaded.configmap or {}, name)
            records[name] = ClusterRecord(loaded.state, entries)
            row["entries"] = [entry_row(e, going_back(entries, i)) for i, e in enumerate(entries)]
        except SyncerError as err:
            row["error"] = str(err)
        rows.append(row)
    return rows, rollout_of([w.name for w in config.rollout.waves], records)


def _outcome(entry: dict[str, Any]) -> str:
    """The outcome, saying so when the apply was a going back (``healthy (going back)``)."""
    outcome = str(entry["outcome"])
    return f"{outcome} (going back)" if entry["goingBack"] and outcome != "rolled-back" else outcome


_COLUMNS = (
    Column("cluster", priority=0),
    Column("revision", priority=0),
    Column("signer", priority=3),
    Column("started (UTC)", priority=4),
    Column("ended (UTC)", priority=2),
    Column("wave", priority=3),
    Column("outcome", priority=0),
    Column("by", priority=1, fold=True),
    Column("reason", priority=0, fold=True, wanted=40),
)


def render_history(rows: list[dict[str, Any]], console: Console) -> None:
    """Each cluster's entries as a table that fits ``console``'s width, as ``syncer status`` does:
    whole columns dropped by priority (the caption names them), the reason folding over lines,
    never a column cut to nothing."""
    cells = [
        [
            row["cluster"],
            entry["revision"][:12],
            entry["signer"],
            _when(entry["started"]),
            _when(entry["ended"]),
            entry["wave"],
            _outcome(entry),
            entry["by"],
            entry["reason"],
        ]
        for row in rows
        for entry in row.get("entries", [])
    ]
    fitted = fit_table(_COLUMNS, cells, console.width, title="revisions applied, oldest first")
    console.print(fitted.table)


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
        rows, rollout = read_histories(config_path, clusters, (kubeconfig, state_namespace))
    except (SyncerError, ValueError, OSError) as err:
        click.secho(f"error: {err}", fg="red", err=True)
        raise SystemExit(2) from None
    if output == "json":
        document = {"apiVersion": "syncer.dev/history/v1", "rollout": rollout_json(rollout), "clusters": rows}
        click.echo(json.dumps(document, indent=2))
    else:
        console = console_for()
        render_history(rows, console)
        print_rollout(rollout, console)
    for row in rows:
        if "error" in row:
            click.secho(f"error: {row['cluster']}: {row['error']}", fg="red", err=True)
    if any("error" in row for row in rows):
        raise SystemExit(2)
