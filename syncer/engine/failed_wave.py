"""A failed wave: the clusters where the revision itself failed remember it, with the cause
(``syncer.rollout.failures.blame``: not those that applied it cleanly, not those that were not
healthy before it), and, when the policy asks for it, each is put back on the revision *it* last ran
healthy (``syncer.rollout.rollback_targets``), never on a revision voted by the fleet, never on the failing
one. Clusters without such a revision, clusters that were not healthy before the revision, and
clusters a person holds (``held_now``: suspended, or pinned to another revision; a window does not
hold a rollback) stay where they are, and the report says why."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from syncer.domain.changeset import FailureCause
from syncer.domain.objects import DesiredFleet
from syncer.domain.progress import PassEvent, Step
from syncer.domain.sync_state import FailedRevision, SyncPhase
from syncer.engine.failures import live_fingerprint, refusal_now
from syncer.engine.rollout_gate import RolloutParts
from syncer.engine.rollout_model import RolloutReport, WaveReport
from syncer.rollout import Decision, Wave, phase_after_rollback
from syncer.rollout.failures import Refusal, blame, not_blamed
from syncer.rollout.moves import RolloutOutcome
from syncer.rollout.rollback_targets import good_before, rollback_targets
from syncer.rollout.waves import for_going_back

FleetsOf = Callable[[str], DesiredFleet | None]
"""The desired fleet of a revision (rebuilt from git), None when it cannot be had."""


def roll_back_wave(
    rollout: RolloutParts,
    wave: Wave,
    fleet: DesiredFleet,
    fleets: FleetsOf,
    failed: tuple[Decision, tuple[WaveReport, ...]],
) -> RolloutReport:
    """Record the failure of ``wave`` on ``fleet``'s revision and roll its clusters back one by one
    to their own last good revision when ``failed``'s decision is a rollback."""
    decision, reports = failed
    spared = _record_failures(rollout, wave, fleet, reports[-1])
    reason = "; ".join([reports[-1].reason, *(f"{n}: not blamed: {why}" for n, why in spared.items())])
    owned = tuple(n for n in wave.clusters if rollout.records.owns(n) and n not in spared)
    if decision is not Decision.ROLLBACK:
        return RolloutReport(fleet.revision, RolloutOutcome.HALTED, reports, reason)
    histories = rollout.records.histories()
    goods = {
        name: good
        for name in owned
        if (state := rollout.records.states.get(name)) is not None
        and (good := good_before(state, fleet.revision, histories.get(name, ())))
    }
    backs = {revision: fleets(revision) for revision in sorted(set(goods.values()))}
    refused = _refused_now(rollout, goods, backs)
    targets = rollback_targets(owned, rollout.records.states, fleet.revision, refused, histories)
    groups: dict[str, tuple[DesiredFleet, list[str]]] = {}
    outcomes = []
    for name, target in targets.items():
        back = backs.get(target.revision)
        if back is None or name not in back.clusters:
            why = (
                target.reason
                if not target.revision
                else f"{target.revision[:12]} cannot be rebuilt"
                if back is None
                else f"{target.revision[:12]} has no objects for it"
            )
            rollout.records.listener(
                PassEvent(Step.ROLLBACK_UNAVAILABLE, wave.name, name, fleet.revision, reason=why)
            )
            outcomes.append(f"{name}: not rolled back: {why}")
            continue
        held = rollout.applier.held_now((name,), back, wave.name, pending_only=False, windows=False)
        if held:  # a person suspended it, or pinned it to another revision, since the wave started
            outcomes.append(f"{name}: not rolled back while {held.reason}")
            continue
        groups.setdefault(target.revision, (back, []))[1].append(name)
    reasons = dict(reports[-1].failed)
    checks = rollout.records.options.rollout.rollback_checks
    how = "baked and analysed (rollbackChecks)" if checks else "health only: no bake, no analysis"
    for revision, (back, names) in groups.items():
        rollout.records.listener(PassEvent(Step.ROLLING_BACK, wave.name, revision=revision, reason=how))
        for name in names:
            rollout.applier.apply_cluster(wave, back.clusters[name], revision)
        going_back = for_going_back(replace(wave, clusters=tuple(names)), checks)
        verdict = rollout.gate.decide(going_back, back, rollback=False, analysed=checks)
        for name in names:
            state = rollout.records.states[name]
            # The failure stays the cluster's last error after its rollback: the apply of the older
            # revision cleared it, and `syncer status` would show a rolled-back cluster with none.
            cause = reasons.get(name) or reports[-1].reason
            why = f"{fleet.revision[:12]} failed: {cause}; rolled back to {revision[:12]}"
            phase = phase_after_rollback(state, verdict)
            # Back on a revision it runs healthy: that is its last good one (never the one it left,
            # which a passed wave whose revision a person aborted had recorded).
            good = revision if phase is SyncPhase.ROLLED_BACK else state.last_good
            rollout.records.save(name, replace(state, phase=phase, last_error=why, last_good=good))
            back_from = f"back from {fleet.revision[:12]}: {verdict.reason}"
            rollout.records.listener(PassEvent(Step.ROLLED_BACK, wave.name, name, revision, reason=back_from))
        outcomes.append(f"{', '.join(names)} rolled back to {revision[:12]}: {verdict.reason}")
    outcomes += [f"{name}: not rolled back: it was not healthy before either" for name in spared]
    outcome = RolloutOutcome.ROLLED_BACK if groups else RolloutOutcome.HALTED
    return RolloutReport(fleet.revision, outcome, reports, "; ".join([reason, *outcomes]))


def _record_failures(
    rollout: RolloutParts, wave: Wave, fleet: DesiredFleet, report: WaveReport
) -> dict[str, str]:
    """Record the failure of ``wave`` on the clusters this replica owns: those where the revision
    itself failed remember it with its cause (a live one with the live state of the objects in the
    way, to see it change); the others only end the wave. Returns the failed clusters the revision
    is not blamed on (they were not healthy before it), each with why."""
    why = dict(report.failed)
    spared: dict[str, str] = {}
    for name in filter(rollout.records.owns, wave.clusters):
        state = rollout.records.states[name]
        content = fleet.clusters[name].content_hash
        failure = (
            blame(state, fleet.revision, why[name], content, rollout.records.clock()) if name in why else None
        )
        if failure is not None:
            state = state.with_failure(_watching(rollout, name, failure))
        elif name in why:
            spared[name] = reason = not_blamed(state, fleet.revision)
            rollout.records.listener(
                PassEvent(Step.NOT_BLAMED, wave.name, name, fleet.revision, reason=reason)
            )
        rollout.records.save(name, replace(state, phase=SyncPhase.FAILED, last_error=report.reason))
    return spared


def _watching(rollout: RolloutParts, cluster: str, failure: FailedRevision) -> FailedRevision:
    """``failure`` with the live state of the objects in its way, when it has a live cause."""
    if failure.cause is not FailureCause.LIVE or not failure.objects:
        return failure
    found = live_fingerprint(
        rollout.records.clients[cluster], failure.objects, rollout.records.options.apply.field_manager
    )
    return replace(failure, fingerprint=found or "")


def _refused_now(
    rollout: RolloutParts, goods: dict[str, str], backs: dict[str, DesiredFleet | None]
) -> dict[str, Refusal | None]:
    """Each cluster's refusal of the revision it would go back to (``goods``, whose desired fleets
    ``backs`` holds), judged as any refusal is (``engine.failures.refusal_now``: by cause, a live
    failure by its objects' live state)."""
    found: dict[str, Refusal | None] = {}
    manager = rollout.records.options.apply.field_manager
    for name, good in goods.items():
        back = backs.get(good)
        content = back.clusters[name].content_hash if back is not None and name in back.clusters else ""
        found[name] = refusal_now(
            rollout.records.clients[name], rollout.records.states[name], good, content, manager
        )
    return found
