"""``syncer rollback``: keep clusters on a revision their own history holds as verified and applied.

The pin is a person's act recorded in each cluster (``syncer.status.acts``), with who, when and why:
every replica's next pass leaves the cluster out of newer revisions and rolls the pinned one out to
it through the same pass as any revision (verified again from git, judged by the guards, held by
suspensions and windows), until ``syncer resume``. Every cluster is checked before any is written:
one whose history does not hold the revision refuses the whole command, and nothing is written.
"""

from __future__ import annotations

import getpass
import time
from pathlib import Path

import click

from syncer.cli.person_text import REQUIRED_REASON, person_options
from syncer.cli.suspend import _common, on_clusters
from syncer.domain.sync_state import Pin
from syncer.kube import KubeApi


def _targets(
    config_path: Path, which: tuple[tuple[str, ...], bool], where: tuple[str, str], wanted: str
) -> dict[str, str]:
    """Each cluster ``which`` names with the full revision ``wanted`` names in its history;
    RollbackRefused when one's history does not hold it as verified and applied there."""
    from syncer.rollout.pins import rollback_target
    from syncer.status.history import history_of
    from syncer.status.state_store import StateStore

    kubeconfig, state_namespace = where
    found: dict[str, str] = {}

    def check(name: str, client: KubeApi) -> None:
        loaded = StateStore(client, state_namespace).load()
        found[name] = rollback_target(name, history_of(loaded.configmap or {}, name), wanted)

    on_clusters(config_path, which, kubeconfig, check)
    return found


@click.command("rollback")
@_common
@click.option("--to", "wanted", required=True, help="The revision (its id, or 7+ characters of it).")
@person_options(REQUIRED_REASON)
def rollback(
    *,
    config_path: Path,
    clusters: tuple[str, ...],
    every: bool,
    kubeconfig: str,
    state_namespace: str,
    wanted: str,
    reason: str,
    by: str,
) -> None:
    """Pin clusters to a revision applied there before, off newer ones until `syncer resume`.

    The revision must be in each cluster's history as verified and applied there; the agent verifies
    it again from git and rolls it out like any revision. Exit 0 recorded, 2 refused or error
    (nothing written).
    """
    from syncer.errors import SyncerError
    from syncer.status.acts import PersonActs

    try:
        if not reason.strip():
            raise SyncerError("--reason is required: say why the clusters are rolled back")
        who = by.strip() or getpass.getuser()
        where = (kubeconfig, state_namespace)
        targets = _targets(config_path, (clusters, every), where, wanted.strip())
        at = time.time()

        def pin(name: str, client: KubeApi) -> None:
            PersonActs(client, state_namespace).record_pin(Pin(targets[name], who, reason.strip(), at))

        on_clusters(config_path, (tuple(targets), False), kubeconfig, pin)
    except (SyncerError, ValueError, OSError) as err:
        click.secho(f"error: {err}", fg="red", err=True)
        raise SystemExit(2) from None
    for name, revision in targets.items():
        click.echo(f"{name}: pinned to {revision} by {who}: {reason.strip()}")
