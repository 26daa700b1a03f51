"""The git source: one partial clone in a cache folder, cheap polls, exact checkouts.

Refs kept in the cache repository (all under ``refs/syncer/``):

* ``fetched``  the remote tip as last fetched (may be a tip that was refused);
* ``accepted`` the tip the last successful poll returned;
* ``synced``   the revision the caller last synced (``mark_synced``), the base of the rewrite check.

A poll runs ``git ls-remote`` and fetches only when the remote tip is not already in the cache. A tip
that does not descend from the base (``synced``, else ``accepted``) or from any revision the caller
says the fleet records as applied is refused with ``HistoryRewritten`` naming both revisions unless
the options allow history rewrites; a refused tip is never accepted by a later poll either, and the
base with its checkouts stays usable. A revision the clone does not hold at all (a fresh cache after
a force-push) is not an ancestor of anything.

A local repository (a path or ``file://``) is cloned through git's transport (``--no-local``), whole
and without lazy fetches: nothing of it but the objects of its branch (no config, hooks, replace refs,
grafts, alternates or promisor remote) takes part in what the clone holds.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import shutil
import stat
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path

from git.refs.symbolic import SymbolicReference
from git.repo import Repo

from syncer.errors import CacheUnusable, HistoryRewritten, RefusedObjects, SourceError
from syncer.source.cache import (
    CacheGuard,
    CacheOptions,
    old_checkouts,
    remove_stale_locks,
    remove_tree,
    touch,
)
from syncer.source.runner import GitRunner, check_argument
from syncer.source.snapshots import PollResult, Snapshot, SourceOptions
from syncer.tracing import span

_FETCHED = "refs/syncer/fetched"
_ACCEPTED = "refs/syncer/accepted"
_SYNCED = "refs/syncer/synced"
_FULL_SHA = re.compile(r"^[0-9a-f]{40}(?:[0-9a-f]{24})?$")
KEEP_CHECKOUTS = 4
# What git says when the remote answers that it holds no such object (it was reached: an answer).
_NO_SUCH_OBJECT = (
    "not our ref",
    "couldn't find remote ref",
    "no such remote ref",
    "unadvertised object",
    "not a valid object",
)
_UNKNOWN_KEPT = 64

log = logging.getLogger("syncer.source")


_HEADS = "refs/heads/"
_REMOTE_URL = re.compile(r"^(?:[A-Za-z][A-Za-z0-9+.-]*://|[^/\s]+@[^/\s]+:)")
_BAD_BRANCH = re.compile(r"(?:^[-/.]|\.\.|[\x00-\x20\x7f~^:?*\[\\]|@\{|/$|\.lock$|\.$|//)")


def is_local(url: str) -> bool:
    """True for a path on this machine or a ``file://`` URL."""
    return url.lower().startswith("file://") or not _REMOTE_URL.match(url)


def check_branch(branch: str) -> str:
    """``branch`` when it is a valid branch name that cannot pass for an option; else ``SourceError``."""
    check_argument(branch, "branch")
    if _BAD_BRANCH.search(branch):
        raise SourceError(f"{branch!r} is not a valid branch name")
    return branch


def branch_name(branch: str) -> str:
    """The branch ``branch`` names: a short name (``main``), or a full ref name ``refs/heads/main``
    meaning the same branch. Any other ``refs/...`` name, ``HEAD``, or ``refs/heads/refs/...`` is
    refused: it names no branch, and looking it up under ``refs/heads/`` would follow a ref any
    pusher can create (``refs/heads/refs/heads/main``)."""
    name = branch.removeprefix(_HEADS)
    if name.startswith("refs/") or name == "HEAD":
        raise SourceError(
            f"{branch!r} is not a branch name: give the branch (main), or its full ref name (refs/heads/main)"
        )
    return check_branch(name)


class GitSource:
    """A remote branch mirrored into ``options.cache_dir``; not safe for concurrent use of one cache.

    The branch is the options' (a full ref name ``refs/heads/X`` means branch X), or, when they give
    none, the branch the remote's ``HEAD`` names, as ``git clone`` follows it (asked once)."""

    def __init__(self, options: SourceOptions) -> None:
        self.options = options
        self.git_dir = options.cache_dir / "repo.git"
        self.checkouts_dir = options.cache_dir / "checkouts"
        self.fetch_count = 0
        check_argument(options.url, "repository URL or path")
        self._branch = branch_name(options.branch) if options.branch else ""
        self._refused: dict[str, RefusedObjects] = {}
        # Recorded commits the remote said it has no such object for (the newest kept): not asked
        # again. ``unknown``: those the last poll's records named.
        self._unknown: dict[str, None] = {}
        self.unknown: tuple[str, ...] = ()
        self.local = is_local(options.url)
        self._git = GitRunner(options.credentials, timeout=options.timeout, url=options.url, local=self.local)
        cache = CacheOptions(wait=options.timeout, stale_after=options.timeout, keep_checkouts=KEEP_CHECKOUTS)
        self._guard = CacheGuard(options.cache_dir, cache)

    # -- polling -------------------------------------------------------------------------------

    def poll(self, recorded: Mapping[str, str] | None = None) -> PollResult:
        """Check the remote tip, fetch only when it is new to the cache, and accept it if allowed.

        ``recorded`` maps revisions the fleet records as applied to who records them (for messages):
        the tip must descend from each of them as well as from this cache's base, even when it did
        not move since the last poll.
        """
        with self._using_cache():
            self._recover()
            return self._poll(recorded or {})

    @contextlib.contextmanager
    def _using_cache(self) -> Iterator[None]:
        """The cache held for this process (``CacheGuard``); a folder or file of it that cannot be
        made, written or removed is a ``CacheUnusable`` naming it, never an unhandled ``OSError``."""
        try:
            with self._guard.held():
                yield
        except OSError as exc:
            path = str(exc.filename or self.options.cache_dir)
            reason = exc.strerror or type(exc).__name__
            raise CacheUnusable(str(self.options.cache_dir), path=path, reason=reason) from None

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

    def _poll(self, recorded: Mapping[str, str]) -> PollResult:
        tip = self.remote_tip()
        fetched = self._receive(tip)
        if fetched:
            tip = self._ref(_FETCHED)
        previous = self._ref(_ACCEPTED)
        # A record is evidence, not authority: a commit the repository does not hold (not in this
        # cache, and the remote has no such object) bounds nothing; the caller shows who records it.
        bases = {b: o for b, o in recorded.items() if self.holds(b)}
        self.unknown = tuple(b for b in recorded if b not in bases)
        if tip != previous:
            own = self.last_synced or previous
            if own:
                bases.setdefault(own, f"the last {'synced' if self.last_synced else 'accepted'} revision")
        base, origin = next(((b, o) for b, o in bases.items() if not self._descends(tip, b)), ("", ""))
        if base and not self.options.allow_history_rewrite:
            raise HistoryRewritten(
                f"history of branch {self.branch!r} on {self._git.safe_url} was rewritten: the new "
                f"tip {tip} does not descend from {origin} {base}; refusing it (allowHistoryRewrite is off)",
                revision=tip,
                base=base,
            )
        if tip == previous and not base:
            return PollResult(tip=tip, changed=False, fetched=fetched, previous=previous)
        self._update_ref(_ACCEPTED, tip)
        return PollResult(
            tip=tip,
            changed=tip != previous,
            fetched=fetched,
            previous=previous,
            rewritten=bool(base),
            fork_point=self.fork_point(base, tip) if base else "",
        )

    @property
    def branch(self) -> str:
        """The branch followed (its short name). Unnamed in the config, it is the one the remote's
        ``HEAD`` names, asked once; while the remote cannot be asked (a start during a git outage),
        the one this cache's clone follows, and the remote is asked again next time."""
        if not self._branch:
            try:
                self._branch = self._head_branch()
            except SourceError:
                cloned = self._cloned_branch()
                if not cloned:
                    raise
                return cloned
        return self._branch

    def _cloned_branch(self) -> str:
        """The branch this cache's clone follows (the ``HEAD`` its clone set), "" without a clone."""
        if not self._cloned():
            return ""
        try:
            ref = self._git.run(["symbolic-ref", "HEAD"], cwd=self.git_dir, action="symbolic-ref")
            return branch_name(ref.strip()) if ref.strip().startswith(_HEADS) else ""
        except SourceError:
            return ""

    def _head_branch(self) -> str:
        """The branch the remote's ``HEAD`` names (``git ls-remote --symref``)."""
        out = self._git.run(
            ["ls-remote", "--symref", "--", self.options.url, "HEAD"], cwd=None, action="ls-remote"
        )
        for line in out.splitlines():
            target, tab, name = line.partition("\t")
            if tab and name.strip() == "HEAD" and target.startswith(f"ref: {_HEADS}"):
                return branch_name(target.removeprefix("ref: ").strip())
        raise SourceError(f"the HEAD of {self._git.safe_url} names no branch; give the branch to follow")

    def _receive(self, tip: str) -> bool:
        """Clone or fetch so that the cache holds ``tip``; whether anything was fetched. A tip whose
        objects git's fsck checks refused is refused again, without fetching, while it is the tip."""
        if tip in self._refused:
            raise self._refused[tip]
        try:
            cloned = not self._cloned()
            if not cloned and self._ref(_FETCHED) == tip:
                return False
            # The transfer of a new tip, a span of its own inside the poll (ls-remote stays outside).
            operation = {"syncer.revision": tip, "syncer.git.operation": "clone" if cloned else "fetch"}
            with span("syncer.git.fetch", operation):
                if cloned:
                    self._clone()
                if self._ref(_FETCHED) != tip:
                    self._fetch()
                return True
        except RefusedObjects as err:
            refused = RefusedObjects(
                f"the tip {tip} of branch {self.branch!r} on {self._git.safe_url} holds objects git's "
                f"checks refuse ({err}); refusing it until the branch moves",
                revision=tip,
            )
            self._refused = {tip: refused}
            raise refused from None

    def remote_tip(self) -> str:
        """The commit the remote branch points at now, by ``git ls-remote`` (no objects are fetched).
        Only the exact ref ``refs/heads/<branch>`` counts, never a longer name ending like it."""
        ref = f"{_HEADS}{self.branch}"
        out = self._git.run(["ls-remote", "--", self.options.url, ref], cwd=None, action="ls-remote")
        for line in out.splitlines():
            sha, _, name = line.partition("\t")
            if name.strip() == ref and _FULL_SHA.match(sha.strip()):
                return sha.strip()
        raise SourceError(f"branch {self.branch!r} does not exist on {self._git.safe_url}")

    def holds(self, revision: str) -> bool:
        """Whether the repository holds the commit ``revision``: this cache does, or the remote does
        and it is fetched by its id now (a commit a force push left behind is still the remote's).
        False when the remote answers that it has no such object (a record naming a commit nobody
        pushed); a remote that cannot be asked is a ``SourceError``, never an answer."""
        if self.contains(revision):
            return True
        if revision in self._unknown or not _FULL_SHA.match(revision):
            return False
        self._use_origin()
        try:
            self._git.run(["fetch", "--no-tags", "origin", revision], cwd=self.git_dir, action="fetch by id")
        except SourceError as err:
            if not any(marker in str(err).lower() for marker in _NO_SUCH_OBJECT):
                raise
        if self.contains(revision):
            return True
        self._unknown[revision] = None
        while len(self._unknown) > _UNKNOWN_KEPT:
            del self._unknown[next(iter(self._unknown))]
        return False

    def contains(self, revision: str) -> bool:
        """Whether the clone holds the commit ``revision`` (a full id)."""
        if not self._cloned() or not _FULL_SHA.match(revision):
            return False
        code, _ = self._git.run_status(
            ["cat-file", "-e", f"{revision}^{{commit}}"],
            cwd=self.git_dir,
            action=f"looking up {revision}",
            accept=range(256),
            lazy=False,
        )
        return code == 0

    def is_ancestor(self, ancestor: str, descendant: str) -> bool:
        """Whether ``ancestor`` is ``descendant`` or one of its ancestors; a revision the clone does not
        hold is no ancestor. A git failure is a ``SourceError``, never an answer."""
        if ancestor == descendant:
            return True
        if not self.contains(ancestor):
            return False
        code, _ = self._git.run_status(
            ["merge-base", "--is-ancestor", ancestor, descendant],
            cwd=self.git_dir,
            action="checking ancestry",
            accept=(0, 1),
        )
        if code == 1:
            # git answers "not an ancestor" too when an object on the way is missing.
            self._git.run(
                ["rev-list", "--count", descendant],
                cwd=self.git_dir,
                action=f"walking the history of {descendant}",
            )
        return code == 0

    def fork_point(self, old: str, new: str) -> str:
        """The newest common ancestor of ``old`` and ``new`` (``""`` when none, or ``old`` is unknown)."""
        if not self.contains(old):
            return ""
        code, out = self._git.run_status(
            ["merge-base", old, new], cwd=self.git_dir, action="finding the fork point", accept=(0, 1)
        )
        return out.strip() if code == 0 else ""

    def common_ancestor(self, revisions: list[str]) -> str:
        """The newest commit every one of ``revisions`` descends from (``git merge-base --octopus``;
        ``""`` when they share none). Every revision must be one the clone holds."""
        if len(set(revisions)) <= 1:
            return revisions[0] if revisions else ""
        code, out = self._git.run_status(
            ["merge-base", "--octopus", *revisions],
            cwd=self.git_dir,
            action="finding the common ancestor of recorded revisions",
            accept=(0, 1),
        )
        return out.split()[0] if code == 0 and out.strip() else ""

    def is_shallow(self) -> bool:
        return (self.git_dir / "shallow").is_file()

    @property
    def last_synced(self) -> str:
        """The revision last passed to ``mark_synced`` (kept in the cache across restarts), or ``""``."""
        return self._ref(_SYNCED) if self._cloned() else ""

    @property
    def last_accepted(self) -> str:
        return self._ref(_ACCEPTED) if self._cloned() else ""

    def mark_synced(self, revision: str) -> None:
        """Record that ``revision`` went through the pipeline; later tips must descend from it."""
        with self._using_cache():
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
        with self._using_cache():
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
        return Snapshot(revision=sha, tree_path=target, git_dir=self.git_dir, branch=self.branch)

    def remove_checkout(self, revision: str) -> None:
        with self._using_cache():
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
        args = ["clone", "--bare", "--no-tags", "--single-branch", "--branch", self.branch]
        if self.local:
            args += ["--no-local", "--no-hardlinks"]
        elif self.options.clone_filter:
            args.append(f"--filter={self.options.clone_filter}")
        try:
            self.fetch_count += 1
            self._git.run(
                [*args, "--", self.options.url, str(staging / "repo.git")], cwd=None, action="clone"
            )
            os.replace(staging / "repo.git", self.git_dir)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        self._update_ref(_FETCHED, f"{_HEADS}{self.branch}")

    def _use_origin(self) -> None:
        """The cache's ``origin`` is the configured URL (it may have changed since the clone)."""
        if self._origin_url() != self.options.url:
            self._git.run(
                ["remote", "set-url", "--", "origin", self.options.url], cwd=self.git_dir, action="set-url"
            )

    def _fetch(self) -> None:
        self.fetch_count += 1
        refspec = f"+{_HEADS}{self.branch}:{_FETCHED}"
        self._use_origin()
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

    def _descends(self, tip: str, base: str) -> bool:
        return self.is_ancestor(base, tip)


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
