"""From a git source to a verified, validated desired fleet, keeping the last good revision in force.

One call to ``RevisionGate.advance`` takes the branch tip through source -> verify -> manifests, then
the guard policy when one is given (``RevisionGate.judge``). A tip
that fails any stage is rejected whole: the rejection (with every problem found) is returned as a
value and remembered, the last good revision stays the one in force, and the same bad tip is not
tried again until the branch moves.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING

from syncer.config import TrustPolicy, VerifyMode
from syncer.config.settings import GIT_TIMEOUT
from syncer.domain import DesiredFleet
from syncer.errors import (
    GuardRejected,
    HistoryRewritten,
    ManifestError,
    SyncerError,
    UnexpectedFailure,
    VerificationError,
)
from syncer.manifests import LoadOptions, load_fleet

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
    def message(self) -> str:
        return f"revision {self.revision[:12] or '(unknown)'} rejected by {self.stage}: {self.error}"


class PollOutcome(StrEnum):
    ACCEPTED = "accepted"
    UNCHANGED = "unchanged"
    REJECTED = "rejected"


@dataclass(frozen=True)
class Advance:
    """The result of one ``advance``: what happened, the revision in force, and any rejection."""

    outcome: PollOutcome
    current: PreparedRevision | None
    rejection: Rejection | None = None


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
    result = verify_revision(source.git_dir, policy, verify).require_trusted()
    snapshot = source.checkout(sha)
    fleet = load_fleet(snapshot.tree_path, sha, options.load)
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
        recorded: Callable[[], Mapping[str, str]] | None = None,
    ):
        """``recorded`` returns the revisions the fleet's clusters record as applied (each with who
        records it): every new tip must descend from them, and the newest is the base of the checks
        when this gate has none of its own (a restart, a new replica, an empty cache)."""
        self.source = source
        self.policy = policy
        self.options = options
        self.recorded = recorded
        self.current: PreparedRevision | None = None
        self.last_rejection: Rejection | None = None
        # The last check of a tip that passed source, verify and manifests (the guard policy): it
        # raises GuardRejected to reject the tip; it gets the tip's fleet and the one in force.
        self.judge: Callable[[DesiredFleet, DesiredFleet | None], object] | None = None
        self._descends: dict[tuple[str, str], bool] = {}

    def advance(self) -> Advance:
        """Poll the branch; take a new tip through verify and manifests; never lose the revision in force."""
        recorded: dict[str, str] = {}
        try:
            recorded = dict(self.recorded()) if self.recorded else {}
            poll = self.source.poll(recorded)
        except HistoryRewritten as err:
            return self._reject(err.revision, err)
        except SyncerError as err:
            rejected = self._reject("", err)
            if self.current is None and self._resume(recorded):
                return Advance(PollOutcome.REJECTED, self.current, rejected.rejection)
            return rejected
        tip = poll.tip
        if self.current is not None and tip == self.current.revision:
            return Advance(PollOutcome.UNCHANGED, self.current)
        if self.last_rejection is not None and tip == self.last_rejection.revision:
            return Advance(PollOutcome.REJECTED, self.current, self.last_rejection)
        if poll.rewritten:
            since = poll.fork_point
        else:
            known = [self.current.revision] if self.current else [self.source.last_synced]
            since = self._newest([*known, *recorded])
        try:
            prepared = prepare(self.source, tip, self.policy, self.options, since)
            if self.judge is not None:
                self.judge(prepared.fleet, self.current.fleet if self.current else None)
        except SyncerError as err:
            return self._reject(tip, err)
        except Exception as err:  # a defect met on this tip's content: refused, never raised every poll
            return self._reject(tip, UnexpectedFailure(err))
        previous, self.current, self.last_rejection = self.current, prepared, None
        if previous is not None and previous.revision != prepared.revision:
            self.source.remove_checkout(previous.revision)
        return Advance(PollOutcome.ACCEPTED, prepared)

    def _newest(self, revisions: list[str]) -> str:
        """Of revisions on one line of history (all ancestors of the tip), the newest."""
        newest = ""
        for revision in dict.fromkeys(r for r in revisions if r):
            if not newest or self.source.is_ancestor(newest, revision):
                newest = revision
        return newest

    def _resume(self, recorded: Mapping[str, str]) -> bool:
        """With no revision in force and git out of reach (a start during a git outage): take the
        newest revision the clusters record, checked and rendered again from this replica's cache, as
        the revision in force, so drift repair and health go on until git answers. False when the
        cache cannot give it (no clone yet, the commit is not there, or it no longer verifies)."""
        try:
            newest = self._newest(list(recorded))
            if not newest:
                return False
            self.current = prepare(self.source, newest, self.policy, self.options)
        except SyncerError:
            return False
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

    def rebuild(self, revision: str) -> DesiredFleet:
        """The desired fleet of an earlier revision (the last good one), verified on its own.

        Raises SourceError, VerificationError or ManifestError."""
        return prepare(self.source, revision, self.policy, self.options).fleet

    def mark_synced(self, revision: str) -> None:
        """Remember ``revision`` as rolled out: the base of the next strict-mode check."""
        self.source.mark_synced(revision)

    def _reject(self, revision: str, error: SyncerError) -> Advance:
        last = self.last_rejection
        if last is not None and revision and last.revision == revision and str(last.error) == str(error):
            return Advance(PollOutcome.REJECTED, self.current, last)
        self.last_rejection = Rejection(revision, _stage_of(error), error)
        return Advance(PollOutcome.REJECTED, self.current, self.last_rejection)
