"""What each cluster records about its own sync, so that any agent can resume from the clusters."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from enum import StrEnum

from syncer.domain.analysis import AnalysisRecord
from syncer.domain.applied import Inventory, InventorySource
from syncer.domain.changeset import FailureCause
from syncer.domain.gates import Abort, AwaitingPromotion, Promotion
from syncer.domain.moments import moment_of
from syncer.domain.objects import ObjectKey

# How many failed revisions a cluster remembers (oldest forgotten first).
BAD_REVISIONS_KEPT = 20


class SyncPhase(StrEnum):
    """``applying``: an apply of ``revision`` started; ``applied``: it finished, health pending;
    ``healthy``: the gate saw it healthy; ``failed``: apply or health failed; ``rolled-back``: the
    cluster was put back on the last good revision."""

    NEVER = "never"
    APPLYING = "applying"
    APPLIED = "applied"
    HEALTHY = "healthy"
    FAILED = "failed"
    ROLLED_BACK = "rolled-back"


@dataclass(frozen=True, order=True)
class InventoryEntry:
    """One object syncer applied: enough to find it again and to know it is the same object."""

    api_version: str
    kind: str
    namespace: str
    name: str
    uid: str = ""

    def key(self, cluster: str) -> ObjectKey:
        return ObjectKey(cluster, self.api_version.rpartition("/")[0], self.kind, self.namespace, self.name)


@dataclass(frozen=True)
class FailedRevision:
    """A revision that failed on one cluster after its own apply there, and why.

    ``content`` is the hash of the objects it had for the cluster (the same objects under another
    commit are the same failure). ``cause`` says whether git has to change them (``content``) or the
    live state may (``live``); for a live cause ``objects`` are the objects whose live state stood
    in the way and ``fingerprint`` what their live state was when it failed (empty: nothing to
    watch). ``at`` is when it was recorded (seconds since the epoch)."""

    revision: str
    content: str = ""
    cause: FailureCause = FailureCause.CONTENT
    reason: str = ""
    objects: tuple[InventoryEntry, ...] = ()
    fingerprint: str = ""
    at: float = 0.0

    def matches(self, revision: str, content: str) -> bool:
        """Whether this is the failure of ``revision``, or of the same objects under another id."""
        return (bool(self.revision) and self.revision == revision) or (
            bool(content) and self.content == content
        )


@dataclass(frozen=True)
class RetryRequest:
    """A person's ``syncer retry``: failures recorded before ``at`` (of ``revision``; of any revision
    when empty) are tried again. ``by`` and ``reason`` say who asked and why."""

    revision: str = ""
    by: str = ""
    reason: str = ""
    at: float = 0.0

    def covers(self, failure: FailedRevision) -> bool:
        return failure.at < self.at and self.revision in ("", failure.revision)

    def lifts(self, abort: Abort) -> bool:
        """Whether this retry, made after ``abort``, lets its revision be tried again."""
        return abort.at < self.at and self.revision in ("", abort.revision)

    def restarts(self, record: AnalysisRecord) -> bool:
        """Whether this retry, made after ``record``'s analysis began, starts it afresh (a retry of
        another revision leaves its counts as they are)."""
        return record.started < self.at and self.revision in ("", record.revision)


@dataclass(frozen=True)
class Suspension:
    """A person's ``syncer suspend``: while ``reason`` is set, nothing syncer does changes the
    cluster (no apply, prune, drift repair or rollback from any replica) until ``syncer resume``;
    ``by`` and ``at`` say who and when. Once resumed (``reason`` empty), ``by`` and ``at`` say who
    resumed it and when, and ``resumed`` why (when they said)."""

    reason: str = ""
    by: str = ""
    at: float = 0.0
    resumed: str = ""

    @property
    def active(self) -> bool:
        return bool(self.reason)

    def describe(self) -> str:
        """``suspended by ops at 2026-12-03 10:00 UTC: incident 42`` ("" when not suspended)."""
        if not self.active:
            return ""
        when = moment_of(self.at)
        return f"suspended by {self.by or 'someone'} at {when}: {self.reason}"

    def describe_end(self) -> str:
        """``resumed by ops at 2026-12-03 11:00 UTC: incident 42 over`` (``resumed`` when the record
        says no more; "" while suspended)."""
        if self.active:
            return ""
        if not self.by:
            return "resumed"
        when = moment_of(self.at)
        return f"resumed by {self.by} at {when}" + (f": {self.resumed}" if self.resumed else "")


@dataclass(frozen=True)
class Pin:
    """A person's ``syncer rollback``: while ``revision`` is set, the cluster is kept on it (verified
    again from git like any revision) and takes no newer one until ``syncer resume``; ``by``,
    ``reason`` and ``at`` say who, why and when."""

    revision: str = ""
    by: str = ""
    reason: str = ""
    at: float = 0.0

    @property
    def active(self) -> bool:
        return bool(self.revision)

    def describe(self) -> str:
        """``pinned to 0123456789ab by ops at 2026-12-03 10:00 UTC: bad canary`` ("" when none)."""
        if not self.active:
            return ""
        when = moment_of(self.at)
        return f"pinned to {self.revision[:12]} by {self.by or 'someone'} at {when}: {self.reason}"


@dataclass(frozen=True)
class UnknownRecord:
    """A commit the cluster's record named that the repository does not hold (a forged or corrupt
    record): found by a pass at ``at`` and ignored; ``in_force`` is the revision the pass rolled out
    instead. Kept, as evidence, until the cluster takes another revision."""

    revision: str = ""
    at: float = 0.0
    in_force: str = ""

    @property
    def active(self) -> bool:
        return bool(self.revision)

    def describe(self) -> str:
        """``records unknown commit 0123456789ab (not in the repository; ignored since ...)``."""
        if not self.active:
            return ""
        when = moment_of(self.at)
        return f"records unknown commit {self.revision[:12]} (not in the repository; ignored since {when})"


@dataclass(frozen=True)
class ClusterSyncState:
    """The sync state one cluster keeps (in a ConfigMap in the agent's namespace).

    Times are seconds since the epoch (0 when never). ``revision`` is what was last applied (or being
    applied), ``last_good`` the last revision that was applied and healthy, ``failures`` the
    revisions that failed here after their own apply, with the cause (kept beside the state, so that
    a rebuilt state keeps them), ``apply_failure`` why the apply of ``revision`` failed (None: it did
    not), ``degraded_before`` why the cluster was not healthy just before ``revision`` was applied
    (empty: it was, or it ran nothing), ``retry`` a person's request to try failures again.
    ``rebuilt`` and ``stored``
    say how the state was read: rebuilt from labelled objects (the stored one was unreadable), or
    not stored at all (``stored=False``: the cluster has no sync state). ``window_override`` is an
    operator's reason to change the cluster outside its maintenance windows until
    ``window_override_until`` (``syncer override-window``); ``window`` says why a change to it waits
    for its maintenance window (empty when none waits), as an agent's pass judged it at
    ``window_at`` (``syncer.domain.window_record``); ``suspension`` is a person's ``syncer
    suspend`` (kept beside the state like the override). ``awaiting`` is the manual gate the
    cluster's wave waits at (the agent's record); ``promotion`` and ``abort`` are a person's ``syncer
    promote`` and ``syncer abort`` (kept beside the state like the override); ``pin`` a person's
    ``syncer rollback``. ``analysis`` holds the counts of
    the canary analysis of ``revision``, so a restarted agent goes on from them, and ``background``
    those of the rollout's background analysis of ``revision`` on the cluster. ``unknown_record``
    is a commit this record named that the repository does not hold, ignored (``UnknownRecord``).
    """

    cluster: str
    revision: str = ""
    phase: SyncPhase = SyncPhase.NEVER
    wave: str = ""
    inventory: tuple[InventoryEntry, ...] = ()
    health: str = ""
    health_detail: str = ""
    last_good: str = ""
    failures: tuple[FailedRevision, ...] = ()
    apply_failure: FailedRevision | None = None
    degraded_before: str = ""
    retry: RetryRequest = RetryRequest()
    last_error: str = ""
    trace_id: str = ""  # the trace of the cluster's last apply when it was traced (docs/tracing.md)
    applied_at: float = 0.0
    healthy_since: float = 0.0
    updated_at: float = 0.0
    window: str = ""
    window_at: float = 0.0
    window_override: str = ""
    window_override_until: float = 0.0
    suspension: Suspension = Suspension()
    awaiting: AwaitingPromotion = field(default_factory=AwaitingPromotion)
    promotion: Promotion = field(default_factory=Promotion)
    abort: Abort = field(default_factory=Abort)
    pin: Pin = Pin()
    analysis: AnalysisRecord = field(default_factory=AnalysisRecord)
    background: AnalysisRecord = field(default_factory=AnalysisRecord)
    unknown_record: UnknownRecord = UnknownRecord()
    rebuilt: bool = field(default=False, compare=False)
    stored: bool = field(default=True, compare=False)

    @property
    def bad_revisions(self) -> tuple[str, ...]:
        """The revisions that failed here, oldest first."""
        return tuple(f.revision for f in self.failures if f.revision)

    def with_failure(self, failure: FailedRevision) -> ClusterSyncState:
        """This state remembering ``failure`` (in place of an earlier failure of the same revision
        or objects), the oldest forgotten beyond ``BAD_REVISIONS_KEPT``."""
        kept = tuple(f for f in self.failures if not f.matches(failure.revision, failure.content))
        return replace(self, failures=(*kept[-(BAD_REVISIONS_KEPT - 1) :], failure))

    def failure_of(self, revision: str, content: str) -> FailedRevision | None:
        """The recorded failure of ``revision`` (or of the same objects under another id), if any."""
        return next((f for f in reversed(self.failures) if f.matches(revision, content)), None)

    def inventory_keys(self) -> frozenset[ObjectKey]:
        return frozenset(entry.key(self.cluster) for entry in self.inventory)

    def applied_inventory(self) -> Inventory:
        """What syncer applied here, and how far that record can be trusted for pruning."""
        if not self.stored:
            return Inventory.missing(self.cluster)
        source = InventorySource.REBUILT if self.rebuilt else InventorySource.RECORDED
        return Inventory.of(self.cluster, self.inventory_keys(), self.revision, source)
