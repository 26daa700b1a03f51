"""What an apply did: per object the action taken and its outcome, per cluster."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from enum import StrEnum

from syncer.domain.objects import ObjectKey
from syncer.domain.plans import Action, FieldChange


class FailureCause(StrEnum):
    """Why a revision failed on a cluster. ``content``: the apiserver refused its objects (invalid,
    an admission denial) or what it applied did not become healthy; only a change in git helps.
    ``live``: the cluster's live state stood in the way (another field manager's fields, an object
    syncer does not own, a permission, an apiserver that did not answer); a change there may help."""

    CONTENT = "content"
    LIVE = "live"


class EntryOutcome(StrEnum):
    """``applied``: the server accepted it; ``skipped``: nothing to do or not attempted (the cluster
    stopped before it, or pruning was opted out); ``failed``: the server refused it."""

    APPLIED = "applied"
    SKIPPED = "skipped"
    FAILED = "failed"


@dataclass(frozen=True)
class ChangeEntry:
    """One object of a change set: ``Kind/ns/name``, the planned action, what happened and why; for a
    failed one, ``cause`` says whether the objects or the live state were refused (None: unknown);
    ``fields`` are the plan's field changes of the object that was written (secret values masked by
    the plan, as ``syncer diff`` shows them)."""

    key: ObjectKey
    action: Action
    outcome: EntryOutcome
    message: str = ""
    uid: str = ""
    cause: FailureCause | None = None
    fields: tuple[FieldChange, ...] = field(default=(), compare=False)

    @property
    def subject(self) -> str:
        return self.key.subject


# The message of a prune whose object was deleted by someone else first.
ALREADY_GONE = "already gone"


@dataclass(frozen=True)
class ChangeSet:
    """The result of applying one cluster's plan. ``error`` says why the cluster stopped, if it did."""

    cluster: str
    revision: str
    entries: tuple[ChangeEntry, ...] = ()
    error: str = ""
    trace_id: str = ""  # the trace of the apply when traced (``syncer.tracing``), else ""

    @property
    def ok(self) -> bool:
        return not self.error and all(e.outcome is not EntryOutcome.FAILED for e in self.entries)

    @property
    def writes(self) -> int:
        return sum(1 for e in self.entries if e.outcome is EntryOutcome.APPLIED)

    def kept(self, shown: int = 5) -> str:
        """What the apply left that git no longer wants, and why, for the log: the objects kept
        (an opted-out prune, no longer labelled, no proof syncer applied it, pruning off) and the
        prunes refused by the look just before the delete; "" when none."""
        kept = [
            e
            for e in self.entries
            if e.outcome is EntryOutcome.SKIPPED
            and (e.action is Action.KEEP or (e.action is Action.PRUNE and e.message != ALREADY_GONE))
        ]
        if not kept:
            return ""
        named = "; ".join(f"{e.subject} ({e.message})" for e in kept[:shown])
        more = f"; and {len(kept) - shown} more" if len(kept) > shown else ""
        return f"kept {len(kept)} object(s) git no longer wants: {named}{more}"

    def counts(self) -> dict[str, int]:
        """Applied objects by action (``create``, ``update``, ``prune``, ...), for metrics."""
        return dict(Counter(str(e.action) for e in self.entries if e.outcome is EntryOutcome.APPLIED))
