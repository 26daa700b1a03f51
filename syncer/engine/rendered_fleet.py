"""The desired fleet of a folder or a repository revision, without signature checks: the render path
of ``syncer render`` and ``syncer diff`` (``syncer verify`` judges signatures; a pass never takes
this path, it goes through ``syncer.engine.revision``)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from syncer.config.settings import GIT_TIMEOUT
from syncer.domain import DesiredFleet
from syncer.errors import SourceError
from syncer.manifests import LoadOptions, load_fleet

LOCAL_REVISION = "local"
_URL = re.compile(r"^(?:[A-Za-z][A-Za-z0-9+.-]*://|[^/\s]+@[^/\s]+:)")


def looks_like_url(repo: str) -> bool:
    """True for ``scheme://...`` and scp-style ``user@host:path`` remotes."""
    return bool(_URL.match(repo))


@dataclass(frozen=True)
class RenderRequest:
    """Which desired fleet to render: a folder as it is (no ``rev``), or one revision of a repository
    (a URL, or a local repository with ``rev``), checked out through a temporary source cache.
    ``branch`` is the branch to clone; ``""`` follows the repository's ``HEAD``, as ``git clone``."""

    repo: str
    rev: str = ""
    branch: str = ""
    load: LoadOptions = field(default_factory=LoadOptions)
    timeout: float = GIT_TIMEOUT


@dataclass(frozen=True)
class Desired:
    """A desired fleet and where it came from: the branch cloned (``""`` for a folder as it is)."""

    fleet: DesiredFleet
    branch: str = ""

    @property
    def origin(self) -> str:
        """Which revision of which branch was taken, for people; ``""`` for a folder as it is."""
        return f"revision {self.fleet.revision} of branch {self.branch!r}" if self.branch else ""


def load_desired(request: RenderRequest, cache_dir: Path) -> Desired:
    """The desired fleet of ``request`` without signature checks (``syncer verify`` does those).

    A folder is rendered as it is, unless a revision is asked for or it is a bare repository.

    Raises SourceError when the repository or revision cannot be read and ManifestError for a bad tree.
    """
    if request.repo.startswith("-"):
        raise SourceError(
            f"the repository {request.repo!r} starts with '-': refusing it (it would be an option)"
        )
    local = Path(request.repo)
    bare = (local / "HEAD").is_file() and (local / "objects").is_dir()
    if not request.rev and local.is_dir() and not bare and not looks_like_url(request.repo):
        return Desired(load_fleet(local, LOCAL_REVISION, request.load))
    url = str(local.resolve()) if local.is_dir() else request.repo
    from syncer.source import GitSource, SourceOptions  # git loads only when a revision is fetched

    source = GitSource(
        SourceOptions(url=url, cache_dir=cache_dir, branch=request.branch, timeout=request.timeout)
    )
    tip = source.poll().tip
    snapshot = source.checkout(source.resolve(request.rev) if request.rev else tip)
    return Desired(load_fleet(snapshot.tree_path, snapshot.revision, request.load), source.branch)
