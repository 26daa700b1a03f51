"""The manual gates of a rollout: a wave with ``approval: manual`` waits, pass after pass, until a
person promotes the waiting revision (``syncer promote``); a revision a person aborted (``syncer
abort``) ends its wave in flight, which is rolled back by the per-cluster rule of a failed wave.

Waiting never holds the pass: the rollout returns ``waiting`` and the next pass looks again, like a
closed maintenance window. Each wave held at its gate records the revision it waits for in its
clusters (``awaiting``), so ``syncer status`` and ``syncer promote`` read it from the fleet.
"""

from __future__ import annotations

from dataclasses import replace

from syncer.domain.gates import AwaitingPromotion
from syncer.domain.objects import DesiredFleet
from syncer.domain.progress import PassEvent, Step, Waiting
from syncer.engine.failed_wave import FleetsOf, roll_back_wave
from syncer.engine.rollout_gate import RolloutParts
from syncer.engine.rollout_model import RolloutReport, WaveReport
from syncer.rollout import Decision, GateVerdict, Wave, judge_promotion, people_needed
from syncer.rollout.moves import RolloutOutcome


def hold_for_promotion(rollout: RolloutParts, wave: Wave, fleet: DesiredFleet) -> str:
    """Why ``wave`` may not start rolling ``fleet`` out yet ("" when it may): it has a manual gate
    and not enough distinct people promoted the revision. What the wave waits for is recorded in
    the clusters this replica owns, and told (``awaiting-promotion``, or ``promoted`` as it opens:
    once, by the pass that records the end of the wait, however many passes a suspension or a
    window holds the wave after, and across restarts)."""
    labels = {name: fleet.clusters[name].labels for name in wave.clusters if name in fleet.clusters}
    needed = people_needed(rollout.records.options.two_person, labels)
    check = judge_promotion(wave, rollout.records.states, fleet.revision, needed)
    awaiting = AwaitingPromotion() if check.open else AwaitingPromotion(wave.name, fleet.revision)
    ended = _end_waits(rollout, wave, awaiting)
    if check.open:
        if check.people and any(w == (wave.name, fleet.revision) for w in ended):
            event = PassEvent(Step.PROMOTED, wave.name, revision=fleet.revision, reason=check.reason)
            rollout.records.listener(event)
        return ""
    rollout.records.listener(
        PassEvent(
            Step.AWAITING_PROMOTION,
            wave.name,
            revision=fleet.revision,
            reason=check.reason,
            waiting=Waiting.PROMOTION,
        )
    )
    return check.reason


def _end_waits(rollout: RolloutParts, wave: Wave, awaiting: AwaitingPromotion) -> list[tuple[str, str]]:
    """Record ``awaiting`` (none, or the wait of ``wave``) in the clusters of ``wave`` this replica
    owns that record another; returns the waits (wave, revision) this ended."""
    ended = []
    for name in wave.clusters:
        state = rollout.records.states.get(name)
        if state is None or name in rollout.records.unreachable or not rollout.records.owns(name):
            continue
        if (state.awaiting.wave, state.awaiting.revision) != (awaiting.wave, awaiting.revision):
            if state.awaiting.active:
                ended.append((state.awaiting.wave, state.awaiting.revision))
            since = rollout.records.clock() if awaiting.active else 0.0
            rollout.records.save(name, replace(state, awaiting=replace(awaiting, since=since)))
    return ended


def abort_wave(
    rollout: RolloutParts,
    wave: Wave,
    fleet: DesiredFleet,
    fleets: FleetsOf,
    done: tuple[tuple[WaveReport, ...], GateVerdict],
) -> RolloutReport:
    """End ``wave`` because a person aborted ``fleet``'s revision: its clusters on the revision
    remember it as failed there and go back to the revision each last ran healthy (whatever the
    policy's ``rollback`` says: the person asked for it); a wave none of whose clusters has it halts.
    The abort is told (``rollout-aborted``) when it ends something: a rollback, or the wait at the
    wave's manual gate that this pass records as over; a wave it halted before only halts again."""
    reports, verdict = done
    ended = _end_waits(rollout, wave, AwaitingPromotion())  # the wave waits for no promotion any more
    if verdict.decision is Decision.ROLLBACK or (wave.name, fleet.revision) in ended:
        event = PassEvent(Step.ROLLOUT_ABORTED, wave.name, revision=fleet.revision, reason=verdict.reason)
        rollout.records.listener(event)
    report = WaveReport(wave.name, wave.clusters, verdict.decision, verdict.reason, (), verdict.reasons)
    if verdict.decision is Decision.ROLLBACK:
        return roll_back_wave(rollout, wave, fleet, fleets, (Decision.ROLLBACK, (*reports, report)))
    return RolloutReport(fleet.revision, RolloutOutcome.HALTED, (*reports, report), verdict.reason)
