"""What each cluster remembers of the revisions applied to it: a bounded record, newest last.

An entry is opened when the state records the start of an apply (``applying``) and settled by the
state writes that follow for the same revision (applied, healthy, failed, rolled back); an entry
still open when the state moves to another revision was interrupted. The record is a pure function
of the states written, so it is kept by the one path that writes the state. [pure]
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from enum import StrEnum

from syncer.domain.sync_state import ClusterSyncState, SyncPhase

MAX_ENTRY_TEXT = 400
"""Characters each text of an entry may have (a reason, a signer, who acted): the record lives in a
ConfigMap, whose whole data may not pass 1 MiB."""


class Outcome(StrEnum):
    """How an apply of a revision went on one cluster, as far as it is known."""

    APPLYING = "applying"
    APPLIED = "applied"
    HEALTHY = "healthy"
    FAILED = "failed"
    ROLLED_BACK = "rolled-back"
    INTERRUPTED = "interrupted"


OUTCOME_OF: dict[SyncPhase, Outcome] = {
    SyncPhase.APPLYING: Outcome.APPLYING,
    SyncPhase.APPLIED: Outcome.APPLIED,
    SyncPhase.HEALTHY: Outcome.HEALTHY,
    SyncPhase.FAILED: Outcome.FAILED,
    SyncPhase.ROLLED_BACK: Outcome.ROLLED_BACK,
}


def bounded(text: str, limit: int = MAX_ENTRY_TEXT) -> str:
    """``text`` cut to ``limit`` characters, saying it was cut."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


@dataclass(frozen=True)
class HistoryEntry:
    """One apply of ``revision`` on a cluster: signed by ``signer`` (the trust policy's name, "" when
    not known), started and ended (seconds since the epoch, 0 while open), in ``wave``, its
    ``outcome`` and ``reason``, and ``by``: who acted (an agent replica, or a person's command)."""

    revision: str
    signer: str = ""
    started: float = 0.0
    ended: float = 0.0
    wave: str = ""
    outcome: Outcome = Outcome.APPLYING
    reason: str = ""
    by: str = ""

    @property
    def open(self) -> bool:
        return self.outcome is Outcome.APPLYING

    def bounded(self) -> HistoryEntry:
        """This entry with every text within ``MAX_ENTRY_TEXT`` (a revision is an object id: kept)."""
        return replace(
            self,
            signer=bounded(self.signer),
            wave=bounded(self.wave),
            reason=bounded(self.reason),
            by=bounded(self.by),
        )


@dataclass(frozen=True)
class Actor:
    """Who writes a state, and how the revisions it writes were signed: what the record notes."""

    by: str = ""
    signer: str = ""


def _reason(state: ClusterSyncState, outcome: Outcome) -> str:
    if outcome is Outcome.FAILED:
        return state.last_error or state.health_detail
    if outcome is Outcome.ROLLED_BACK:
        return "put back on this revision after a failed wave"
    return ""


def note(
    history: tuple[HistoryEntry, ...], state: ClusterSyncState, now: float, actor: Actor, keep: int
) -> tuple[HistoryEntry, ...]:
    """``history`` after ``state`` is written at ``now`` by ``actor``, at most ``keep`` entries (the
    oldest forgotten first). Nothing changes unless the state starts, settles or leaves an apply."""
    if not state.revision or state.phase is SyncPhase.NEVER:
        return history[-keep:]
    outcome = OUTCOME_OF[state.phase]
    entries = list(history)
    last = entries[-1] if entries else None
    if last is not None and last.open and last.revision != state.revision:
        left = f"left for {state.revision[:12]} before it finished"
        if state.suspension.active:
            left = state.suspension.describe()
        entries[-1] = replace(last, ended=now, outcome=Outcome.INTERRUPTED, reason=bounded(left))
        last = entries[-1]
    if outcome is Outcome.APPLYING:
        if last is None or not (last.open and last.revision == state.revision):
            # A revision applied again (a pin, a retry) was verified then too: its signer is known.
            known = (e.signer for e in reversed(entries) if e.revision == state.revision and e.signer)
            signer = actor.signer or next(known, "")
            opened = HistoryEntry(state.revision, signer, now, 0.0, state.wave, outcome, "", actor.by)
            entries.append(opened.bounded())
    elif last is not None and last.revision == state.revision and last.outcome is not outcome:
        reason = bounded(_reason(state, outcome))
        entries[-1] = replace(last, ended=now, outcome=outcome, reason=reason, wave=last.wave or state.wave)
    return tuple(entries[-keep:])
