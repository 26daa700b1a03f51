"""Drift repair: re-plan the clusters already on the revision in force and re-apply what changed."""

from __future__ import annotations

from syncer.apply import ClusterApplier
from syncer.domain.changeset import ChangeSet
from syncer.domain.objects import DesiredFleet
from syncer.domain.sync_state import SyncPhase
from syncer.engine.diff import plan_live_cluster
from syncer.engine.sync import FleetRollout
from syncer.errors import KubeError


def heal_fleet(rollout: FleetRollout, fleet: DesiredFleet) -> tuple[ChangeSet, ...]:
    """For every cluster that finished ``fleet``'s revision: plan it against live state and, when
    something drifted (another manager changed a field syncer owns, an object was deleted), apply the
    plan. Clusters still rolling out are left to the rollout. Returns the change sets that wrote."""
    states = rollout.load_states()
    repaired: list[ChangeSet] = []
    for name, desired in fleet.clusters.items():
        state = states.get(name)
        api = rollout.clients.get(name)
        if state is None or api is None or state.revision != fleet.revision:
            continue
        if state.phase not in {SyncPhase.HEALTHY, SyncPhase.APPLIED}:
            continue
        try:
            plan = plan_live_cluster(
                api, desired, rollout.options.diff, state.applied_inventory(), rollout.options.apply.rules
            )
        except KubeError as err:
            repaired.append(ChangeSet(name, fleet.revision, error=f"drift check failed: {err}"))
            continue
        if plan.error:
            repaired.append(ChangeSet(name, fleet.revision, error=plan.error))
        elif plan.has_changes:
            repaired.append(
                ClusterApplier(api, rollout.options.apply, rollout.stop).apply(desired, plan, fleet.revision)
            )
    return tuple(repaired)
