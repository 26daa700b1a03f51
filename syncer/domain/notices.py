"""What a notification is about: its class and severity, and the notice itself (pure values).

A ``Notice`` is made from the typed progress of a pass (``syncer.notify.classify``), never from an
event's text; the config's routes name classes and severities (``syncer.config.notifications``).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class NoticeClass(StrEnum):
    """What happened, as the routes of the config name it."""

    ROLLOUT_STARTED = "rollout-started"
    ROLLOUT_FINISHED = "rollout-finished"
    WAVE_PASSED = "wave-passed"
    WAVE_FAILED = "wave-failed"
    ROLLBACK_DONE = "rollback-done"
    REVISION_REJECTED = "revision-rejected"
    CLUSTER_UNREACHABLE = "cluster-unreachable"
    SUSPENDED = "suspended"
    RESUMED = "resumed"
    # A wave waiting at a manual gate for a person, that person's promotion of it, or an abort of
    # the wave in flight.
    AWAITING_PROMOTION = "awaiting-promotion"
    PROMOTED = "promoted"
    ABORTED = "aborted"


class Severity(StrEnum):
    """How much a notice matters; a route takes notices of its ``minSeverity`` and above."""

    INFO = "info"
    WARNING = "warning"
    ERROR = "error"

    @property
    def rank(self) -> int:
        return list(Severity).index(self)


@dataclass(frozen=True)
class Notice:
    """One thing to tell people: its class and severity, where (cluster and wave, empty when it is
    about the whole fleet), the revision, a short ``reason`` (a word such as ``unhealthy`` or
    ``signature``), the text for people (``detail``) and the commands that look closer.
    ``clusters`` lists the clusters it is about (a failed wave's failed clusters; ``cluster`` then
    names them joined with ``, ``)."""

    kind: NoticeClass
    severity: Severity
    revision: str = ""
    cluster: str = ""
    wave: str = ""
    reason: str = ""
    detail: str = ""
    commands: tuple[str, ...] = ()
    at: float = 0.0
    clusters: tuple[str, ...] = ()

    @property
    def fold_key(self) -> tuple[str, ...]:
        """What makes two notices the same for folding: everything but the text and the time."""
        return (self.kind, self.cluster, self.wave, self.revision, self.reason)

    @property
    def summary(self) -> str:
        """One line: ``wave-failed on eu-1 (wave eu) at 1a2b3c4d5e6f: unhealthy``."""
        where = f" on {self.cluster}" if self.cluster else ""
        wave = f" (wave {self.wave})" if self.wave else ""
        revision = f" at {self.revision[:12]}" if self.revision else ""
        reason = f": {self.reason}" if self.reason else ""
        return f"{self.kind}{where}{wave}{revision}{reason}"
