"""The rollout's one status: each wave of the revision rolling out in one phase of a closed set, with
its cause, changed only by a pure transition ``advance(status, fact) -> status``. [pure]

The facts are what the engine observed, as it tells them: its typed pass events (``PassEvent``: an
apply began, a gate's verdict, a rollback, a person's abort, a hold). Every view of a rollout (the
fleet page, ``syncer_wave_state``) is a projection of this status, so a wave that failed reads
failed, with its cause, until a newer revision or a person's act moves it, also after its clusters
went back to their last good revision: the rollback's own health gate ends the rollback, not the
failure.

Invariants (tested over random sequences of facts): a wave that failed or was aborted on a revision
never reads passed for that revision unless that revision is applied to it again; a rollback's
events never make a wave passed; a newer revision starts every wave pending.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from enum import StrEnum

from syncer.domain.progress import PassEvent, Step, Waiting


class WavePhase(StrEnum):
    """Where one wave of the revision rolling out is."""

    PENDING = "pending"  # no fact about this wave on the revision yet
    APPLYING = "applying"
    WAITING_HEALTH = "waiting-health"  # applied; waiting for its clusters to become healthy
    BAKING = "baking"  # healthy; waiting out its bake time
    ANALYSING = "analysing"  # healthy and baked; its metrics are being judged
    AWAITING_PROMOTION = "awaiting-promotion"  # held at its manual gate for a person's promote
    HELD = "held"  # a suspension, a pin, a closed window or another replica keeps it (``cause``)
    PASSED = "passed"
    FAILED = "failed"  # health, analysis, an apply or a refusal failed it (``cause``)
    ROLLING_BACK = "rolling-back"  # its failed (or aborted) clusters are going back
    ABORTED = "aborted"  # a person aborted the revision (``cause``)


ENDED_BADLY = frozenset({WavePhase.FAILED, WavePhase.ABORTED})
"""The phases a wave ends in when the revision did not pass there."""


class HoldCause(StrEnum):
    """Why a held wave cannot change now."""

    SUSPENDED = "suspended"
    PINNED = "pinned"
    WINDOW = "window"
    OWNED_ELSEWHERE = "owned-elsewhere"


_HOLDS = {
    Waiting.SUSPENDED: HoldCause.SUSPENDED,
    Waiting.WINDOW: HoldCause.WINDOW,
}
_WAITS = {
    Waiting.HEALTH: WavePhase.WAITING_HEALTH,
    Waiting.BAKE: WavePhase.BAKING,
    Waiting.ANALYSIS: WavePhase.ANALYSING,
    Waiting.PROMOTION: WavePhase.AWAITING_PROMOTION,
}


@dataclass(frozen=True)
class WaveStatus:
    """One wave: its ``phase``; ``cause`` says why it is there (a gate's verdict, the failure, the
    hold, the abort); ``hold`` what holds a ``HELD`` wave; ``ended`` how a wave that went back ended
    (failed or aborted: a rolling-back wave returns to it); ``back`` what its rollback came to (the
    revision its clusters went back to, or why not)."""

    name: str
    phase: WavePhase = WavePhase.PENDING
    cause: str = ""
    hold: HoldCause | None = None
    ended: WavePhase | None = None
    back: str = ""

    @property
    def summary(self) -> str:
        """The phase and cause for people: ``failed: analysis ... (rolled back to 3f2a9c1b7d0e)``."""
        text = f"{self.phase}: {self.cause}" if self.cause else str(self.phase)
        return f"{text} ({self.back})" if self.back else text


@dataclass(frozen=True)
class RolloutStatus:
    """The revision rolling out (``""``: none yet) and each of the policy's waves, in order."""

    revision: str = ""
    waves: tuple[WaveStatus, ...] = ()

    def wave(self, name: str) -> WaveStatus:
        return next((w for w in self.waves if w.name == name), WaveStatus(name))

    def with_wave(self, wave: WaveStatus) -> RolloutStatus:
        if any(w.name == wave.name for w in self.waves):
            return replace(self, waves=tuple(wave if w.name == wave.name else w for w in self.waves))
        return replace(self, waves=(*self.waves, wave))


def initial(waves: Iterable[str]) -> RolloutStatus:
    """No revision rolling out yet; the policy's waves, each pending."""
    return RolloutStatus("", tuple(WaveStatus(name) for name in waves))


def starting(status: RolloutStatus, revision: str) -> RolloutStatus:
    """``revision`` begins rolling out: every wave pending again."""
    return RolloutStatus(revision, tuple(WaveStatus(w.name) for w in status.waves))


def advance(status: RolloutStatus, event: PassEvent) -> RolloutStatus:
    """The status after the engine told ``event``."""
    if event.step is Step.ROLLOUT_STARTED and event.revision and event.revision != status.revision:
        status = starting(status, event.revision)
    if not event.wave:
        return status
    wave = status.wave(event.wave)
    if wave.phase is WavePhase.ROLLING_BACK:
        return status.with_wave(_rolling_back(wave, event, status.revision))
    if event.step is Step.ROLLING_BACK:
        return status.with_wave(replace(wave, phase=WavePhase.ROLLING_BACK, ended=_ended(wave), back=""))
    own = bool(event.revision) and event.revision == status.revision
    if event.step is Step.APPLYING and event.revision and not own:
        # The first apply of a revision not rolling out yet (a pass resumed mid-way, a pin).
        status = starting(status, event.revision)
        return status.with_wave(WaveStatus(event.wave, WavePhase.APPLYING))
    if event.revision and not own:
        return status  # a fact about another revision than the one rolling out
    found = _phase_of(wave, event)
    return status if found is None else status.with_wave(found)


def _ended(wave: WaveStatus) -> WavePhase:
    return wave.phase if wave.phase in ENDED_BADLY else WavePhase.FAILED


def _phase_of(wave: WaveStatus, event: PassEvent) -> WaveStatus | None:
    """The wave after a fact about the revision rolling out (None: the fact does not move it)."""
    step, why = event.step, event.detail
    if step is Step.APPLYING:
        return WaveStatus(wave.name, WavePhase.APPLYING)
    if step in (Step.GATE_PROCEED, Step.GATE_STILL_HEALTHY):
        if wave.phase in ENDED_BADLY:
            return None  # only an apply of the revision again (a retry) reopens an ended wave
        return WaveStatus(wave.name, WavePhase.PASSED, why)
    if step in (Step.GATE_HALT, Step.GATE_ROLLBACK):
        if wave.phase is WavePhase.ABORTED:
            return None
        return replace(wave, phase=WavePhase.FAILED, cause=why, hold=None)
    if step is Step.ROLLOUT_ABORTED:
        return replace(wave, phase=WavePhase.ABORTED, cause=why, hold=None)
    if wave.phase in ENDED_BADLY:
        if step is Step.ROLLBACK_UNAVAILABLE:
            return replace(wave, back=f"{event.cluster or 'a cluster'} not rolled back: {why}")
        return None  # waits and holds after the end are the next pass asking again
    if step is Step.GATE_WAIT:
        waiting = event.waiting or Waiting.HEALTH
        if waiting in _HOLDS:
            return replace(wave, phase=WavePhase.HELD, cause=why, hold=_HOLDS[waiting])
        return replace(wave, phase=_WAITS[waiting], cause=why, hold=None)
    if step is Step.AWAITING_PROMOTION:
        return replace(wave, phase=WavePhase.AWAITING_PROMOTION, cause=why, hold=None)
    if step is Step.WINDOW_CLOSED:
        return replace(wave, phase=WavePhase.HELD, cause=why, hold=HoldCause.WINDOW)
    return None


def _rolling_back(wave: WaveStatus, event: PassEvent, revision: str) -> WaveStatus:
    """A rolling-back wave: its rollback's gate ends it in the way the wave ended before."""
    ended = wave.ended or WavePhase.FAILED
    if event.step is Step.ROLLOUT_ABORTED and event.revision == revision:
        return replace(wave, ended=WavePhase.ABORTED, cause=event.detail)
    if event.step is Step.GATE_PROCEED and event.revision != revision:
        return replace(wave, phase=ended, back=f"rolled back to {event.revision[:12]}")
    if event.step in (Step.GATE_HALT, Step.GATE_ROLLBACK) and event.revision != revision:
        return replace(wave, phase=ended, back=f"rollback to {event.revision[:12]} failed: {event.detail}")
    if event.step is Step.APPLYING and event.revision == revision:
        return WaveStatus(wave.name, WavePhase.APPLYING)  # the revision applied again: a retry
    if event.step in (Step.GATE_HALT, Step.GATE_ROLLBACK) and event.revision == revision:
        return replace(wave, phase=ended, cause=event.detail)  # a later pass refuses it: still ended
    return wave
