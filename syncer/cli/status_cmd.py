"""``syncer status``: the fleet's sync state as the clusters record it, and which replica owns each
cluster when replicas shard the fleet."""

from __future__ import annotations

import json
import time
from dataclasses import asdict
from datetime import datetime
from pathlib import Path
from typing import Any

import click
from rich.console import Console

from syncer.cli.agent_cmds import _load
from syncer.cli.status_rollout import print_rollout, rollout_json, rollout_of, standing_json
from syncer.cli.tables import Column, console_for, fit_table, markup_safe
from syncer.config.settings import AGENT_NAMESPACE, WINDOW_STALE_AFTER
from syncer.domain.analysis import AnalysisRecord
from syncer.domain.gates import Abort, AwaitingPromotion
from syncer.domain.rollout_records import ClusterRecord
from syncer.domain.sync_state import Pin, Suspension
from syncer.domain.window_record import shown
from syncer.errors import NotFound, SyncerError
from syncer.kube import ClusterClient
from syncer.leader.election import LEASE_API, LeaseRecord
from syncer.leader.shards import OWNER_LEASE
from syncer.status.history import history_of
from syncer.status.state_store import StateStore


def _owner(client: ClusterClient, namespace: str) -> str:
    """The replica holding the cluster's owner Lease (sharded replicas), "" when none does; a Lease
    not renewed within its duration is shown as such."""
    try:
        lease = client.get(LEASE_API, "Lease", OWNER_LEASE, namespace)
    except NotFound:
        return ""
    record = LeaseRecord.from_lease(lease)
    if not record.holder:
        return ""
    renewed = _lease_time(record.renew_time)
    if renewed is not None and time.time() - renewed > max(record.duration, 1):
        return f"{record.holder} (expired)"
    return record.holder


def _lease_time(stamp: str) -> float | None:
    try:
        return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


@click.command()
@click.option(
    "--config", "config_path", required=True, type=click.Path(path_type=Path, dir_okay=False, exists=True)
)
@click.option("--kubeconfig", default="", envvar="KUBECONFIG")
@click.option("--state-namespace", default=AGENT_NAMESPACE, show_default=True)
@click.option("--cluster", "only", multiple=True, metavar="NAME", help="Only this cluster (repeatable).")
@click.option("-o", "--output", type=click.Choice(["table", "json"]), default="table", show_default=True)
def status(
    config_path: Path, kubeconfig: str, state_namespace: str, only: tuple[str, ...], output: str
) -> None:
    """Each cluster's sync state: owner, wave, applied revision, health, last good revision, last error.

    The owner is the replica holding the cluster's owner Lease when replicas shard the fleet."""
    config = _load(config_path, kubeconfig=kubeconfig)
    rows: list[dict[str, Any]] = []
    records: dict[str, ClusterRecord] = {}
    unknown = sorted(set(only) - set(config.clusters))
    if unknown:
        known = ", ".join(sorted(config.clusters))
        raise click.BadParameter(
            f"{', '.join(unknown)} not in the agent config (clusters: {known})", param_hint="--cluster"
        )
    for name, access in sorted(config.clusters.items()):
        if only and name not in only:
            continue
        row: dict[str, Any] = {"cluster": name}
        try:
            client = ClusterClient.from_kubeconfig(str(access.kubeconfig or kubeconfig), access.context, name)
            try:
                loaded = StateStore(client, state_namespace).load()
                owner = _owner(client, state_namespace)
            finally:
                client.close()
            state = loaded.state
            window = shown(state, time.time(), WINDOW_STALE_AFTER)
            try:
                records[name] = ClusterRecord(state, history_of(loaded.configmap or {}, name))
            except SyncerError:
                records[name] = ClusterRecord(state)
            row.update(
                owner=owner,
                wave=state.wave,
                revision=state.revision,
                phase=str(state.phase),
                health=state.health,
                lastGood=state.last_good,
                lastError=state.last_error or loaded.problem or state.unknown_record.describe(),
                unknownRecord=state.unknown_record.describe(),
                traceId=state.trace_id,
                **({"traceUrl": config.tracing.url(state.trace_id)} if config.tracing.url_template else {}),
                badRevisions=list(state.bad_revisions),
                failures=[
                    {"revision": f.revision, "cause": str(f.cause), "reason": f.reason, "at": f.at}
                    for f in state.failures
                ],
                degradedBefore=state.degraded_before,
                retry=(
                    {
                        "revision": state.retry.revision,
                        "by": state.retry.by,
                        "reason": state.retry.reason,
                        "at": state.retry.at,
                    }
                    if state.retry.at
                    else None
                ),
                updatedAt=state.updated_at,
                analysis=_record_json(state.analysis),
                background=_record_json(state.background),
                window=window.text,
                windowStale=window.stale,
                windowAt=state.window_at,
                windowOverride=_override_text(state.window_override, state.window_override_until),
                suspended=_active(state.suspension),
                awaiting=_active(state.awaiting),
                aborted=_active(state.abort),
                pinned=_active(state.pin),
            )
        except SyncerError as err:
            row.update(error=str(err))
        rows.append(row)
    rollout = rollout_of([w.name for w in config.rollout.waves], records)
    for row in rows:
        if row["cluster"] in records:
            row["rollout"] = standing_json(rollout, records[row["cluster"]])
    if output == "json":
        document = {"apiVersion": "syncer.dev/status/v1", "rollout": rollout_json(rollout), "clusters": rows}
        click.echo(json.dumps(document, indent=2))
        return
    console = console_for()
    render_status(rows, console)
    print_rollout(rollout, console)


# The table's columns in the order shown. The cluster, what keeps it from changing and its last error
# stay at any width; the owner, the last good revision, then the phase and the wave go first when the
# terminal is narrow.
_COLUMNS = (
    Column("cluster", priority=0),
    Column("wave", priority=2),
    Column("revision", priority=1),
    Column("phase", priority=2),
    Column("health", priority=1),
    Column("window", priority=0, fold=True),
    Column("analysis", priority=1, fold=True),
    Column("last error", priority=0, fold=True),
    Column("last good", priority=3),
    Column("owner", priority=4),
)


def render_status(rows: list[dict[str, Any]], console: Console) -> None:
    """The fleet's state as a table that fits ``console``'s width (columns dropped by priority,
    never cut to nothing; the caption names what was left out)."""
    cells = [
        [
            row["cluster"],
            row.get("wave", ""),
            row.get("revision", "")[:12],
            row.get("phase", ""),
            row.get("health", ""),
            "; ".join(
                part
                for part in (
                    _suspended_text(row),
                    _gate_text(row),
                    row.get("window", ""),
                    row.get("windowOverride", ""),
                )
                if part
            ),
            "; ".join(
                filter(
                    None,
                    [
                        (row.get("analysis") or {}).get("summary", ""),
                        ("background: " + bg["summary"]) if (bg := row.get("background")) else "",
                    ],
                )
            ),
            row.get("lastError") or row.get("error", ""),
            row.get("lastGood", "")[:12],
            row.get("owner", ""),
        ]
        for row in rows
    ]
    console.print(fit_table(_COLUMNS, cells, console.width, title="fleet sync state").table)
    for gate in sorted(
        {(r["awaiting"]["wave"], r["awaiting"]["revision"]) for r in rows if r.get("awaiting")}
    ):
        console.print(
            f"waiting for promote of {markup_safe(gate[1][:12])} at wave {markup_safe(gate[0])}",
            highlight=False,
        )


def _active(record: Suspension | AwaitingPromotion | Abort | Pin) -> dict[str, Any] | None:
    """A person's act (or the agent's wait) as ``-o json`` shows it: its fields, or null when none
    is in force."""
    return asdict(record) if record.active else None


def _suspended_text(row: dict[str, Any]) -> str:
    """A suspension and a pin as the table shows them, in the window column (they say why it may not
    change)."""
    suspended, pinned = row.get("suspended"), row.get("pinned")
    parts = [f"SUSPENDED by {suspended['by']}: {suspended['reason']}"] if suspended else []
    if pinned:
        parts.append(f"PINNED to {pinned['revision'][:12]} by {pinned['by']}: {pinned['reason']}")
    return "; ".join(parts)


def _gate_text(row: dict[str, Any]) -> str:
    """A manual gate the cluster's wave waits at, and an abort, as the table shows them."""
    parts = []
    awaiting = row.get("awaiting")
    if awaiting:
        parts.append(f"waiting for promote of {awaiting['revision'][:12]} at wave {awaiting['wave']}")
    aborted = row.get("aborted")
    if aborted:
        parts.append(f"ABORTED {aborted['revision'][:12]} by {aborted['by']}: {aborted['reason']}")
    return "; ".join(parts)


def _override_text(reason: str, until: float) -> str:
    """A window override as ``syncer status`` shows it (empty when none is in force)."""
    if not reason or until <= time.time():
        return ""
    return f"overridden until {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime(until))}: {reason}"


def _record_json(record: AnalysisRecord) -> dict[str, Any] | None:
    """An analysis record's counts as ``-o json`` gives them (None: nothing measured)."""
    if not record.metrics:
        return None
    return {
        "revision": record.revision,
        "started": record.started,
        "metrics": [asdict(c) for c in record.metrics],
        "summary": record.summary(),
    }
