"""``syncer promote`` and ``syncer abort``: a person's say at a rollout's manual gates.

Both read the clusters' recorded states and write into the clusters themselves, beside their sync
states (``syncer.status.acts``: their own ConfigMap keys and field managers), with who, when and why,
so that they work with the agent down, survive restarts and are seen by every replica's next pass,
sharded ones included. A promotion is written into the clusters of the waiting wave; an abort into
the clusters that have the revision in flight (applied, or waiting at a manual gate).
"""

from __future__ import annotations

import getpass
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import click

from syncer.cli.person_text import REQUIRED_REASON, person_options
from syncer.config.settings import AGENT_NAMESPACE

if TYPE_CHECKING:
    from syncer.domain.sync_state import ClusterSyncState
    from syncer.kube import KubeApi

Where = tuple[Path, str, str]
"""The agent config, the kubeconfig and the state namespace."""


@contextmanager
def _fleet(where: Where) -> Iterator[tuple[dict[str, KubeApi], dict[str, ClusterSyncState]]]:
    """A client and the recorded state of every cluster of the agent config (a cluster that cannot
    be read is named on stderr and left out)."""
    from syncer.config import load_agent_config
    from syncer.errors import KubeError, SyncerError
    from syncer.kube import ClusterClient
    from syncer.status.state_store import StateStore

    config_path, kubeconfig, namespace = where
    config = load_agent_config(config_path)
    if not config.clusters:
        raise SyncerError(f"{config_path}: the agent config lists no clusters under clusters:")
    clients: dict[str, KubeApi] = {}
    states: dict[str, ClusterSyncState] = {}
    with ExitStack() as stack:
        for name, access in sorted(config.clusters.items()):
            client = ClusterClient.from_kubeconfig(str(access.kubeconfig or kubeconfig), access.context, name)
            stack.callback(client.close)
            try:
                states[name] = StateStore(client, namespace).load().state
            except KubeError as err:
                click.secho(f"warning: {name}: cannot read its sync state: {err}", fg="yellow", err=True)
                continue
            clients[name] = client
        yield clients, states


def _common(func: click.decorators.FC) -> click.decorators.FC:
    options = [
        click.option(
            "--config",
            "config_path",
            required=True,
            type=click.Path(path_type=Path, dir_okay=False, exists=True),
        ),
        click.option("--kubeconfig", default="", envvar="KUBECONFIG"),
        click.option("--state-namespace", default=AGENT_NAMESPACE, show_default=True),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def _fail(err: Exception) -> None:
    from syncer.errors import GateRefused, RevisionNotNamed

    click.secho(f"error: {err}", fg="red", err=True)
    raise SystemExit(1 if isinstance(err, GateRefused | RevisionNotNamed) else 2) from None


@click.command("promote")
@_common
@click.option("--wave", required=True, help="The wave waiting at its manual gate.")
@click.option("--revision", required=True, help="The revision it waits for (an id or a prefix of 7 or more).")
@person_options()
def promote(
    *,
    config_path: Path,
    by: str,
    kubeconfig: str,
    state_namespace: str,
    wave: str,
    revision: str,
    reason: str,
) -> None:
    """Let a wave held at its manual gate (approval: manual) start rolling out the waiting revision.

    Refused unless --revision names the revision the wave waits for. Where a two-person rule of the
    trust policy selects clusters of the wave, the wave starts once that many distinct people
    promoted it. Exit 0 recorded, 1 refused, 2 error.
    """
    from syncer.domain.gates import PromotedBy
    from syncer.errors import SyncerError
    from syncer.rollout.promotion import promotion_target, with_promoter
    from syncer.status.acts import PersonActs

    who = by.strip() or getpass.getuser()
    try:
        with _fleet((config_path, kubeconfig, state_namespace)) as (clients, states):
            full, clusters = promotion_target(states, wave, revision)
            promoter = PromotedBy(who, time.time(), reason.strip())
            for name in clusters:
                promotion = with_promoter(states[name].promotion, wave, full, promoter)
                PersonActs(clients[name], state_namespace).record_promotion(promotion)
                people = ", ".join(promotion.people)
                click.echo(f"{name}: {full[:12]} promoted at wave {wave} by {people}")
    except (SyncerError, ValueError, OSError) as err:
        _fail(err)


@click.command("abort")
@_common
@click.option("--revision", default="", help="The revision in flight [default: the only one in flight].")
@person_options(REQUIRED_REASON)
def abort(
    *, config_path: Path, by: str, kubeconfig: str, state_namespace: str, revision: str, reason: str
) -> None:
    """Stop the revision in flight: its clusters go back, and it is refused until `syncer retry`.

    Every cluster on the revision (waves that passed included) goes back to the revision it ran
    healthy before it; no later wave takes it, and a wave held at its manual gate does not start.
    Exit 0 recorded, 1 refused, 2 error.
    """
    from syncer.domain.gates import Abort
    from syncer.errors import SyncerError
    from syncer.rollout.promotion import abort_target
    from syncer.status.acts import PersonActs

    who = by.strip() or getpass.getuser()
    try:
        if not reason.strip():
            raise SyncerError("--reason is required: say why the revision is aborted")
        with _fleet((config_path, kubeconfig, state_namespace)) as (clients, states):
            full, clusters = abort_target(states, revision)
            record = Abort(full, who, reason.strip(), time.time())
            for name in clusters:
                PersonActs(clients[name], state_namespace).record_abort(record)
                click.echo(f"{name}: {full[:12]} aborted by {who}: {reason.strip()}")
    except (SyncerError, ValueError, OSError) as err:
        _fail(err)
