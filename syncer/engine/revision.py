"""From a git source to a verified, validated desired fleet, keeping the last good revision in force.

One call to ``RevisionGate.advance`` takes the branch tip through source -> verify -> manifests, then
the guard policy when one is given (``RevisionGate.judge``); a revision resumed from the clusters'
records or rebuilt for a rollback goes through the same checks, guards included. A tip
that fails any stage is rejected whole: the rejection (with every problem found) is returned as a
value and remembered, the last good revision stays the one in force, and the same bad tip is not
tried again until the branch moves.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import TYPE_CHECKING

from syncer.config import TrustPolicy, VerifyMode
from syncer.config.settings import GIT_TIMEOUT
from syncer.domain import DesiredFleet
from syncer.engine.trust_base import BaseJudge, IgnoredBase
from syncer.errors import (
    CacheUnusable,
    GuardRejected,
    HistoryRewritten,
    ManifestError,
    RefusedObjects,
    SourceError,
    SyncerError,
    UnexpectedFailure,
    VerificationError,
)
from syncer.manifests import LoadOptions, load_fleet
from syncer.tracing import span

if TYPE_CHECKING:  # git and the verifier load only when a revision is fetched (not for a folder)
    from syncer.source import GitSource, Snapshot
    from syncer.verify import VerificationResult


@dataclass(frozen=True)
class RevisionOptions:
    """How a revision is judged: the verification mode (``None``: the policy's) and loader limits."""

    mode: VerifyMode | None = None
    load: LoadOptions = field(default_factory=LoadOptions)
    timeout: float = GIT_TIMEOUT


@dataclass(frozen=True)
class PreparedRevision:
    """A revision that passed every check: its desired fleet and the signature verdicts."""

    revision: str
    fleet: DesiredFleet
    verification: VerificationResult
    snapshot: Snapshot


class Stage(StrEnum):
    SOURCE = "source"
    VERIFY = "verify"
    MANIFESTS = "manifests"
    GUARDS = "guards"
    INTERNAL = "internal-error"


@dataclass(frozen=True)
class Rejection:
    """Why a revision was not taken: the stage that refused it and the error, with every problem."""

    revision: str
    stage: Stage
    error: SyncerError

    @property
    def failed_source(self) -> bool:
        """Whether git (or the source's cache) could not be asked: an error of the source, no verdict
        on any revision."""
        return self.stage is Stage.SOURCE and not self.revision

    @property
    def message(self) -> str:
        if self.failed_source:
            return (
                str(self.error)
                if isinstance(self.error, CacheUnusable)
                else f"git fetch failed: {self.error}"
            )
        return f"revision {self.revision[:12] or '(unknown)'} rejected by {self.stage}: {self.error}"

    @property
    def identity(self) -> tuple[str, Stage, str, str]:
        """What makes two rejections one: the revision, the stage and the kind of error (its type and,
        for a signature, its verdict), never its text, which may carry a time, a temporary path or
        the clusters that record a base."""
        verdict = self.error.verdict if isinstance(self.error, VerificationError) else ""
        return (self.revision, self.stage, type(self.error).__name__, verdict)

    def same_as(self, other: Rejection | None) -> bool:
        """True when ``other`` is this rejection again. One without a revision (git could not be
        asked) is the same only as itself (the gate gives the one already told back while the same
        part of the cache stays unusable): each poll that fails otherwise is told and counted."""
        if other is self:
            return True
        return other is not None and bool(self.revision) and self.identity == other.identity


class PollOutcome(StrEnum):
    ACCEPTED = "accepted"
    UNCHANGED = "unchanged"
    REJECTED = "rejected"


@dataclass(frozen=True)
class Advance:
    """The result of one ``advance``: what happened, the revision in force, any rejection, and the
    recorded revisions not used as the base of a new tip's checks (``syncer.engine.trust_base``)."""

    outcome: PollOutcome
    current: PreparedRevision | None
    rejection: Rejection | None = None
    ignored_bases: tuple[IgnoredBase, ...] = ()


def prepare(
    source: GitSource, revision: str, policy: TrustPolicy, options: RevisionOptions, since: str = ""
) -> PreparedRevision:
    """Check out ``revision``, verify it (strict mode checks every commit after ``since``), render it
    and judge the two-person rules keyed on clusters (``syncer.engine.approvals``).

    Raises SourceError, VerificationError or ManifestError; nothing is returned for a bad revision.
    """
    sha = source.resolve(revision)
    from syncer.verify import VerifyOptions, verify_revision

    verify = VerifyOptions(revision=sha, since=since, mode=options.mode, timeout=options.timeout)
    with span("syncer.verify", {"syncer.revision": sha}):
        result = verify_revision(source.git_dir, policy, verify).require_trusted()
    with span("syncer.render", {"syncer.revision": sha}) as rendering:
        snapshot = source.checkout(sha)
        fleet = load_fleet(snapshot.tree_path, sha, options.load)
        rendering.set("syncer.clusters", len(fleet.clusters))
    from syncer.engine.approvals import require_cluster_approvals

    result = require_cluster_approvals(
        source, policy, fleet, result, load=options.load, timeout=options.timeout
    )
    return PreparedRevision(sha, fleet, result, snapshot)


def _stage_of(error: SyncerError) -> Stage:
    if isinstance(error, VerificationError):
        return Stage.VERIFY
    if isinstance(error, ManifestError):
        return Stage.MANIFESTS
    if isinstance(error, GuardRejected):
        return Stage.GUARDS
    if isinstance(error, UnexpectedFailure):
        return Stage.INTERNAL
    return Stage.SOURCE


class RevisionGate:
    """Holds the revision in force and lets a new tip replace it only when it passes every check."""

    def __init__(
        self,
        source: GitSource,
        policy: TrustPolicy,
        options: RevisionOptions = RevisionOptions(),
        recorded: Callable[[Collection[str]], Mapping[str, str]] | None = None,
        *,
        judge: Callable[[DesiredFleet, DesiredFleet | None], object] | None = None,
    ):
        """``recorded`` returns the revisions the fleet's clusters record as applied (each with who
        records it), asked with the clusters of the revision in force (``ClusterReads``): every new
        tip must descend from them, and those that verify give the base of the checks
        (``BaseJudge``) beside this gate's own revision."""
        self.source = source
        self.policy = policy
        self.options = options
        self.recorded = recorded
        self.current: PreparedRevision | None = None
        self.last_rejection: Rejection | None = None
        # The cache failure told last: the same one again is not told again until the cache works.
        self._cache_fault: Rejection | None = None
        # The last check of a tip that passed source, verify and manifests (the guard policy): it
        # raises GuardRejected to reject the tip; it gets the tip's fleet and the one in force.
        self.judge = judge
        self._descends: dict[tuple[str, str], bool] = {}
        self.bases = BaseJudge(source, policy, options.mode, options.timeout)

    def advance(self) -> Advance:
        """Poll the branch; take a new tip through verify and manifests; never lose the revision in force."""
        recorded: dict[str, str] = {}
        try:
            in_force = self.current.fleet.clusters if self.current else ()
            recorded = dict(self.recorded(in_force)) if self.recorded else {}
            poll = self.source.poll(recorded)
        except HistoryRewritten as err:
            return self._reject(err.revision, err)
        except SyncerError as err:
            # A tip git refuses is rejected like any bad tip; like an outage, it leaves nothing new to
            # take, so a replica with no revision in force resumes what the clusters record.
            rejected = self._reject(err.revision if isinstance(err, RefusedObjects) else "", err)
            if self.current is None and self._resume(recorded):
                return Advance(PollOutcome.REJECTED, self.current, rejected.rejection)
            return rejected
        tip = poll.tip
        # Recorded commits the repository does not hold are no base either (the fleet pass shows them
        # on the clusters that record them: ``syncer.engine.unknown_records``).
        recorded = {r: who for r, who in recorded.items() if r not in self.source.unknown}
        if self.last_rejection is not None and not self.last_rejection.revision:
            self.last_rejection = None  # git and the cache answer again: the source failure is over
        if self.current is not None and tip == self.current.revision:
            return Advance(PollOutcome.UNCHANGED, self.current)
        if self.last_rejection is not None and tip == self.last_rejection.revision:
            return Advance(PollOutcome.REJECTED, self.current, self.last_rejection)
        own = {self.current.revision: "the revision in force"} if self.current else {}
        own = own or {self.source.last_synced: "the revision this replica last synced"}
        ignored: tuple[IgnoredBase, ...] = ()
        try:
            base = self.bases.choose(tip, own, recorded)
            ignored = base.ignored
            prepared = self._prepare(tip, base.revision)
        except SyncerError as err:
            return replace(self._reject(tip, err), ignored_bases=ignored)
        except Exception as err:  # a defect met on this tip's content: refused, never raised every poll
            return replace(self._reject(tip, UnexpectedFailure(err)), ignored_bases=ignored)
        previous, self.current, self.last_rejection = self.current, prepared, None
        self._cache_fault = None  # it was just written to
        self.bases.trust(prepared.revision)
        fault = None
        if previous is not None and previous.revision != prepared.revision:
            fault = self._cache_written(lambda: self.source.remove_checkout(previous.revision))
        return Advance(PollOutcome.ACCEPTED, prepared, fault, ignored_bases=ignored)

    def _resume(self, recorded: Mapping[str, str]) -> bool:
        """With no revision in force and git out of reach (a start during a git outage): take the
        newest revision the clusters record, checked and rendered again from this replica's cache, as
        the revision in force, so drift repair and health go on until git answers. False when the
        cache cannot give it (no clone yet, the commit is not there, or it no longer verifies) or the
        guard policy refuses it against what is live."""
        try:
            newest = self.bases.newest([r for r in recorded if r not in self.source.unknown])
            if not newest:
                return False
            self.current = self._prepare(newest)
        except SyncerError:
            return False
        return True

    @property
    def unknown(self) -> frozenset[str]:
        """The recorded commits the last poll found the repository does not hold."""
        return frozenset(self.source.unknown)

    def holds(self, revision: str) -> bool:
        """Whether the repository holds ``revision`` (fetched from the remote by its id when this
        cache lacks it); True when git cannot be asked now (the record then counts, as before)."""
        try:
            return self.source.holds(revision)
        except SyncerError:
            return True

    def admits(self, revision: str, recorded: str) -> bool:
        """Whether ``revision`` may replace ``recorded`` on a cluster: it descends from it (a revision
        this cache does not hold is not an ancestor), or the trust policy allows history rewrites."""
        if revision == recorded or self.source.options.allow_history_rewrite:
            return True
        key = (revision, recorded)
        if key not in self._descends:
            try:
                self._descends[key] = self.source.is_ancestor(recorded, revision)
            except SyncerError:
                return False  # asked again next time
        return self._descends[key]

    def descends(self, revision: str, ancestor: str) -> bool:
        """Whether ``revision`` is a later commit on ``ancestor``'s line of history (whatever the trust
        policy says of rewrites); False when either is not in this cache."""
        if revision == ancestor:
            return False
        try:
            return self.source.is_ancestor(ancestor, revision)
        except SyncerError:
            return False

    def rebuild(self, revision: str) -> DesiredFleet:
        """The desired fleet of an earlier revision (the last good one), verified on its own and
        judged by the guard policy as the change from what is live.

        Raises SourceError, VerificationError, ManifestError or GuardRejected."""
        return self._prepare(revision).fleet

    def _prepare(self, revision: str, since: str = "") -> PreparedRevision:
        """``prepare`` and then the guard policy (``judge``, against the revision in force): every
        revision this gate gives out, a new tip, one resumed or one rebuilt, passed both."""
        prepared = prepare(self.source, revision, self.policy, self.options, since)
        if self.judge is not None:
            self.judge(prepared.fleet, self.current.fleet if self.current else None)
        return prepared

    def mark_synced(self, revision: str) -> Rejection | None:
        """Remember ``revision`` as rolled out: the base of the next strict-mode check. A cache that
        cannot record it is this pass's source failure, returned (see ``_cache_written``)."""
        fault = self._cache_written(lambda: self.source.mark_synced(revision))
        if fault is None:
            self._cache_fault = None  # the cache works again
        return fault

    def _cache_written(self, write: Callable[[], None]) -> Rejection | None:
        """One write to the cache after the poll (a revision synced, an old checkout removed): its
        failure (the cache unusable, git unable to write a ref) is a failed poll like one met by the
        poll itself, never an exception out of the pass; a ``CacheUnusable`` is the same rejection
        object while the same part of the cache fails for the same reason (told once, counted
        every poll)."""
        try:
            write()
        except SourceError as err:
            return self._reject("", err).rejection
        return None

    def _reject(self, revision: str, error: SyncerError) -> Advance:
        rejection = Rejection(revision, _stage_of(error), error)
        told = self._told(rejection)
        if told is not None:
            self.last_rejection = told
            return Advance(PollOutcome.REJECTED, self.current, told)
        self.last_rejection = rejection
        if isinstance(error, CacheUnusable):
            self._cache_fault = rejection
        return Advance(PollOutcome.REJECTED, self.current, rejection)

    def _told(self, new: Rejection) -> Rejection | None:
        """The rejection already told that ``new`` is again: the same tip refused for the same
        reason (``Rejection.same_as``), or the same part of the cache unusable for the same reason
        (told once until it changes or the cache works again; each poll still counts as a failed
        poll)."""
        error = new.error
        if isinstance(error, CacheUnusable):
            told = self._cache_fault
            if told is None or not isinstance(told.error, CacheUnusable):
                return None
            return told if (told.error.path, told.error.reason) == (error.path, error.reason) else None
        last = self.last_rejection
        return last if last is not None and new.same_as(last) else None
