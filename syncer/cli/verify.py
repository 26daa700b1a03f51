"""``syncer verify``: check the signatures of a revision of a fleet repository against a trust policy.

Exit codes: 0 trusted, 1 not trusted, 2 error (bad policy, unreachable or unreadable repository).
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import click
from rich.console import Console
from rich.table import Table

from syncer.config import TrustPolicy, VerifyMode, load_trust_policy
from syncer.engine.revision import looks_like_url
from syncer.errors import ConfigError, SourceError, VerificationError
from syncer.source import GitSource, SourceOptions
from syncer.verify import Verdict, VerificationResult, VerifyOptions, verify_revision

EXIT_TRUSTED, EXIT_UNTRUSTED, EXIT_ERROR = 0, 1, 2
GIT_TIMEOUT = 60.0
_STYLE = {Verdict.TRUSTED: "green"}


@click.command()
@click.option(
    "--repo",
    required=True,
    help="A git repository (a folder or a URL); it is cloned into a temporary cache and the clone judged.",
)
@click.option("--rev", default="", help="Revision to verify [default: the tip of --branch].")
@click.option(
    "--since", default="", help="The last verified revision; strict mode checks every commit after it."
)
@click.option(
    "--policy",
    type=click.Path(path_type=Path, dir_okay=False),
    default=Path("policies/trust.yaml"),
    show_default=True,
    help="The agent's trust policy file.",
)
@click.option(
    "--mode",
    type=click.Choice([m.value for m in VerifyMode]),
    default=None,
    help="Override the policy's mode.",
)
@click.option("--branch", default="main", show_default=True, help="Branch to clone and verify.")
def verify(*, repo: str, rev: str, since: str, policy: Path, mode: str | None, branch: str) -> None:
    """Verify who signed a revision of a fleet repository, commit by commit."""
    out, err = Console(width=_width()), Console(stderr=True, width=_width())
    options = VerifyOptions(
        revision=rev, since=since, mode=VerifyMode(mode) if mode else None, timeout=GIT_TIMEOUT
    )
    try:
        trust = load_trust_policy(policy)
        result = _verify(repo, branch, trust, options)
    except (ConfigError, SourceError) as exc:
        err.print(f"[red]error:[/red] {exc}", markup=True, highlight=False)
        raise SystemExit(EXIT_ERROR) from None
    except VerificationError as exc:
        err.print(f"[red]not trusted:[/red] {exc}", markup=True, highlight=False)
        raise SystemExit(EXIT_UNTRUSTED) from None
    out.print(_table(result))
    if result.trusted:
        out.print(f"[green]trusted[/green]: {result.revision} ({result.mode} mode)", highlight=False)
        return
    out.print(f"[red]not trusted[/red]: {result.failure}", highlight=False)
    raise SystemExit(EXIT_UNTRUSTED)


def _verify(repo: str, branch: str, trust: TrustPolicy, options: VerifyOptions) -> VerificationResult:
    """Verify a clone syncer makes of ``repo`` (a URL, or a repository on this machine, which git is
    never run inside of: its config, hooks, replace refs and info files take no part)."""
    if repo.startswith("-"):
        raise SourceError(f"the repository {repo!r} starts with '-': refusing it (it would be an option)")
    if not looks_like_url(repo):
        path = Path(repo)
        if not path.exists():
            raise SourceError(f"{repo} is neither an existing folder nor a URL")
        repo = str(path.resolve())
    with tempfile.TemporaryDirectory(prefix="syncer-verify-cache-") as cache:
        source = GitSource(
            SourceOptions(url=repo, cache_dir=Path(cache), branch=branch, timeout=options.timeout)
        )
        tip = source.poll().tip
        revision = options.revision or tip
        return verify_revision(
            source.git_dir, trust, VerifyOptions(revision, options.since, options.mode, options.timeout)
        )


def _table(result: VerificationResult) -> Table:
    table = Table(title=f"{result.revision[:12]} ({result.mode} mode)", title_justify="left")
    for column in ("commit", "subject", "signer", "key", "verdict", "reason"):
        table.add_column(column, overflow="fold")
    for c in result.commits:
        key = f"{c.key_kind} {c.fingerprint}".strip()
        style = _STYLE.get(c.verdict, "red")
        table.add_row(
            c.short, c.subject, c.signer or "-", key or "-", f"[{style}]{c.verdict}[/{style}]", c.reason
        )
    return table


def _width() -> int | None:
    """Wide enough not to fold fingerprints when the output is not a terminal."""
    console = Console()
    return None if console.is_terminal else 240
