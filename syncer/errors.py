"""The one exception tree of syncer.

Every error syncer raises on purpose is a ``SyncerError``. Errors carry the thing they concern (a
file and line, a Kubernetes object, a commit) and keep their cause through ``raise ... from``.
Client-library errors are translated into this tree only in ``syncer.kube``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


class SyncerError(Exception):
    """Base of every error syncer raises on purpose."""


class ConfigError(SyncerError):
    """The agent's own configuration or policy files are invalid."""


class SourceError(SyncerError):
    """The git source could not produce a revision (remote unreachable, branch gone, history rewritten)."""


class CacheUnusable(SourceError):
    """The source's cache folder cannot be used (read-only, full, not a folder): ``path`` is what
    failed and ``reason`` the system's answer. A fault of this machine, not of git or the revision."""

    def __init__(self, cache_dir: str, *, path: str, reason: str) -> None:
        self.path = path
        self.reason = reason
        super().__init__(f"the source cache {cache_dir} cannot be used: {path}: {reason}")


class VerificationError(SyncerError):
    """A revision is not trusted: a missing, unknown, expired or out-of-scope signature.

    ``verdict`` names the failing verdict (``unsigned``, ``unknown-key``, ...) when there is one.
    """

    def __init__(self, message: str, *, verdict: str = "") -> None:
        self.verdict = verdict
        super().__init__(message)


class HistoryRewritten(VerificationError):
    """A new tip does not descend from a revision already taken (by this replica or recorded as
    applied by a cluster): taking it would roll the fleet back or drop trusted history.

    ``revision`` is the refused tip and ``base`` the revision it does not descend from.
    """

    def __init__(self, message: str, *, revision: str, base: str) -> None:
        self.revision = revision
        self.base = base
        super().__init__(message, verdict="history-rewritten")


class RefusedObjects(VerificationError):
    """A revision holds objects git's own checks (``fsck`` on clone and fetch) refuse: a tree with a
    ``.git`` entry or a bad mode, a malformed commit. The content's fault, not an outage: the tip is
    rejected like an untrusted one and not fetched again while it stays the tip.

    ``revision`` is the refused tip (``""`` until the source names it)."""

    def __init__(self, message: str, *, revision: str = "") -> None:
        self.revision = revision
        super().__init__(message, verdict="refused-objects")


@dataclass(frozen=True)
class Location:
    """A place in a file of the fleet repository; line and column count from 1, 0 when unknown."""

    path: str
    line: int = 0
    column: int = 0

    def __str__(self) -> str:
        if self.line and self.column:
            return f"{self.path}:{self.line}:{self.column}"
        if self.line:
            return f"{self.path}:{self.line}"
        return self.path


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a revision's manifests."""

    kind: str
    message: str
    location: Location

    def __str__(self) -> str:
        return f"{self.location}: {self.kind}: {self.message}"


class ManifestError(SyncerError):
    """A revision's manifests are invalid. Lists every problem found, each with file:line:column."""

    def __init__(self, problems: Sequence[Problem]) -> None:
        if not problems:
            raise ValueError("ManifestError needs at least one problem")
        self.problems: tuple[Problem, ...] = tuple(problems)
        lines = "\n".join(f"  {p}" for p in self.problems)
        super().__init__(f"{len(self.problems)} problem(s) in the manifests:\n{lines}")


class KubeError(SyncerError):
    """A Kubernetes API call failed. ``subject`` names the object (``Kind/ns/name``) when known."""

    def __init__(self, message: str, *, cluster: str = "", subject: str = "", status: int = 0) -> None:
        self.cluster = cluster
        self.subject = subject
        self.status = status
        self.detail = message
        where = " ".join(part for part in (cluster and f"[{cluster}]", subject) if part)
        super().__init__(f"{where}: {message}" if where else message)


class NotFound(KubeError):
    """404: the object or its kind does not exist."""


class Forbidden(KubeError):
    """403: the identity syncer runs as may not do this."""


@dataclass(frozen=True)
class FieldConflict:
    """A field another field manager owns, as reported by a 409 from server-side apply."""

    manager: str
    field: str


class Conflict(KubeError):
    """409: server-side apply found fields owned by another field manager."""

    def __init__(
        self, message: str, *, conflicts: Sequence[FieldConflict] = (), cluster: str = "", subject: str = ""
    ) -> None:
        self.conflicts = tuple(conflicts)
        super().__init__(message, cluster=cluster, subject=subject, status=409)

    @property
    def managers(self) -> tuple[str, ...]:
        return tuple(sorted({c.manager for c in self.conflicts}))


@dataclass(frozen=True)
class FieldCause:
    """One reason the apiserver gave for rejecting an object."""

    field: str
    message: str


class Invalid(KubeError):
    """422: the apiserver rejected the object (schema or admission); never retried."""

    def __init__(
        self, message: str, *, causes: Sequence[FieldCause] = (), cluster: str = "", subject: str = ""
    ) -> None:
        self.causes = tuple(causes)
        super().__init__(message, cluster=cluster, subject=subject, status=422)


class TooManyRequests(KubeError):
    """429: throttled; ``retry_after`` is the server's hint in seconds (0 when none)."""

    def __init__(
        self, message: str, *, retry_after: float = 0.0, cluster: str = "", subject: str = ""
    ) -> None:
        self.retry_after = retry_after
        super().__init__(message, cluster=cluster, subject=subject, status=429)


class ServerError(KubeError):
    """5xx or a broken connection: the apiserver could not answer; may be retried."""


@dataclass(frozen=True)
class GuardFailure:
    """One rule or limit a revision broke: its name, the cluster the change was planned for ("" for
    a limit: it concerns the whole revision), its outcome (``fail`` or ``error``) and the line that
    says why."""

    guard: str
    cluster: str
    outcome: str
    line: str


class GuardRejected(SyncerError):
    """A revision breaks a rule or limit of the agent's guard policy; ``verdicts`` has one failure per
    rule and change (with the inputs the expression read) or per limit."""

    def __init__(self, message: str, *, verdicts: Sequence[GuardFailure] = ()) -> None:
        self.verdicts = tuple(verdicts)
        super().__init__(message)

    @property
    def failures(self) -> tuple[str, ...]:
        """One line per failure."""
        return tuple(v.line for v in self.verdicts)

    def verdicts_of(self, cluster: str) -> tuple[GuardFailure, ...]:
        """The failures that concern ``cluster``: its changes' rules and every limit."""
        return tuple(v for v in self.verdicts if v.cluster in ("", cluster))


class UnexpectedFailure(SyncerError):
    """Judging a revision failed in a way syncer did not foresee (a defect, not a verdict): the revision
    is refused as any bad one is, and ``cause`` keeps what was raised."""

    def __init__(self, cause: Exception) -> None:
        self.cause = cause
        said = str(cause)
        said = said if len(said) <= 300 else said[:300] + "..."
        super().__init__(f"unexpected {type(cause).__name__}: {said}")


class RolloutError(SyncerError):
    """A wave could not be rolled out or did not become healthy in time."""


class GateRefused(RolloutError):
    """A person's ``syncer promote`` or ``syncer abort`` that does not name what the fleet waits for
    or has in flight (the reason says what it does)."""


class FactOutOfTurn(RolloutError):
    """The rollout machine was given a fact that does not answer the effect it asked last (or came
    after its end): a fault of the engine that runs it, never of the fleet."""


class RevisionNotNamed(RolloutError):
    """A person's act (``promote``, ``abort``, ``rollback``, ``retry``) whose revision names none, or
    several, of the revisions it could concern; the message lists them. ``matched`` holds the ones an
    ambiguous prefix names."""

    def __init__(self, message: str, *, given: str = "", matched: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.given = given
        self.matched = matched


class FencedOut(SyncerError):
    """This replica may no longer write to clusters: it lost the leader Lease (or was frozen past it),
    or a cluster's state was written by a newer leader (a higher fencing token)."""


class HeldSinceRead(SyncerError):
    """A state write not made: a person's act recorded in the cluster since the writer read it (a
    pin, a suspension) forbids what the write would start; the writer holds the cluster instead."""


class RecordUnreadable(SyncerError):
    """A record a cluster keeps (its history of revisions) is not one this version can read; the
    message names the cluster, the ConfigMap and its key, and what is wrong."""


class RollbackRefused(SyncerError):
    """``syncer rollback`` was asked for a revision a cluster's history does not hold as verified and
    applied there; the message names what the history holds."""
