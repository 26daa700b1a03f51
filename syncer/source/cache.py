"""Housekeeping of the source's cache folder: one user at a time, stale git locks, old checkouts.

A git process killed at the wrong moment (a SIGKILLed agent, a deadline) leaves ``*.lock`` files that
make every later git command in the repository fail until someone deletes them. Syncer deletes them
itself, but only when it can prove no git process still owns them: it holds the cache folder's
``flock`` (so no other syncer process works in it) and the lock is either older than the git
deadline (every git syncer started has been killed by then) or older than this process's use of the
cache (left by an earlier process). Checkouts are kept for the revisions used last; older ones go.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import stat
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from syncer.errors import SourceError

LOCK_FILE = ".syncer.lock"


@dataclass(frozen=True)
class CacheOptions:
    """``wait`` is how long to wait for another process's use of the cache; ``stale_after`` the age
    from which a git lock file is known to be orphaned (the git deadline); ``keep_checkouts`` how many
    of the most recently used checkouts stay."""

    wait: float = 60.0
    stale_after: float = 60.0
    keep_checkouts: int = 4


class CacheGuard:
    """Exclusive use of one cache folder across processes (``flock``), re-entrant within a process."""

    def __init__(self, cache_dir: Path, options: CacheOptions) -> None:
        self.cache_dir = cache_dir
        self.options = options
        self.since = time.time()
        self._depth = 0
        self._fd = -1
        self._lock = threading.RLock()

    @contextlib.contextmanager
    def held(self) -> Iterator[None]:
        with self._lock:
            if self._depth == 0:
                self._acquire()
            self._depth += 1
            try:
                yield
            finally:
                self._depth -= 1
                if self._depth == 0:
                    os.close(self._fd)  # closing the descriptor releases the flock
                    self._fd = -1

    def _acquire(self) -> None:
        self.cache_dir.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.cache_dir / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o600)
        deadline = time.monotonic() + self.options.wait
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    os.close(fd)
                    raise SourceError(
                        f"the source cache {self.cache_dir} has been in use by another process for "
                        f"{self.options.wait:g}s; two agents cannot share one cacheDir"
                    ) from None
                time.sleep(0.1)
        self._fd = fd


def stale_locks(git_dir: Path, *, stale_after: float, since: float, now: float) -> list[Path]:
    """The ``*.lock`` files of ``git_dir`` (refs, packed-refs, HEAD, config, shallow, objects,
    worktrees) that no live git process can own, for a caller holding the cache's flock."""
    found = []
    for path in git_dir.rglob("*.lock"):
        with contextlib.suppress(FileNotFoundError):
            modified = path.lstat().st_mtime
            if path.is_file() and (now - modified >= stale_after or modified < since):
                found.append(path)
    return sorted(found)


def remove_stale_locks(git_dir: Path, *, stale_after: float, since: float) -> list[Path]:
    """Remove what ``stale_locks`` finds; returns the files removed."""
    removed = []
    for path in stale_locks(git_dir, stale_after=stale_after, since=since, now=time.time()):
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
            removed.append(path)
    return removed


def touch(path: Path) -> None:
    """Mark a checkout as used now (its folder's mtime orders the checkouts)."""
    with contextlib.suppress(FileNotFoundError):
        now = time.time()
        os.utime(path, (now, now))


def old_checkouts(checkouts_dir: Path, keep: int, protect: str = "") -> list[Path]:
    """Checkouts beyond the ``keep`` most recently used (``protect`` always stays), and leftovers of
    interrupted clones and checkouts (folders without a ``.git`` link)."""
    if not checkouts_dir.is_dir():
        return []
    entries = [p for p in checkouts_dir.iterdir() if p.is_dir() and not p.is_symlink()]
    broken = [p for p in entries if not (p / ".git").exists() and p.name != protect]
    whole = sorted((p for p in entries if p not in broken), key=lambda p: p.stat().st_mtime, reverse=True)
    kept = [p for p in whole if p.name == protect] + [p for p in whole if p.name != protect]
    return broken + kept[max(keep, 1) :]


def remove_tree(root: Path) -> None:
    """Remove a read-only checkout (its folders are made writable first)."""
    for dirpath, _dirnames, _filenames in os.walk(root):
        Path(dirpath).chmod(stat.S_IRWXU)
    shutil.rmtree(root, ignore_errors=True)
