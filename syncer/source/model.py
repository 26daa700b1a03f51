"""Values of the git source: the options of a source, the result of a poll, a checked-out snapshot."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from syncer.config import GitCredentials, SourceSettings


@dataclass(frozen=True)
class SourceOptions:
    """Where the fleet repository is and how to keep a local copy of it.

    ``clone_filter`` is the partial-clone filter of the one clone (``""`` for a full clone); the
    commit and tree history is always complete so every new commit can be verified; a repository on
    this machine (a path or ``file://``) is always cloned whole. ``timeout`` is the
    deadline in seconds of each git operation. A tip that does not descend from the last synced (or
    last accepted) revision is refused unless ``allow_history_rewrite``.
    """

    url: str
    cache_dir: Path
    branch: str = "main"
    credentials: GitCredentials = field(default_factory=GitCredentials)
    timeout: float = 60.0
    allow_history_rewrite: bool = False
    clone_filter: str = "blob:none"

    @staticmethod
    def from_settings(settings: SourceSettings, *, allow_history_rewrite: bool = False) -> SourceOptions:
        return SourceOptions(
            url=settings.url,
            cache_dir=settings.cache_dir,
            branch=settings.branch,
            credentials=settings.credentials,
            timeout=settings.timeout,
            allow_history_rewrite=allow_history_rewrite,
        )


@dataclass(frozen=True)
class PollResult:
    """One poll: the accepted tip, whether it moved since the previous accepted tip (``previous``,
    empty on the first poll), whether objects were fetched, and whether the move rewrote history
    (only ever true when the options allow it). For a rewrite, ``fork_point`` is the newest revision
    the tip shares with the base it left (``""`` when none): what is new starts after it."""

    tip: str
    changed: bool
    fetched: bool
    previous: str = ""
    rewritten: bool = False
    fork_point: str = ""


@dataclass(frozen=True)
class Snapshot:
    """One exact revision checked out into a folder of its own, read-only.

    ``tree_path`` holds the files of ``revision`` (plus the ``.git`` link file of the checkout);
    ``git_dir`` is the repository with the history, for the stages that need commits (verification).
    """

    revision: str
    tree_path: Path
    git_dir: Path
    branch: str
