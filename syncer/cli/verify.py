"""``syncer verify``: check the signatures of a revision of a fleet repository against a trust policy.

Exit codes: 0 trusted, 1 not trusted, 2 error (bad policy, unreachable or unreadable repository).
"""

from __future__ import annotations

from pathlib import Path

import click
from rich.table import Table
from rich.text import Text

from syncer.cli.tables import console_for, markup_safe, terminal_text
from syncer.config import VerifyMode, load_trust_policy
from syncer.config.settings import GIT_TIMEOUT
from syncer.engine.verification import verify_repository
from syncer.errors import ConfigError, SourceError, VerificationError
from syncer.verify.results import Verdict, VerificationResult, VerifyOptions

EXIT_TRUSTED, EXIT_UNTRUSTED, EXIT_ERROR = 0, 1, 2
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
@click.option(
    "--branch",
    default="",
    help="Branch to clone and verify [default: the one the repository's HEAD names, as git clone].",
)
def verify(*, repo: str, rev: str, since: str, policy: Path, mode: str | None, branch: str) -> None:
    """Verify who signed a revision of a fleet repository, commit by commit."""
    out, err = console_for(), console_for(stderr=True)
    options = VerifyOptions(
        revision=rev, since=since, mode=VerifyMode(mode) if mode else None, timeout=GIT_TIMEOUT
    )
    try:
        trust = load_trust_policy(policy)
        verified = verify_repository(repo, branch, trust, options)
    except (ConfigError, SourceError) as exc:
        err.print(f"[red]error:[/red] {markup_safe(exc)}", markup=True, highlight=False)
        raise SystemExit(EXIT_ERROR) from None
    except VerificationError as exc:
        err.print(f"[red]not trusted:[/red] {markup_safe(exc)}", markup=True, highlight=False)
        raise SystemExit(EXIT_UNTRUSTED) from None
    result = verified.result
    out.print(f"branch {markup_safe(repr(verified.branch))}, revision {result.revision}", highlight=False)
    out.print(_table(result))
    if result.trusted:
        out.print(f"[green]trusted[/green]: {result.revision} ({result.mode} mode)", highlight=False)
        return
    out.print(f"[red]not trusted[/red]: {markup_safe(result.failure)}", highlight=False)
    raise SystemExit(EXIT_UNTRUSTED)


def _table(result: VerificationResult) -> Table:
    table = Table(title=f"{result.revision[:12]} ({result.mode} mode)", title_justify="left")
    for column in ("commit", "subject", "signer", "key", "verdict", "reason"):
        table.add_column(column, overflow="fold")
    for c in result.commits:
        key = f"{c.key_kind} {c.fingerprint}".strip()
        style = _STYLE.get(c.verdict, "red")
        cells = (c.short, c.subject, c.signer or "-", key or "-")
        table.add_row(
            *(Text(terminal_text(cell)) for cell in cells),
            Text(str(c.verdict), style=style),
            Text(terminal_text(c.reason)),
        )
    return table
