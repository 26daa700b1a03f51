"""``syncer retry``: try again on one cluster a revision that failed there before.

The request is recorded in the cluster itself, beside its sync state (its own ConfigMap key and field
manager, so the agent's state writes keep it), with who asked, when and why: every replica's next
pass tries again each failure recorded there before the request, of the given revision or of any.
"""

from __future__ import annotations

import getpass
import time
from pathlib import Path

import click

from syncer.cli.person_text import REQUIRED_REASON, person_options
from syncer.config.settings import AGENT_NAMESPACE


@click.command("retry")
@click.option(
    "--config", "config_path", required=True, type=click.Path(path_type=Path, dir_okay=False, exists=True)
)
@click.option("--cluster", required=True, help="The cluster, as the agent config and fleet.yaml name it.")
@click.option(
    "--revision",
    default="",
    help="Only this revision's failure (its id or 7+ characters of it) [default: every failure].",
)
@person_options(REQUIRED_REASON)
@click.option("--kubeconfig", default="", envvar="KUBECONFIG")
@click.option("--state-namespace", default=AGENT_NAMESPACE, show_default=True)
def retry(
    *,
    config_path: Path,
    cluster: str,
    revision: str,
    reason: str,
    by: str,
    kubeconfig: str,
    state_namespace: str,
) -> None:
    """Try again on one cluster a revision that failed there before (the live state was fixed).

    Failures recorded on the cluster before now (of --revision, or all) are no longer refused: the
    agent's next pass applies the revision again, and a new failure is recorded anew. Exit 0
    recorded, 2 refused (--revision names no failure or abort recorded there) or error.
    """
    from syncer.config import ClusterAccess, load_agent_config
    from syncer.domain.sync_state import RetryRequest
    from syncer.errors import SyncerError
    from syncer.kube import ClusterClient
    from syncer.rollout.revision_names import resolve
    from syncer.status.acts import PersonActs
    from syncer.status.state_store import StateStore

    try:
        if not reason.strip():
            raise SyncerError("--reason is required: say why the revision is tried again")
        config = load_agent_config(config_path)
        access = config.clusters.get(cluster, ClusterAccess(context=cluster))
        client = ClusterClient.from_kubeconfig(str(access.kubeconfig or kubeconfig), access.context, cluster)
        try:
            full = ""
            if revision.strip():
                state = StateStore(client, state_namespace).load().state
                tried = [f.revision for f in state.failures]
                tried += [state.abort.revision] if state.abort.active else []
                full = resolve(revision, tried, f"{cluster} records failures or aborts of")
            request = RetryRequest(full, by.strip() or getpass.getuser(), reason.strip(), time.time())
            PersonActs(client, state_namespace).record_retry(request)
        finally:
            client.close()
    except (SyncerError, ValueError, OSError) as err:
        click.secho(f"error: {err}", fg="red", err=True)
        raise SystemExit(2) from None
    what = f"revision {request.revision[:12]}" if request.revision else "every failed revision"
    click.echo(f"{cluster}: {what} is tried again at the next pass (asked by {request.by})")
