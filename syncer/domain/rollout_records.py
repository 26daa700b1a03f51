"""The rollout's status (``syncer.domain.rollout_status``) rebuilt from what the clusters record: their
sync states and their histories of revisions. [pure]

The agent folds the status from its pass events as they happen; a restarted agent, ``syncer status``
and ``syncer history`` have only the records. ``rebuild`` gives them the same status from the
records alone, so every view agrees, and across a restart: the revision rolling out is the newest
one any cluster's history started (an apply that puts a cluster back on a revision it ran before,
a rollback or a person's pin, is a going back, never a revision rolling out); each wave's phase is
what its clusters record of that revision; a wave that failed there reads failed with its cause,
also after its clusters went back (``back`` says to what), until a newer revision starts or a
person's ``syncer retry`` lifts the failure. A pinned cluster reads held (pinned), a suspended one
held (suspended), one at its manual gate awaiting promotion, and one waiting for its maintenance
window held (window). ``reconcile`` puts the rebuilt status beside the one an agent folded: the
finer in-flight phases only events tell (baking, analysing) are kept, what the records settle wins.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from syncer.domain.revision_history import HistoryEntry, Outcome
from syncer.domain.rollout_status import (
    ENDED_BADLY,
    HoldCause,
    RolloutStatus,
    WavePhase,
    WaveStatus,
)
from syncer.domain.sync_state import ClusterSyncState, SyncPhase


@dataclass(frozen=True)
class ClusterRecord:
    """What one cluster records: its sync state and its history of revisions (oldest first)."""

    state: ClusterSyncState
    history: tuple[HistoryEntry, ...] = ()


def records_of(
    states: Mapping[str, ClusterSyncState], histories: Mapping[str, tuple[HistoryEntry, ...]]
) -> dict[str, ClusterRecord]:
    """Each cluster's record from the states a pass ended with and the histories it read or wrote."""
    return {name: ClusterRecord(state, histories.get(name, ())) for name, state in states.items()}


def going_back(history: Sequence[HistoryEntry], index: int) -> bool:
    """Whether the apply ``history[index]`` put the cluster back on a revision it had run before
    (after another one): a rollback, automatic or a person's pin, not a revision rolling out."""
    entry = history[index]
    if entry.outcome is Outcome.ROLLED_BACK:
        return True
    if index == 0 or history[index - 1].revision == entry.revision:
        return False  # the first apply, or the same revision again (a retry)
    return any(e.revision == entry.revision for e in history[: index - 1])


def rolling_revision(records: Iterable[ClusterRecord]) -> str:
    """The revision rolling out: the newest one a cluster's history started that is not a going back
    (``""``: no cluster records any). Records with no history give their state's revision."""
    newest: tuple[float, str] = (-1.0, "")
    for record in records:
        history = record.history
        for index, entry in enumerate(history):
            if not going_back(history, index) and entry.started >= newest[0]:
                newest = (entry.started, entry.revision)
        state = record.state
        if not history and state.revision and state.phase is not SyncPhase.ROLLED_BACK:
            newest = max(newest, (state.updated_at, state.revision))
    return newest[1]


@dataclass(frozen=True)
class Standing:
    """One cluster on the revision rolling out: its phase, why, what holds it, how it went back."""

    phase: WavePhase
    cause: str = ""
    hold: HoldCause | None = None
    back: str = ""


def _last_own(history: Sequence[HistoryEntry], revision: str) -> int | None:
    """The index of the last apply of ``revision`` itself (not a going back onto it)."""
    found = None
    for index, entry in enumerate(history):
        if entry.revision == revision and not going_back(history, index):
            found = index
    return found


def _hold(state: ClusterSyncState, revision: str, wave: str) -> Standing | None:
    """What keeps a cluster from ``revision`` now: a person's pin or suspension, its manual gate, its
    maintenance window (None: nothing does)."""
    if state.pin.active and state.pin.revision != revision:
        return Standing(WavePhase.HELD, state.pin.describe(), HoldCause.PINNED)
    if state.suspension.active:
        return Standing(WavePhase.HELD, state.suspension.describe(), HoldCause.SUSPENDED)
    if state.awaiting.active and (state.awaiting.wave, state.awaiting.revision) == (wave, revision):
        return Standing(WavePhase.AWAITING_PROMOTION, state.awaiting.describe())
    if state.window:
        return Standing(WavePhase.HELD, state.window, HoldCause.WINDOW)
    return None


def _back(after: Sequence[HistoryEntry]) -> tuple[WavePhase | None, str]:
    """How a cluster went back after the revision ended there: still going (ROLLING_BACK), or what
    it came to."""
    if not after:
        return None, ""
    last = after[-1]
    if last.open:
        return WavePhase.ROLLING_BACK, f"rolling back to {last.revision[:12]}"
    if last.outcome in (Outcome.ROLLED_BACK, Outcome.HEALTHY, Outcome.APPLIED):
        return None, f"rolled back to {last.revision[:12]}"
    return None, f"rollback to {last.revision[:12]} failed: {last.reason}".rstrip(": ")


def standing(record: ClusterRecord, revision: str, wave: str) -> Standing:
    """Where one cluster of ``wave`` is on ``revision``, from its records."""
    state, history = record.state, record.history
    if state.abort.active and state.abort.revision == revision:
        back = _back(history[(_last_own(history, revision) or len(history)) + 1 :])[1]
        return Standing(WavePhase.ABORTED, state.abort.describe(), back=back)
    index = _last_own(history, revision)
    failure = state.failure_of(revision, "")
    lifted = failure is not None and state.retry.covers(failure)
    if index is None and not history and state.revision == revision:
        # No history kept (an older record): its state alone.
        phase = {
            SyncPhase.APPLYING: WavePhase.APPLYING,
            SyncPhase.APPLIED: WavePhase.WAITING_HEALTH,
            SyncPhase.HEALTHY: WavePhase.PASSED,
            SyncPhase.FAILED: WavePhase.FAILED,
        }.get(state.phase, WavePhase.PENDING)
        return Standing(phase, state.last_error if phase is WavePhase.FAILED else "")
    if index is None:
        if failure is not None and not lifted:
            return Standing(WavePhase.FAILED, failure.reason)
        return _hold(state, revision, wave) or Standing(WavePhase.PENDING)
    entry, after = history[index], history[index + 1 :]
    held = _hold(state, revision, wave)
    if held is not None and held.hold is HoldCause.PINNED:
        return replace(held, back=_back(after)[1])
    if entry.outcome is Outcome.FAILED or (after and failure is not None):
        if lifted:
            return Standing(WavePhase.PENDING, f"retry asked by {state.retry.by or 'someone'}")
        going, back = _back(after)
        cause = (failure.reason if failure is not None else "") or entry.reason
        return Standing(going or WavePhase.FAILED, cause, back=back)
    if entry.outcome is Outcome.HEALTHY:
        return Standing(WavePhase.PASSED)
    if entry.outcome is Outcome.APPLIED:
        return Standing(WavePhase.WAITING_HEALTH, state.health_detail)
    if entry.outcome is Outcome.APPLYING:
        return Standing(WavePhase.APPLYING)
    return held or Standing(WavePhase.PENDING, entry.reason)  # interrupted, or left for another


_FIRST = (
    WavePhase.ABORTED,
    WavePhase.ROLLING_BACK,
    WavePhase.FAILED,
    WavePhase.APPLYING,
    WavePhase.WAITING_HEALTH,
    WavePhase.AWAITING_PROMOTION,
    WavePhase.HELD,
)


def _wave(name: str, found: Mapping[str, Standing]) -> WaveStatus:
    """A wave's status from its clusters' standings: the first of ``_FIRST`` any of them is in, with
    the causes of those clusters; passed when every one passed; else pending (or applying once
    some passed)."""
    for phase in _FIRST:
        these = {c: s for c, s in found.items() if s.phase is phase}
        if not these:
            continue
        many = len(found) > 1
        cause = "; ".join(f"{c}: {s.cause}" if many else s.cause for c, s in these.items() if s.cause)
        back = "; ".join(f"{c} {s.back}" if many else s.back for c, s in sorted(found.items()) if s.back)
        hold = next((s.hold for s in these.values() if s.hold is not None), None)
        ended = WavePhase.ABORTED if phase is WavePhase.ABORTED else None
        if phase is WavePhase.ROLLING_BACK:
            ended = WavePhase.FAILED
        return WaveStatus(name, phase, cause, hold, ended, back)
    if found and all(s.phase is WavePhase.PASSED for s in found.values()):
        return WaveStatus(name, WavePhase.PASSED)
    if any(s.phase is WavePhase.PASSED for s in found.values()):
        return WaveStatus(name, WavePhase.APPLYING)
    return WaveStatus(name)


def rebuild(waves: Sequence[str], records: Mapping[str, ClusterRecord]) -> RolloutStatus:
    """The rollout's status from the clusters' records: the revision rolling out and each wave, the
    policy's ``waves`` in order (then any other wave a cluster records). A cluster belongs to the
    wave its state records."""
    revision = rolling_revision(records.values())
    names = list(dict.fromkeys([*waves, *sorted({r.state.wave for r in records.values() if r.state.wave})]))
    if not revision:
        return RolloutStatus("", tuple(WaveStatus(name) for name in names))
    members: dict[str, dict[str, Standing]] = {name: {} for name in names}
    for cluster, record in sorted(records.items()):
        if record.state.wave:
            members[record.state.wave][cluster] = standing(record, revision, record.state.wave)
    return RolloutStatus(revision, tuple(_wave(name, members[name]) for name in names))


_SETTLED_BY_RECORDS = frozenset({*ENDED_BADLY, WavePhase.ROLLING_BACK, WavePhase.HELD})


def reconcile(live: RolloutStatus, rebuilt: RolloutStatus) -> RolloutStatus:
    """The status an agent shows once a pass ended with ``rebuilt`` from its records: the rebuilt one
    when it is about another revision (the agent restarted, or another replica moved on), else the
    live one, but for each wave whose live phase says nothing yet (pending) or whose records settle
    it (failed, aborted, rolling back, held)."""
    if not rebuilt.revision:
        return live
    if live.revision != rebuilt.revision:
        return rebuilt
    waves = []
    for wave in rebuilt.waves:
        mine = live.wave(wave.name)
        settled = wave.phase in _SETTLED_BY_RECORDS and mine.phase not in _SETTLED_BY_RECORDS
        waves.append(wave if mine.phase is WavePhase.PENDING or settled else mine)
    return RolloutStatus(live.revision, tuple(waves))
