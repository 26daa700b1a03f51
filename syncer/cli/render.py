"""``syncer render``: the desired objects of each cluster, as the manifests stage computes them."""

from __future__ import annotations

import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

import click
import yaml

from syncer.errors import ManifestError, Problem, SyncerError

if TYPE_CHECKING:
    from syncer.domain.objects import ClusterManifests

EXIT_INVALID = 2


def cluster_yaml(cluster: ClusterManifests, show_secrets: bool = False) -> str:
    """One cluster as multi-document YAML behind a comment header naming its content hash. Secret
    values are masked (as ``syncer diff`` masks them) unless ``show_secrets``."""
    from syncer.crds import shipped_sensitive_fields
    from syncer.domain.secrets import masked_document

    sensitive = shipped_sensitive_fields()
    lines = [
        f"# cluster: {cluster.cluster}",
        f"# content-hash: sha256:{cluster.content_hash}",
        f"# objects: {len(cluster.manifests)}",
    ]
    for manifest in cluster.manifests:
        lines.append(f"--- # {manifest.key.subject} from {manifest.source}")
        body = dict(manifest.body) if show_secrets else masked_document(manifest.body, sensitive)
        lines.append(yaml.safe_dump(body, sort_keys=False, default_flow_style=False).rstrip("\n"))
    return "\n".join(lines) + "\n"


def print_problems(problems: Iterable[Problem]) -> None:
    """Every problem on stderr as ``file:line:col: kind: message``, one per line."""
    from rich.console import Console
    from rich.text import Text

    console = Console(stderr=True, highlight=False, soft_wrap=True)
    listed = list(problems)
    for found in listed:
        line = Text()
        line.append(str(found.location), style="bold")
        line.append(": ")
        line.append(found.kind, style="red")
        line.append(f": {found.message}")
        console.print(line)
    console.print(Text(f"{len(listed)} problem(s); the revision is rejected.", style="bold red"))


@click.command()
@click.option(
    "--repo",
    required=True,
    help="A fleet repository: a folder (rendered as it is), or a git URL.",
)
@click.option("--rev", default="", help="Render this revision (commit, tag or branch) of the repository.")
@click.option(
    "--branch",
    default="",
    help="Branch to clone for a repository [default: the one its HEAD names, as git clone].",
)
@click.option(
    "--cluster",
    "clusters",
    multiple=True,
    metavar="NAME",
    help="Render only this cluster (repeatable); all clusters by default.",
)
@click.option(
    "--show-secrets",
    is_flag=True,
    help="Print secret values in clear; by default they read <masked sha256:...> (see docs/diff.md).",
)
@click.pass_context
def render(
    ctx: click.Context,
    *,
    repo: str,
    rev: str,
    branch: str,
    clusters: tuple[str, ...],
    show_secrets: bool,
) -> None:
    """Print the desired objects of each cluster of a fleet repository as YAML.

    Secret values (Redis password directives, fields the CRD marks format: password) are masked with
    a short digest unless --show-secrets is given. Exits 2 and lists every problem as
    file:line:col: kind: message when the manifests are invalid.
    """
    from syncer.engine.rendered_fleet import RenderRequest, load_desired

    try:
        with tempfile.TemporaryDirectory(prefix="syncer-render-") as cache:
            desired = load_desired(RenderRequest(repo=repo, rev=rev, branch=branch), Path(cache))
    except ManifestError as e:
        print_problems(e.problems)
        ctx.exit(EXIT_INVALID)
    except SyncerError as e:
        click.secho(f"error: {e}", fg="red", err=True)
        ctx.exit(EXIT_INVALID)
    fleet = desired.fleet
    if desired.origin:
        click.echo(f"rendering {desired.origin}", err=True)
    unknown = [name for name in clusters if name not in fleet.clusters]
    if unknown:
        known = ", ".join(fleet.clusters)
        raise click.BadParameter(
            f"{', '.join(unknown)} not in the fleet (clusters: {known})", param_hint="--cluster"
        )
    chosen = (
        [fleet.clusters[name] for name in dict.fromkeys(clusters)] if clusters else fleet.clusters.values()
    )
    click.echo("\n".join(cluster_yaml(cluster, show_secrets) for cluster in chosen), nl=False)
