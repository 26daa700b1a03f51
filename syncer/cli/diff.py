"""``syncer diff``: what a revision would change, per wave, cluster and object, before it is synced.

Exit codes as ``kubectl diff``: 0 nothing would change, 1 something would (also where the sync will
wait first: a manual gate, a suspended or pinned cluster, a closed window; or a cluster refuses the
revision because it failed there before: the sync halts and exits 1 too), 2 an error (bad repository
or manifests, unreachable cluster, a dry-run the server refused); and 3 when the agent's guard policy
(the config's ``guardPolicy``) would reject the revision.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

import click

from syncer.config.settings import AGENT_NAMESPACE
from syncer.kube.api import ClientOptions

if TYPE_CHECKING:
    from syncer.config import ClusterAccess
    from syncer.domain.objects import DesiredFleet
    from syncer.domain.plans import FleetPlan
    from syncer.engine.diff import ClusterTarget
    from syncer.guards import GuardReport

    Verdicts = tuple[GuardReport | None, str]

EXIT_SAME, EXIT_CHANGED, EXIT_ERROR, EXIT_GUARDED = 0, 1, 2, 3
FORMATS = ("text", "json", "yaml", "unified")


def _pinned_fleet(repo: str, revision: str) -> DesiredFleet | None:
    """The desired fleet of ``revision`` a person pinned clusters to, from the same repository (None
    when it cannot be rendered: the pinned clusters are then shown against the revision diffed)."""
    from syncer.engine.rendered_fleet import RenderRequest, load_desired
    from syncer.errors import SyncerError

    try:
        with tempfile.TemporaryDirectory(prefix="syncer-diff-pin-") as cache:
            return load_desired(RenderRequest(repo=repo, rev=revision), Path(cache)).fleet
    except SyncerError:
        return None


def _targets(
    names: list[str], kubeconfig: str, access: dict[str, ClusterAccess]
) -> tuple[ClusterTarget, ...]:
    from syncer.config import ClusterAccess
    from syncer.engine.diff import ClusterTarget

    default = kubeconfig or os.environ.get("KUBECONFIG", "") or str(Path.home() / ".kube" / "config")
    targets = []
    for name in names:
        entry = access.get(name, ClusterAccess(context=name))
        path = str(entry.kubeconfig) if entry.kubeconfig else default
        targets.append(ClusterTarget(name, path, entry.context))
    return tuple(targets)


def _emit(plan: FleetPlan, output: str, guards: Verdicts) -> None:
    if output in ("json", "yaml"):
        from syncer.plan.document import fleet_document

        document = fleet_document(plan, *guards)
        if output == "json":
            import json

            click.echo(json.dumps(document, indent=2, ensure_ascii=False))
        else:
            import yaml

            click.echo(yaml.safe_dump(document, sort_keys=False, allow_unicode=True), nl=False)
    elif output == "unified":
        from syncer.cli.diff_view import render_unified

        click.echo("\n".join(render_unified(plan, guards)))
    else:
        from syncer.cli.diff_view import render_text
        from syncer.cli.tables import console_for

        render_text(plan, console_for(highlight=False, soft_wrap=True), guards=guards)


def _with_leaving(
    plan: FleetPlan, fleet: DesiredFleet, known: tuple[ClusterTarget, ...], state_namespace: str
) -> FleetPlan:
    """``plan`` naming the clusters of the agent's config that the revision's fleet no longer lists."""
    from syncer.engine.diff import DiffOptions, leaving_clusters

    options = DiffOptions(state_namespace=state_namespace)
    return replace(plan, leaving=leaving_clusters(fleet, known, options, plan.offline))


def _emit_refusal(errors: list[str], output: str, offline: bool) -> None:
    """For tools (json, yaml): a document even when there is no plan, with the reasons in ``errors``
    and no waves, so a pipeline reading stdout sees why instead of nothing."""
    if output in ("json", "yaml"):
        from syncer.domain.plans import FleetPlan

        _emit(FleetPlan(revision="", waves=(), offline=offline, errors=tuple(errors)), output, (None, ""))


@click.command()
@click.option("--repo", required=True, help="A fleet repository folder, or a URL (with --rev: any git repo).")
@click.option("--rev", default="", help="Revision to diff [default: the folder as it is, or the branch tip].")
@click.option(
    "--branch",
    default="",
    help="Branch to fetch for a repository [default: the one its HEAD names, as git clone].",
)
@click.option("--cluster", "clusters", multiple=True, metavar="NAME", help="Only this cluster (repeatable).")
@click.option("--kubeconfig", default="", help="Kubeconfig file [default: $KUBECONFIG or ~/.kube/config].")
@click.option(
    "--config",
    "config_path",
    type=click.Path(path_type=Path, dir_okay=False, exists=True),
    default=None,
    help="Agent config; its clusters: mapping names the context (and kubeconfig) of each cluster.",
)
@click.option(
    "--rollout-policy",
    type=click.Path(path_type=Path, dir_okay=False, exists=True),
    default=None,
    help="Rollout policy whose waves group the output [default: one wave].",
)
@click.option(
    "-o",
    "--output",
    "--format",
    "output",
    type=click.Choice(FORMATS),
    default="text",
    show_default=True,
    help="text for people, json/yaml for tools (syncer.dev/diff/v3), unified for a review's diff block.",
)
@click.option("--offline", is_flag=True, help="Render and validate only; no cluster is contacted.")
@click.option(
    "--qps", type=float, default=ClientOptions().qps, show_default=True, help="Requests/s per cluster."
)
@click.option(
    "--state-namespace",
    default=AGENT_NAMESPACE,
    show_default=True,
    help="Namespace of each cluster's sync state, whose inventory says what a sync would prune.",
)
def diff(
    *,
    repo: str,
    rev: str,
    branch: str,
    clusters: tuple[str, ...],
    kubeconfig: str,
    config_path: Path | None,
    rollout_policy: Path | None,
    output: str,
    offline: bool,
    qps: float,
    state_namespace: str,
) -> None:
    """Show what syncing a revision would create, update, prune or be blocked on, per wave and cluster.

    Every object's action is computed three ways (desired, last applied, live); updates are predicted
    by a server-side dry-run apply; the config's guard policy judges each change. Exit 0: no changes,
    1: changes, or a cluster refuses the revision (it failed there before), 2: error, 3: the guard
    policy would reject the revision.
    """
    from syncer.config import load_agent_config
    from syncer.config.loading import check_kubeconfig
    from syncer.config.rollout import RolloutPolicy, load_rollout_policy
    from syncer.engine.diff import DiffOptions, diff_fleet, offline_plan
    from syncer.engine.rendered_fleet import RenderRequest, load_desired
    from syncer.errors import ManifestError, SyncerError

    try:
        with tempfile.TemporaryDirectory(prefix="syncer-diff-") as cache:
            desired = load_desired(RenderRequest(repo=repo, rev=rev, branch=branch), Path(cache))
        fleet = desired.fleet
        if desired.origin:
            click.echo(f"diffing {desired.origin}", err=True)
        unknown = [name for name in clusters if name not in fleet.clusters]
        if unknown:
            raise SyncerError(
                f"not in the fleet: {', '.join(unknown)} (clusters: {', '.join(fleet.clusters)})"
            )
        names = list(dict.fromkeys(clusters)) or list(fleet.clusters)
        policy = load_rollout_policy(rollout_policy) if rollout_policy else RolloutPolicy.single_wave()
        config = load_agent_config(config_path) if config_path else None
        origin = config.guards.origin if config is not None and not config.guards.empty else ""
        guards: Verdicts = (None, origin)
        access = dict(config.clusters) if config is not None else {}
        if offline:
            plan = offline_plan(fleet, names, policy)
        else:
            two_person = config.trust.two_person if config is not None else ()
            options = DiffOptions(
                client=ClientOptions(qps=qps),
                rollout=policy,
                two_person=two_person,
                state_namespace=state_namespace,
                pinned=lambda revision: _pinned_fleet(repo, revision),
            )
            check_kubeconfig(kubeconfig)
            plan = diff_fleet(fleet, _targets(names, kubeconfig, access), options)
            if config is not None and origin:
                from syncer.engine.guarding import judge_plan  # CEL loads only when a policy is set

                guards = (judge_plan(config.guards, fleet, plan.clusters), origin)
        if config is not None and not clusters:
            plan = _with_leaving(plan, fleet, _targets(list(access), kubeconfig, access), state_namespace)
    except ManifestError as exc:
        for problem in exc.problems:
            click.secho(str(problem), fg="red", err=True)
        click.secho(
            f"{len(exc.problems)} problem(s); the revision is rejected.", fg="red", bold=True, err=True
        )
        _emit_refusal([str(problem) for problem in exc.problems], output, offline)
        raise SystemExit(EXIT_ERROR) from None
    except SyncerError as exc:
        click.secho(f"error: {exc}", fg="red", err=True)
        _emit_refusal([str(exc)], output, offline)
        raise SystemExit(EXIT_ERROR) from None
    _emit(plan, output, guards)
    if plan.has_errors:
        raise SystemExit(EXIT_ERROR)
    if guards[0] is not None and guards[0].rejected:
        raise SystemExit(EXIT_GUARDED)
    raise SystemExit(EXIT_CHANGED if plan.has_changes or plan.refused else EXIT_SAME)
