"""The apply part of a rollout: a wave's clusters planned against their live state and applied with
server-side apply, each step recorded in the cluster's sync state first; and the drift repair of a
cluster already on a revision (re-planned, re-applied where something drifted, its phase untouched).
"""

from __future__ import annotations

import contextlib
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace

from syncer.apply import ClusterApplier, with_retries
from syncer.config.settings import WINDOW_RECORD_REFRESH
from syncer.domain.changeset import ChangeSet, EntryOutcome
from syncer.domain.objects import ClusterManifests, DesiredFleet
from syncer.domain.progress import PassEvent, Step, Waiting
from syncer.domain.sync_state import InventoryEntry, SyncPhase
from syncer.domain.window_record import record_due
from syncer.engine.diff import plan_live_cluster
from syncer.engine.failures import health_before
from syncer.engine.rollout_state import RolloutStates
from syncer.errors import FencedOut, KubeError
from syncer.rollout import Held, Wave, is_done
from syncer.rollout.failures import apply_failure
from syncer.rollout.held import HoldKind, person_hold
from syncer.rollout.window_judge import WindowOverride, judge_cluster
from syncer.tracing import carried


def _inventory(desired: ClusterManifests, applied: ChangeSet) -> tuple[InventoryEntry, ...]:
    uids = {e.key: e.uid for e in applied.entries if e.outcome is EntryOutcome.APPLIED}
    return tuple(
        sorted(
            InventoryEntry(m.api_version, m.key.kind, m.key.namespace, m.key.name, uids.get(m.key, ""))
            for m in desired.manifests
        )
    )


class WaveApplier:
    """Applies revisions to clusters and repairs their drift (see the module docstring), writing
    each step to the clusters' ``records``."""

    def __init__(self, records: RolloutStates) -> None:
        self.records = records

    def apply_wave(self, wave: Wave, fleet: DesiredFleet, taking_over: bool = False) -> tuple[ChangeSet, ...]:
        """Apply the wave to the reachable clusters this replica owns that are not done; those that
        are done have their drift repaired (``repair_drift``) unless ``taking_over`` (clusters gained
        while waiting at the gate: only those not done)."""
        reachable = [c for c in wave.clusters if c not in self.records.unreachable and self.records.owns(c)]
        todo = [c for c in reachable if not is_done(self.records.states[c], fleet.revision)]
        if taking_over and todo:
            # Gained from another replica: what it recorded last is read again, and a cluster it put
            # on a revision this one does not descend from is left as it is (``hold_back``).
            for name in todo:
                with contextlib.suppress(KubeError):
                    self.records.states[name] = self.records.load_state(name).state
            self.records.hold_back(fleet.revision, todo)
            todo = [
                c
                for c in todo
                if c in self.records.states and not is_done(self.records.states[c], fleet.revision)
            ]
        repairs: list[ChangeSet] = []
        for name in reachable:
            if name in todo or taking_over:
                continue
            repaired = self.repair_drift(fleet, name, wave.name)
            if repaired is not None:
                repairs.append(repaired)
            elif not self.records.sharded:
                self.records.listener(PassEvent(Step.ALREADY_APPLIED, wave.name, name, fleet.revision))
        if not todo:
            return tuple(repairs)
        with ThreadPoolExecutor(max_workers=max(1, wave.gate.max_concurrent)) as pool:
            apply = carried(self.apply_cluster)  # in the wave's span
            applied = pool.map(lambda c: apply(wave, fleet.clusters[c], fleet.revision), todo)
            return (*repairs, *applied)

    def apply_cluster(self, wave: Wave, desired: ClusterManifests, revision: str) -> ChangeSet:
        try:
            return self._apply_owned(wave, desired, revision)
        except FencedOut as err:
            if not self.records.sharded:
                raise  # this replica lost the Lease: the pass ends here
            # Lost the cluster to another replica mid-apply: it carries on from the cluster's state.
            self.records.listener(
                PassEvent(Step.NOT_OWNER, wave.name, desired.cluster, revision, error=str(err), cause=err)
            )
            return ChangeSet(desired.cluster, revision, error=str(err))

    def _apply_owned(self, wave: Wave, desired: ClusterManifests, revision: str) -> ChangeSet:
        name = desired.cluster
        api = self.records.clients[name]
        state = self.records.states[name]
        if person_hold(state, revision) is not None:
            return self._not_applied(wave, name, revision)
        self.records.listener(PassEvent(Step.APPLYING, wave.name, name, revision))
        before = state.degraded_before if state.revision == revision else health_before(api, state)
        applying = replace(
            state,
            revision=revision,
            phase=SyncPhase.APPLYING,
            wave=wave.name,
            last_error="",
            apply_failure=None,
            degraded_before=before,
        )
        if not self.records.save(name, applying, held=lambda now: person_hold(now, revision) is not None):
            # A person pinned or suspended it since the pass read it: nothing is written to it.
            return self._not_applied(wave, name, revision)
        inventory = state.applied_inventory()
        rules = self.records.options.apply.rules
        try:
            plan = with_retries(
                lambda: plan_live_cluster(api, desired, self.records.options.diff, inventory, rules),
                self.records.options.apply.retry,
                self.records.stop,
            )
        except KubeError as err:
            plan = None
            error = f"reading live state failed: {err}"
        if plan is not None:
            error = plan.error
        if plan is None or error:
            result = ChangeSet(name, revision, error=error)
        else:
            result = ClusterApplier(api, self.records.options.apply, self.records.stop).apply(
                desired, plan, revision
            )
        now = self.records.clock()
        if result.ok:
            applied = replace(
                self.records.states[name],
                phase=SyncPhase.APPLIED,
                applied_at=now,
                healthy_since=0.0,
                inventory=_inventory(desired, result),
                trace_id=result.trace_id,
            )
        else:
            versions = {e.key(name): e.api_version for e in state.inventory}  # prunes too
            versions |= {m.key: m.api_version for m in desired.manifests}
            failure = apply_failure(result, versions, desired.content_hash, now)
            applied = replace(
                self.records.states[name],
                phase=SyncPhase.FAILED,
                applied_at=now,
                last_error=result.error,
                apply_failure=failure,
                trace_id=result.trace_id,
            )
        self.records.save(name, applied)
        step = Step.APPLIED if result.ok else Step.APPLY_FAILED
        kept = result.kept()
        self.records.listener(
            PassEvent(
                step,
                wave.name,
                name,
                revision,
                kept,
                error=result.error,
                objects=result.writes,
                changes=result,
            )
        )
        return result

    # -- whether a cluster may be changed now --------------------------------------------------------

    def held_now(
        self,
        clusters: tuple[str, ...],
        fleet: DesiredFleet,
        wave: str = "",
        *,
        pending_only: bool = True,
        windows: bool = True,
    ) -> Held:
        """The one decision whether clusters may be changed now, asked by every writer: a wave before
        it applies, each cluster's apply, drift repair and a rollback. A cluster a person suspended
        may not (whatever its window), nor one a person pinned to another revision than ``fleet``'s,
        then one outside its maintenance window may not (``closed_windows``; not asked with
        ``windows`` False: a rollback undoes a change that started inside the window). ``pending_only``:
        only the clusters still to get ``fleet``."""
        suspended: list[str] = []
        pinned: list[str] = []
        for name in sorted(clusters):
            state = self.records.states.get(name)
            if state is None or (pending_only and is_done(state, fleet.revision)):
                continue
            hold = person_hold(state, fleet.revision)
            if hold is None:
                continue
            step = Step.CLUSTER_SUSPENDED if hold.kind is HoldKind.SUSPENDED else Step.CLUSTER_PINNED
            self.records.listener(PassEvent(step, wave, name, fleet.revision, reason=hold.why))
            (suspended if hold.kind is HoldKind.SUSPENDED else pinned).append(f"{name}: {hold.why}")
        held = {line.split(": ", 1)[0] for line in (*suspended, *pinned)}
        open_ones = tuple(c for c in clusters if c not in held)
        closed = self.closed_windows(open_ones, fleet, wave, pending_only=pending_only) if windows else []
        return Held(tuple(suspended), tuple(closed), tuple(pinned))

    def closed_windows(
        self,
        clusters: tuple[str, ...],
        fleet: DesiredFleet,
        wave: str = "",
        *,
        pending_only: bool = True,
        changes_only: bool = False,
    ) -> list[str]:
        """The clusters of ``clusters`` that are outside their maintenance window now (with why and
        when they open), of those still to get ``fleet`` (all with ``pending_only=False``, for drift
        repair); each judgement is told to the listener (with ``changes_only``, only one that changes
        what the cluster records: the watch over a passed wave keeps the record current without
        telling the same judgement every poll).
        Every replica judges every cluster the same way, from its labels, the clock and the override
        recorded in its state, so a wave waits as a whole whichever replica applies it."""
        windows = self.records.options.rollout.windows
        if not windows:
            return []
        closed = []
        now = self.records.clock()
        for name in sorted(clusters):
            state = self.records.states.get(name)
            if state is None or (pending_only and is_done(state, fleet.revision)):
                continue
            override = WindowOverride(state.window_override, state.window_override_until)
            verdict = judge_cluster(name, fleet.clusters[name].labels, windows, now, override)
            step = Step.WINDOW_OPEN if verdict.open else Step.WINDOW_CLOSED
            step = Step.WINDOW_OVERRIDDEN if verdict.overridden else step
            waiting = None if verdict.open else Waiting.WINDOW
            recorded = "" if verdict.open else verdict.reason
            if not changes_only or state.window != recorded:
                event = PassEvent(step, wave, name, fleet.revision, reason=verdict.reason, waiting=waiting)
                self.records.listener(event)
            if not verdict.open:
                closed.append(f"{name}: {verdict.reason}")
            if self.records.owns(name) and record_due(state, recorded, now, WINDOW_RECORD_REFRESH):
                self.records.save(name, replace(state, window=recorded, window_at=now))
        return closed

    def _not_applied(self, wave: Wave, name: str, revision: str) -> ChangeSet:
        """A cluster a person suspended, or pinned to another revision: nothing is written to it, and
        the wave waits for it."""
        hold = person_hold(self.records.states[name], revision)
        why = hold.why if hold is not None else ""
        step = (
            Step.CLUSTER_PINNED
            if hold is not None and hold.kind is HoldKind.PINNED
            else Step.CLUSTER_SUSPENDED
        )
        self.records.listener(PassEvent(step, wave.name, name, revision, reason=why))
        self.records.unreachable[name] = why
        return ChangeSet(name, revision, error=why)

    # -- drift repair -----------------------------------------------------------------------------

    def repair_drift(self, fleet: DesiredFleet, name: str, wave: str = "") -> ChangeSet | None:
        """The one path of drift repair, whoever asks (the watch over a passed wave, a wave whose
        done clusters are looked at again, the drift job): ``name``, already on the revision it
        records, is planned against its live state and what drifted (a field another manager
        changed, an object deleted) is applied again, as a repair of that revision (its phase and
        inventory stay). Nothing is written unless the cluster may be changed now: this replica may
        write to it (it owns it; every write passes the fence) and it is inside its maintenance
        window (a repair is a change like a rollout; found drift then waits, said as
        ``drift-repair-waiting``). None when nothing drifted or it waits."""
        state = self.records.states.get(name)
        if state is None or name in self.records.unreachable or not self.records.owns(name):
            return None
        desired = fleet.clusters[name]
        api = self.records.clients[name]
        try:
            plan = plan_live_cluster(
                api,
                desired,
                self.records.options.diff,
                state.applied_inventory(),
                self.records.options.apply.rules,
            )
        except KubeError as err:
            result = ChangeSet(name, state.revision, error=f"drift check failed: {err}")
        else:
            if not plan.error and not plan.has_changes:
                return None
            held = self.held_now((name,), fleet, wave, pending_only=False)
            if held:
                self.records.listener(
                    PassEvent(
                        Step.DRIFT_REPAIR_WAITING,
                        wave,
                        name,
                        state.revision,
                        reason=f"drift found; repaired once it may be changed: {held.reason}",
                        waiting=held.waiting,
                    )
                )
                return None
            if plan.error:
                result = ChangeSet(name, state.revision, error=plan.error)
            else:  # a blocked plan (a conflict under the report policy) comes back as a failed repair
                result = ClusterApplier(api, self.records.options.apply, self.records.stop).apply(
                    desired, plan, state.revision
                )
        if result.error:
            step = Step.DRIFT_REPAIR_FAILED
        elif result.writes:
            step = Step.DRIFT_REPAIRED
        else:
            return result
        self.records.listener(
            PassEvent(
                step,
                wave,
                name,
                state.revision,
                reason=f"{result.writes} object(s) re-applied" if result.writes else "",
                error=result.error,
                objects=result.writes,
                changes=result,
            )
        )
        return result
