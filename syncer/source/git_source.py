"""The git source: one partial clone in a cache folder, cheap polls, exact checkouts.

Refs kept in the cache repository (all under ``refs/syncer/``):

* ``fetched``  the remote tip as last fetched (may be a tip that was refused);
* ``accepted`` the tip the last successful poll returned;
* ``synced``   the revision the caller last synced (``mark_synced``), the base of the rewrite check.

A poll runs ``git ls-remote`` and fetches only when the remote tip is not already in the cache. A tip
that does not descend from the base (``synced``, else ``accepted``) is refused with a ``SourceError``
naming both revisions unless the options allow history rewrites; a refused tip is never accepted by a
later poll either, and the base with its checkouts stays usable.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import stat
import tempfile
from pathlib import Path

from git.refs.symbolic import SymbolicReference
from git.repo import Repo

from syncer.errors import SourceError
from syncer.source.cache import (
    CacheGuard,
    CacheOptions,
    old_checkouts,
    remove_stale_locks,
    remove_tree,
    touch,
)
from syncer.source.gitenv import GitRunner
from syncer.source.model import PollResult, Snapshot, SourceOptions

_FETCHED = "refs/syncer/fetched"
_ACCEPTED = "refs/syncer/accepted"
_SYNCED = "refs/syncer/synced"
_FULL_SHA = re.compile(r"^[0-9a-f]{40}(?:[0-9a-f]{24})?$")
KEEP_CHECKOUTS = 4

log = logging.getLogger("syncer.source")


class GitSource:
    """A remote branch mirrored into ``options.cache_dir``; not safe for concurrent use of one cache."""

    def __init__(self, options: SourceOptions) -> None:
        self.options = options
        self.git_dir = options.cache_dir / "repo.git"
        self.checkouts_dir = options.cache_dir / "checkouts"
        self.fetch_count = 0
        self._git = GitRunner(options.credentials, timeout=options.timeout, url=options.url)
        cache = CacheOptions(wait=options.timeout, stale_after=options.timeout, keep_checkouts=KEEP_CHECKOUTS)
        self._guard = CacheGuard(options.cache_dir, cache)

    # -- polling -------------------------------------------------------------------------------

    def poll(self) -> PollResult:
        """Check the remote tip, fetch only when it is new to the cache, and accept it if allowed."""
        with self._guard.held():
            self._recover()
            return self._poll()

    def _recover(self) -> None:
        """Remove what git processes killed mid-way left behind (see ``syncer.source.cache``)."""
        for leftover in self.options.cache_dir.glob(".clone-*"):  # no clone runs while we hold the cache
            shutil.rmtree(leftover, ignore_errors=True)
        if not self._cloned():
            return
        guard = self._guard
        removed = remove_stale_locks(self.git_dir, stale_after=guard.options.stale_after, since=guard.since)
        for path in removed:
            log.warning("removed a stale git lock file left by an interrupted git process: %s", path)

    def _poll(self) -> PollResult:
        tip = self.remote_tip()
        fetched = False
        if not self._cloned():
            self._clone()
            fetched = True
        if self._ref(_FETCHED) != tip:
            self._fetch()
            fetched = True
            tip = self._ref(_FETCHED)
        previous = self._ref(_ACCEPTED)
        if tip == previous:
            return PollResult(tip=tip, changed=False, fetched=fetched, previous=previous)
        base = self.last_synced or previous
        rewritten = bool(base) and base != tip and not self._is_ancestor(base, tip)
        if rewritten and not self.options.allow_history_rewrite:
            which = "synced" if self.last_synced else "accepted"
            raise SourceError(
                f"history of branch {self.options.branch!r} on {self._git.safe_url} was rewritten: the new "
                f"tip {tip} does not descend from the last {which} revision {base}; refusing it "
                "(allowHistoryRewrite is off)"
            )
        self._update_ref(_ACCEPTED, tip)
        return PollResult(tip=tip, changed=True, fetched=fetched, previous=previous, rewritten=rewritten)

    def remote_tip(self) -> str:
        """The commit the remote branch points at now, by ``git ls-remote`` (no objects are fetched)."""
        ref = f"refs/heads/{self.options.branch}"
        out = self._git.run(["ls-remote", self.options.url, ref], cwd=None, action="ls-remote")
        for line in out.splitlines():
            sha, _, name = line.partition("\t")
            if name.strip() == ref:
                return sha.strip()
        raise SourceError(f"branch {self.options.branch!r} does not exist on {self._git.safe_url}")

    @property
    def last_synced(self) -> str:
        """The revision last passed to ``mark_synced`` (kept in the cache across restarts), or ``""``."""
        return self._ref(_SYNCED) if self._cloned() else ""

    @property
    def last_accepted(self) -> str:
        return self._ref(_ACCEPTED) if self._cloned() else ""

    def mark_synced(self, revision: str) -> None:
        """Record that ``revision`` went through the pipeline; later tips must descend from it."""
        with self._guard.held():
            self._recover()
            self._update_ref(_SYNCED, self.resolve(revision))

    # -- checkouts -----------------------------------------------------------------------------

    def resolve(self, revision: str) -> str:
        """The full commit id of ``revision`` (a sha, or a ref of the cache repository)."""
        out = self._git.run(
            ["rev-parse", "--verify", "--end-of-options", f"{revision}^{{commit}}"],
            cwd=self.git_dir,
            action=f"resolving revision {revision!r}",
        )
        return out.strip()

    def checkout(self, revision: str) -> Snapshot:
        """The files of exactly ``revision`` in a read-only folder of its own (reused if it exists).
        Only the most recently used checkouts are kept; older ones are removed."""
        sha = revision if _FULL_SHA.match(revision) else self.resolve(revision)
        target = self.checkouts_dir / sha
        with self._guard.held():
            if (target / ".git").exists():
                touch(target)
            else:
                self._recover()
                if target.exists():
                    remove_tree(target)
                self.checkouts_dir.mkdir(parents=True, exist_ok=True)
                self._git.run(["worktree", "prune"], cwd=self.git_dir, action="pruning stale checkouts")
                self._git.run(
                    ["worktree", "add", "--detach", str(target), sha],
                    cwd=self.git_dir,
                    action=f"checking out {sha}",
                )
                _make_read_only(target)
                self._prune_checkouts(sha)
        return Snapshot(revision=sha, tree_path=target, git_dir=self.git_dir, branch=self.options.branch)

    def remove_checkout(self, revision: str) -> None:
        with self._guard.held():
            target = self.checkouts_dir / revision
            if target.exists():
                remove_tree(target)
            if self._cloned():
                self._git.run(["worktree", "prune"], cwd=self.git_dir, action="pruning checkouts")

    def _prune_checkouts(self, protect: str) -> None:
        old = old_checkouts(self.checkouts_dir, self._guard.options.keep_checkouts, protect)
        for path in old:
            remove_tree(path)
        if old:
            self._git.run(["worktree", "prune"], cwd=self.git_dir, action="pruning checkouts")

    # -- internals -----------------------------------------------------------------------------

    def _cloned(self) -> bool:
        return (self.git_dir / "HEAD").is_file()

    def _clone(self) -> None:
        self.options.cache_dir.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=".clone-", dir=self.options.cache_dir))
        args = ["clone", "--bare", "--no-tags", "--single-branch", "--branch", self.options.branch]
        if self.options.clone_filter:
            args.append(f"--filter={self.options.clone_filter}")
        try:
            self.fetch_count += 1
            self._git.run(
                [*args, "--", self.options.url, str(staging / "repo.git")], cwd=None, action="clone"
            )
            os.replace(staging / "repo.git", self.git_dir)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        self._update_ref(_FETCHED, f"refs/heads/{self.options.branch}")

    def _fetch(self) -> None:
        self.fetch_count += 1
        refspec = f"+refs/heads/{self.options.branch}:{_FETCHED}"
        if self._origin_url() != self.options.url:
            self._git.run(
                ["remote", "set-url", "origin", self.options.url], cwd=self.git_dir, action="set-url"
            )
        self._git.run(["fetch", "--no-tags", "origin", refspec], cwd=self.git_dir, action="fetch")

    def _origin_url(self) -> str:
        with Repo(self.git_dir).config_reader("repository") as config:
            return str(config.get_value('remote "origin"', "url", ""))

    def _ref(self, name: str) -> str:
        """The commit a ref points at, read from the ref files (no git process), or ``""``."""
        try:
            return str(SymbolicReference.dereference_recursive(Repo(self.git_dir), name))
        except (ValueError, OSError):
            return ""

    def _update_ref(self, name: str, target: str) -> None:
        self._git.run(["update-ref", name, target], cwd=self.git_dir, action=f"updating {name}")

    def _is_ancestor(self, ancestor: str, descendant: str) -> bool:
        try:
            self._git.run(
                ["merge-base", "--is-ancestor", ancestor, descendant],
                cwd=self.git_dir,
                action="checking ancestry",
            )
        except SourceError:
            return False
        return True


def _make_read_only(root: Path) -> None:
    for dirpath, dirnames, filenames in os.walk(root):
        for name in filenames:
            path = Path(dirpath, name)
            if not path.is_symlink():
                path.chmod(path.stat().st_mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))
        for name in dirnames:
            path = Path(dirpath, name)
            if not path.is_symlink():
                path.chmod(path.stat().st_mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))
    root.chmod(root.stat().st_mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))
