"""A person's steering of a rollout at its manual gates: promotions and aborts, and the gate a wave
waits at. Recorded in the clusters beside their sync states (``syncer.status.acts``)."""

from __future__ import annotations

from dataclasses import dataclass

from syncer.domain.moments import moment_of


@dataclass(frozen=True)
class PromotedBy:
    """One person's ``syncer promote``: who, when (seconds since the epoch) and why."""

    by: str
    at: float = 0.0
    reason: str = ""


@dataclass(frozen=True)
class Promotion:
    """The promotion of ``revision`` past the manual gate of ``wave``, with each distinct person's
    promote (a two-person rule asks for more than one). Empty when none is recorded."""

    wave: str = ""
    revision: str = ""
    promoters: tuple[PromotedBy, ...] = ()

    def names(self, wave: str, revision: str) -> bool:
        return bool(self.revision) and (self.wave, self.revision) == (wave, revision)

    @property
    def people(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(a.by for a in self.promoters))


@dataclass(frozen=True)
class Abort:
    """A person's ``syncer abort`` of ``revision``: its wave in flight is rolled back and the
    cluster refuses it until a ``syncer retry`` made after ``at``. Empty when none is recorded."""

    revision: str = ""
    by: str = ""
    reason: str = ""
    at: float = 0.0

    @property
    def active(self) -> bool:
        return bool(self.revision)

    def describe(self) -> str:
        """``aborted by ops at 2026-12-03 10:00 UTC: bad canary``."""
        return f"aborted by {self.by or 'someone'} at {moment_of(self.at)}: {self.reason}"


@dataclass(frozen=True)
class AwaitingPromotion:
    """What the agent records in each cluster of a wave held at its manual gate: the revision that
    waits for ``syncer promote --wave WAVE`` and since when. Empty when the wave waits for none."""

    wave: str = ""
    revision: str = ""
    since: float = 0.0

    @property
    def active(self) -> bool:
        return bool(self.revision)

    def describe(self) -> str:
        return f"waiting for promote of {self.revision[:12]} at wave {self.wave}"
