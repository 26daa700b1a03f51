"""A failed wave: its clusters are marked as having failed the revision and, when the policy asks for
it, each is put back on the revision *it* last ran healthy (``syncer.rollout.rollback``), never on a
revision voted by the fleet, never on the failing one. Clusters without such a revision stay failed,
and the report says why."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from syncer.domain.objects import DesiredFleet
from syncer.domain.progress import PassEvent, Step
from syncer.domain.sync_state import SyncPhase
from syncer.engine.rollout_gate import WaveGate
from syncer.engine.rollout_model import RolloutOutcome, RolloutReport, WaveReport
from syncer.rollout import Decision, Wave, phase_after_rollback
from syncer.rollout.rollback import rollback_targets

FleetsOf = Callable[[str], DesiredFleet | None]
"""The desired fleet of a revision (rebuilt from git), None when it cannot be had."""


def roll_back_wave(
    rollout: WaveGate,
    wave: Wave,
    fleet: DesiredFleet,
    fleets: FleetsOf,
    failed: tuple[Decision, tuple[WaveReport, ...]],
) -> RolloutReport:
    """Record the failure of ``wave`` on ``fleet``'s revision and roll its clusters back one by one
    to their own last good revision when ``failed``'s decision is a rollback."""
    decision, reports = failed
    reason = reports[-1].reason
    owned = tuple(filter(rollout.owns, wave.clusters))  # a sharded replica rolls back only its own
    targets = rollback_targets(owned, rollout.states, fleet.revision)
    for name in owned:
        state = rollout.states[name]
        bad = state.with_bad(fleet.revision, fleet.clusters[name].content_hash)
        rollout._save(name, replace(bad, phase=SyncPhase.FAILED, last_error=reason))
    if decision is not Decision.ROLLBACK:
        return RolloutReport(fleet.revision, RolloutOutcome.HALTED, reports, reason)
    groups: dict[str, tuple[DesiredFleet, list[str]]] = {}
    outcomes = []
    for name, target in targets.items():
        back = fleets(target.revision) if target.revision else None
        if back is None or name not in back.clusters:
            why = (
                target.reason
                if not target.revision
                else f"{target.revision[:12]} cannot be rebuilt"
                if back is None
                else f"{target.revision[:12]} has no objects for it"
            )
            rollout.listener(
                PassEvent(Step.ROLLBACK_UNAVAILABLE, wave.name, name, fleet.revision, reason=why)
            )
            outcomes.append(f"{name}: not rolled back: {why}")
            continue
        groups.setdefault(target.revision, (back, []))[1].append(name)
    for revision, (back, names) in groups.items():
        rollout.listener(PassEvent(Step.ROLLING_BACK, wave.name, revision=revision))
        for name in names:
            rollout._apply_cluster(wave, back.clusters[name], revision)
        verdict = rollout._gate(replace(wave, clusters=tuple(names)), back, rollback=False)
        for name in names:
            state = rollout.states[name]
            rollout._save(name, replace(state, phase=phase_after_rollback(state, verdict)))
        outcomes.append(f"{', '.join(names)} rolled back to {revision[:12]}: {verdict.reason}")
    outcome = RolloutOutcome.ROLLED_BACK if groups else RolloutOutcome.HALTED
    return RolloutReport(fleet.revision, outcome, reports, f"{reason}; " + "; ".join(outcomes))
