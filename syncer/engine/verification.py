"""The signature check of ``syncer verify``: a revision of a local repository or of a remote one
(cloned into a temporary cache first), judged under a trust policy given by the agent."""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path

from syncer.config import SourceOptions, TrustPolicy
from syncer.engine.rendered_fleet import looks_like_url
from syncer.errors import SourceError
from syncer.source import GitSource
from syncer.verify import VerificationResult, VerifyOptions, verify_revision


@dataclass(frozen=True)
class RepositoryVerification:
    """The verdicts on a revision of a repository, and the branch that was cloned to judge it."""

    branch: str
    result: VerificationResult


def verify_repository(
    repo: str, branch: str, trust: TrustPolicy, options: VerifyOptions
) -> RepositoryVerification:
    """Verify a clone syncer makes of ``repo`` (a URL, or a repository on this machine, which git is
    never run inside of: its config, hooks, replace refs and info files take no part). ``branch``
    ``""`` follows the repository's ``HEAD`` branch, as ``git clone`` does."""
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
        verify = VerifyOptions(revision, options.since, options.mode, options.timeout)
        return RepositoryVerification(source.branch, verify_revision(source.git_dir, trust, verify))
