"""The apply part of a rollout: a wave's clusters planned against their live state and applied with
server-side apply, each step recorded in the cluster's sync state first; and the drift repair of a
cluster already on a revision (re-planned, re-applied where something drifted, its phase untouched).
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace

from syncer.apply import ClusterApplier, with_retries
from syncer.domain.changeset import ChangeSet, EntryOutcome
from syncer.domain.objects import ClusterManifests, DesiredFleet
from syncer.domain.progress import PassEvent, Step
from syncer.domain.sync_state import ClusterSyncState, InventoryEntry, SyncPhase
from syncer.engine.diff import plan_live_cluster
from syncer.engine.failures import health_before
from syncer.engine.rollout_state import RolloutStates
from syncer.errors import FencedOut, KubeError
from syncer.rollout import Wave, is_done
from syncer.rollout.failures import apply_failure


def _inventory(desired: ClusterManifests, applied: ChangeSet) -> tuple[InventoryEntry, ...]:
    uids = {e.key: e.uid for e in applied.entries if e.outcome is EntryOutcome.APPLIED}
    return tuple(
        sorted(
            InventoryEntry(m.api_version, m.key.kind, m.key.namespace, m.key.name, uids.get(m.key, ""))
            for m in desired.manifests
        )
    )


class WaveApply(RolloutStates):
    """Applies revisions to clusters and repairs their drift (see the module docstring)."""

    def _apply_wave(
        self, wave: Wave, fleet: DesiredFleet, taking_over: bool = False
    ) -> tuple[ChangeSet, ...]:
        """Apply the wave to the reachable clusters this replica owns that are not done (or drifted);
        ``taking_over``: only those not done, for clusters gained while waiting at the gate."""
        reachable = [c for c in wave.clusters if c not in self.unreachable and self.owns(c)]
        todo = [
            c
            for c in reachable
            if not is_done(self.states[c], fleet.revision)
            or (not taking_over and self._drifted(fleet.clusters[c]))
        ]
        for name in reachable:
            if name not in todo and not self.sharded:
                self.listener(PassEvent(Step.ALREADY_APPLIED, wave.name, name, fleet.revision))
        if not todo:
            return ()
        with ThreadPoolExecutor(max_workers=max(1, wave.gate.max_concurrent)) as pool:
            return tuple(
                pool.map(lambda c: self._apply_cluster(wave, fleet.clusters[c], fleet.revision), todo)
            )

    def _drifted(self, desired: ClusterManifests) -> bool:
        """Whether a cluster that already runs a revision no longer matches it (an object deleted or
        changed out of band): then the sync applies the revision again, which repairs it. A cluster
        that cannot be read now, or whose repair is blocked (a conflict under the report policy), is
        left as it is recorded: this check must not fail a good revision."""
        state = self.states[desired.cluster]
        api = self.clients[desired.cluster]
        try:
            plan = plan_live_cluster(
                api, desired, self.options.diff, state.applied_inventory(), self.options.apply.rules
            )
        except KubeError:
            return False
        return not plan.error and not plan.blocked and plan.has_changes

    def _apply_cluster(self, wave: Wave, desired: ClusterManifests, revision: str) -> ChangeSet:
        try:
            return self._apply_owned(wave, desired, revision)
        except FencedOut as err:
            if not self.sharded:
                raise  # this replica lost the Lease: the pass ends here
            # Lost the cluster to another replica mid-apply: it carries on from the cluster's state.
            self.listener(
                PassEvent(Step.NOT_OWNER, wave.name, desired.cluster, revision, error=str(err), cause=err)
            )
            return ChangeSet(desired.cluster, revision, error=str(err))

    def _apply_owned(self, wave: Wave, desired: ClusterManifests, revision: str) -> ChangeSet:
        name = desired.cluster
        api = self.clients[name]
        state = self.states[name]
        self.listener(PassEvent(Step.APPLYING, wave.name, name, revision))
        before = state.degraded_before if state.revision == revision else health_before(api, state)
        self._save(
            name,
            replace(
                state,
                revision=revision,
                phase=SyncPhase.APPLYING,
                wave=wave.name,
                last_error="",
                apply_failure=None,
                degraded_before=before,
            ),
        )
        inventory = state.applied_inventory()
        rules = self.options.apply.rules
        try:
            plan = with_retries(
                lambda: plan_live_cluster(api, desired, self.options.diff, inventory, rules),
                self.options.apply.retry,
                self.stop,
            )
        except KubeError as err:
            plan = None
            error = f"reading live state failed: {err}"
        if plan is not None:
            error = plan.error
        if plan is None or error:
            result = ChangeSet(name, revision, error=error)
        else:
            result = ClusterApplier(api, self.options.apply, self.stop).apply(desired, plan, revision)
        now = self.clock()
        if result.ok:
            applied = replace(
                self.states[name],
                phase=SyncPhase.APPLIED,
                applied_at=now,
                healthy_since=0.0,
                inventory=_inventory(desired, result),
            )
        else:
            versions = {e.key(name): e.api_version for e in state.inventory}  # prunes too
            versions |= {m.key: m.api_version for m in desired.manifests}
            failure = apply_failure(result, versions, desired.content_hash, now)
            applied = replace(
                self.states[name],
                phase=SyncPhase.FAILED,
                applied_at=now,
                last_error=result.error,
                apply_failure=failure,
            )
        self._save(name, applied)
        step = Step.APPLIED if result.ok else Step.APPLY_FAILED
        self.listener(PassEvent(step, wave.name, name, revision, error=result.error, objects=result.writes))
        return result

    # -- drift repair -----------------------------------------------------------------------------

    def _repair(self, desired: ClusterManifests, state: ClusterSyncState) -> ChangeSet | None:
        """Plan ``desired`` against the cluster and apply what drifted, as a repair of the revision it
        runs (its phase and inventory stay); None when nothing drifted. Told to the listener."""
        api = self.clients[state.cluster]
        try:
            plan = plan_live_cluster(
                api, desired, self.options.diff, state.applied_inventory(), self.options.apply.rules
            )
        except KubeError as err:
            result = ChangeSet(state.cluster, state.revision, error=f"drift check failed: {err}")
        else:
            if not plan.error and not plan.has_changes:
                return None
            if plan.error:
                result = ChangeSet(state.cluster, state.revision, error=plan.error)
            else:
                applier = ClusterApplier(api, self.options.apply, self.stop)
                result = applier.apply(desired, plan, state.revision)
        if result.error:
            step = Step.DRIFT_REPAIR_FAILED
        elif result.writes:
            step = Step.DRIFT_REPAIRED
        else:
            return result
        self.listener(
            PassEvent(
                step,
                cluster=state.cluster,
                revision=state.revision,
                reason=f"{result.writes} object(s) re-applied" if result.writes else "",
                error=result.error,
                objects=result.writes,
            )
        )
        return result
