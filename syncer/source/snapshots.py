"""Values of the git source: the result of a poll and a checked-out snapshot (its options,
``SourceOptions``, are part of the agent config and loaded with it)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from syncer.config import SourceOptions

__all__ = ["PollResult", "Snapshot", "SourceOptions"]


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
