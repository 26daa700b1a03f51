"""``syncer diff``: what a revision would change, per wave, cluster and object, before it is synced.

Exit codes as ``kubectl diff``: 0 nothing would change, 1 something would, 2 an error (bad repository
or manifests, unreachable cluster, a dry-run the server refused).
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

import click
import yaml
from rich.console import Console
from rich.table import Table
from rich.text import Text

from syncer.config import ClusterAccess, load_agent_config
from syncer.config.rollout import RolloutPolicy, load_rollout_policy
from syncer.domain.changes import Action, Change, ClusterPlan, FieldChange, FleetPlan
from syncer.engine.diff import ClusterTarget, DiffOptions, diff_fleet, offline_plan
from syncer.engine.revision import RenderRequest, load_desired
from syncer.errors import ManifestError, SyncerError
from syncer.kube import ClientOptions
from syncer.plan import fleet_document

EXIT_SAME, EXIT_CHANGED, EXIT_ERROR = 0, 1, 2
_STYLE = {
    Action.CREATE: ("+", "green"),
    Action.UPDATE: ("~", "yellow"),
    Action.PRUNE: ("-", "red"),
    Action.UNCHANGED: ("=", "dim"),
    Action.CONFLICT: ("!", "bold red"),
    Action.DRIFT: ("≠", "magenta"),
}
_COLUMNS = (Action.CREATE, Action.UPDATE, Action.PRUNE, Action.CONFLICT, Action.DRIFT, Action.UNCHANGED)


def _field_name(pointer: str) -> str:
    """``/metadata/labels/app.kubernetes.io~1name`` as ``metadata.labels["app.kubernetes.io/name"]``."""
    out = ""
    for raw in pointer.split("/")[1:]:
        part = raw.replace("~1", "/").replace("~0", "~")
        if part.isidentifier() or part.isdigit():
            out += f".{part}" if out else part
        else:
            out += f"[{json.dumps(part)}]"
    return out or "(object)"


def _value(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def _field_line(change: FieldChange, field_manager: str) -> Text:
    line = Text("      ")
    name = _field_name(change.path)
    if change.before is None:
        line.append(f"+ {name}: {_value(change.after)}", style="green")
    elif change.after is None:
        line.append(f"- {name}: {_value(change.before)}", style="red")
    else:
        line.append(f"~ {name}: ", style="yellow")
        line.append(_value(change.before), style="red")
        line.append(" -> ")
        line.append(_value(change.after), style="green")
    if change.action in (Action.CONFLICT, Action.DRIFT):
        line.append(f"  [{change.action}]", style=_STYLE[change.action][1])
    if change.owners:
        others = [o for o in change.owners if o != field_manager]
        line.append(f"  (owner: {', '.join(change.owners)})", style="bold" if others else "dim")
    return line


def _object_lines(change: Change, field_manager: str) -> list[Text]:
    mark, style = _STYLE[change.action]
    head = Text(f"    {mark} ")
    head.append(f"{change.action:<9} ", style=style)
    head.append(change.key.subject, style="bold")
    if change.message:
        head.append(f"  {change.message}", style="dim")
    return [head, *(_field_line(f, field_manager) for f in change.fields)]


def _cluster_lines(plan: ClusterPlan, field_manager: str) -> list[Text]:
    lines = [Text(f"  cluster {plan.cluster}", style="bold cyan")]
    if plan.error:
        lines.append(Text(f"    error: {plan.error}", style="bold red"))
        return lines
    changed = [c for c in plan.changes if c.changes_something]
    for change in changed:
        lines.extend(_object_lines(change, field_manager))
    unchanged = plan.count(Action.UNCHANGED)
    if not changed:
        lines.append(Text(f"    no changes ({unchanged} objects unchanged)", style="dim"))
    return lines


def _summary(plan: FleetPlan) -> Table:
    table = Table(title="summary", title_justify="left")
    table.add_column("wave")
    table.add_column("cluster")
    for action in _COLUMNS:
        table.add_column(f"{action}s" if action != Action.UNCHANGED else "unchanged", justify="right")
    for wave in plan.waves:
        for cluster in wave.clusters:
            counts = cluster.counts()
            cells = ["error"] * len(_COLUMNS) if cluster.error else [str(counts[a]) for a in _COLUMNS]
            table.add_row(wave.name, cluster.cluster, *cells)
    return table


def render_text(plan: FleetPlan, console: Console, field_manager: str = "syncer") -> None:
    """The plan for people: per wave, per cluster, the changed objects with their fields and owners."""
    mode = " (offline: rendered and validated only; every object shown as a create)" if plan.offline else ""
    console.print(Text(f"revision {plan.revision}{mode}", style="bold"))
    for index, wave in enumerate(plan.waves, start=1):
        console.print(Text(f"wave {index}: {wave.name}", style="bold underline"))
        for cluster in wave.clusters:
            for line in _cluster_lines(cluster, field_manager):
                console.print(line)
    for error in plan.errors:
        console.print(Text(f"error: {error}", style="bold red"))
    console.print(_summary(plan))


def _targets(
    names: list[str], kubeconfig: str, access: dict[str, ClusterAccess]
) -> tuple[ClusterTarget, ...]:
    default = kubeconfig or os.environ.get("KUBECONFIG", "") or str(Path.home() / ".kube" / "config")
    targets = []
    for name in names:
        entry = access.get(name, ClusterAccess(context=name))
        path = str(entry.kubeconfig) if entry.kubeconfig else default
        targets.append(ClusterTarget(name, path, entry.context))
    return tuple(targets)


def _emit(plan: FleetPlan, output: str) -> None:
    if output == "json":
        click.echo(json.dumps(fleet_document(plan), indent=2, ensure_ascii=False))
    elif output == "yaml":
        click.echo(yaml.safe_dump(fleet_document(plan), sort_keys=False, allow_unicode=True), nl=False)
    else:
        render_text(plan, Console(highlight=False, soft_wrap=True))


@click.command()
@click.option("--repo", required=True, help="A fleet repository folder, or a URL (with --rev: any git repo).")
@click.option("--rev", default="", help="Revision to diff [default: the folder as it is, or the branch tip].")
@click.option("--branch", default="main", show_default=True, help="Branch to fetch when --repo is a URL.")
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
    "-o", "--output", type=click.Choice(["text", "json", "yaml"]), default="text", show_default=True
)
@click.option("--offline", is_flag=True, help="Render and validate only; no cluster is contacted.")
@click.option(
    "--qps", type=float, default=ClientOptions().qps, show_default=True, help="Requests/s per cluster."
)
@click.option(
    "--state-namespace",
    default=DiffOptions().state_namespace,
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
    by a server-side dry-run apply. Exit 0: no changes, 1: changes, 2: error.
    """
    err = Console(stderr=True, highlight=False, soft_wrap=True)
    try:
        with tempfile.TemporaryDirectory(prefix="syncer-diff-") as cache:
            fleet = load_desired(RenderRequest(repo=repo, rev=rev, branch=branch), Path(cache))
        unknown = [name for name in clusters if name not in fleet.clusters]
        if unknown:
            raise SyncerError(
                f"not in the fleet: {', '.join(unknown)} (clusters: {', '.join(fleet.clusters)})"
            )
        names = list(dict.fromkeys(clusters)) or list(fleet.clusters)
        policy = load_rollout_policy(rollout_policy) if rollout_policy else RolloutPolicy.single_wave()
        if offline:
            plan = offline_plan(fleet, names, policy)
        else:
            access = dict(load_agent_config(config_path).clusters) if config_path else {}
            options = DiffOptions(
                client=ClientOptions(qps=qps), rollout=policy, state_namespace=state_namespace
            )
            plan = diff_fleet(fleet, _targets(names, kubeconfig, access), options)
    except ManifestError as exc:
        for problem in exc.problems:
            err.print(Text(str(problem), style="red"))
        err.print(Text(f"{len(exc.problems)} problem(s); the revision is rejected.", style="bold red"))
        raise SystemExit(EXIT_ERROR) from None
    except SyncerError as exc:
        err.print(Text(f"error: {exc}", style="red"))
        raise SystemExit(EXIT_ERROR) from None
    _emit(plan, output)
    if plan.has_errors:
        raise SystemExit(EXIT_ERROR)
    raise SystemExit(EXIT_CHANGED if plan.has_changes else EXIT_SAME)
