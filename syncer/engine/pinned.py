"""The clusters a person pinned to a revision (``syncer rollback``), in the pass and the drift job:
each pinned revision is rolled out to its clusters through the same rollout as any revision, and
their drift is repaired against it, never against the revision in force.

The pinned revision comes from ``fleet_of`` (the pass's ``Revisions.rebuild``: rebuilt from git,
verified and judged by the guards again); one that cannot be had leaves its clusters where they are.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from syncer.domain.changeset import ChangeSet
from syncer.domain.objects import DesiredFleet
from syncer.domain.progress import PassEvent, Step
from syncer.engine.rollout import FleetRollout
from syncer.engine.rollout_model import RolloutReport
from syncer.rollout.moves import RolloutOutcome
from syncer.rollout.pins import restricted

FleetOf = Callable[[str], DesiredFleet | None]
"""The desired fleet of a revision (rebuilt from git), None when it cannot be had."""


def by_revision(pins: Mapping[str, str]) -> dict[str, list[str]]:
    """``pins`` (cluster: pinned revision) as each pinned revision with its clusters."""
    grouped: dict[str, list[str]] = {}
    for name, revision in sorted(pins.items()):
        grouped.setdefault(revision, []).append(name)
    return grouped


def _pinned_fleet(
    rollout: FleetRollout, revision: str, names: list[str], fleet_of: FleetOf
) -> DesiredFleet | None:
    """The pinned revision's fleet for ``names``; each cluster it cannot be had for is told."""
    pinned = fleet_of(revision)
    missing = names if pinned is None else [n for n in names if n not in pinned.clusters]
    for name in missing:
        why = (
            "it cannot be had from git, or fails verification or the guard policy "
            "(last-good-unavailable says why); the cluster stays where it is"
            if pinned is None
            else "the pinned revision has no objects for it"
        )
        rollout.records.listener(PassEvent(Step.PIN_UNAVAILABLE, cluster=name, revision=revision, reason=why))
    if pinned is None or len(missing) == len(names):
        return None
    return restricted(pinned, names)


def roll_pins(rollout: FleetRollout, pins: Mapping[str, str], fleet_of: FleetOf) -> RolloutReport | None:
    """Roll each pinned revision out to the clusters pinned to it, wave by wave like any revision,
    held by suspensions and windows (``held_now``), from the states ``rollout`` read; as a rollback,
    each wave waits for health alone unless the policy asks for its bake and analysis
    (``rollbackChecks``). Returns the report of a pinned rollout that lost the Lease (``fenced-out``:
    nothing more is rolled out), else None."""
    for revision, names in by_revision(pins).items():
        if rollout.records.stop.is_set():
            return None
        for name in names:
            why = rollout.states[name].pin.describe()
            rollout.records.listener(
                PassEvent(Step.CLUSTER_PINNED, cluster=name, revision=revision, reason=why)
            )
        pinned = _pinned_fleet(rollout, revision, names, fleet_of)
        if pinned is not None:
            report = rollout.roll_out(pinned, fleet_of, going_back=True)
            if report.outcome is RolloutOutcome.FENCED_OUT:
                return report
    return None


def heal_pins(rollout: FleetRollout, pins: Mapping[str, str], fleet_of: FleetOf) -> tuple[ChangeSet, ...]:
    """Repair the drift of each pinned cluster that finished its pinned revision, against that
    revision (``repair_drift``, from the states ``rollout`` read)."""
    repaired: list[ChangeSet] = []
    for revision, names in by_revision(pins).items():
        pinned = _pinned_fleet(rollout, revision, names, fleet_of)
        if pinned is not None:
            repaired += rollout.heal(pinned, read=False)
    return tuple(repaired)
