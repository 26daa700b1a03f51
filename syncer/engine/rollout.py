"""``FleetRollout``: one revision rolled out across the fleet in waves, gated on health, halting and
rolling each failed cluster back to the revision it last ran healthy; and drift repair of the
clusters already on it (``FleetRollout.heal``).

The clusters' sync states are read once (``read_states``); from then on the rollout keeps them
current as it writes them. Every decision is recorded in the clusters themselves (their sync-state
ConfigMaps) before the next step, so a rollout interrupted at any point (SIGTERM, a crash, a lost
leader lease) resumes from the clusters: finished waves are not redone, applied clusters are not
re-applied, and health timeouts and bake times count from the times recorded there.

A cluster's fault stays that cluster's: one that cannot be read is left out and its wave applies to
the others, then waits for it; a wave that passed is only watched (``rollout_gate``). The parts,
composed here, none inheriting from another: ``rollout_state`` (the clusters' records),
``rollout_apply`` (applies and repairs), ``rollout_gate`` (health); and functions over them:
``failed_wave`` (a failed wave's failures and rollback), ``manual_gate`` (a person's promotion and
abort). What the rollout does next is decided by the pure rollout machine (``syncer.rollout.machine``),
whose effects ``rollout_run`` runs over these parts.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Collection, Mapping
from dataclasses import replace

from syncer.domain.changeset import ChangeSet
from syncer.domain.objects import DesiredFleet
from syncer.domain.progress import Listener
from syncer.domain.sync_state import ClusterSyncState
from syncer.engine.failed_wave import FleetsOf
from syncer.engine.rollout_apply import WaveApplier
from syncer.engine.rollout_gate import HealthGate, RolloutParts
from syncer.engine.rollout_model import RolloutHooks, RolloutOptions, RolloutReport
from syncer.engine.rollout_run import run_rollout
from syncer.engine.rollout_state import RolloutStates
from syncer.errors import KubeError
from syncer.kube import KubeApi
from syncer.rollout import Wave, is_done, plan_waves
from syncer.rollout.moves import RolloutOutcome
from syncer.rollout.pins import restricted
from syncer.rollout.waves import for_going_back, waves_without
from syncer.status.state_store import LoadedState

__all__ = ["FleetRollout"]


class FleetRollout:
    """Rolls revisions out to the clusters it has clients for, and repairs their drift: composed of
    the clusters' records (``RolloutStates``), the applier (``WaveApplier``) and the health gate
    (``HealthGate``), built here from what the rollout asks outside itself (``hooks``)."""

    def __init__(
        self,
        clients: Mapping[str, KubeApi],
        options: RolloutOptions = RolloutOptions(),
        *,
        stop: threading.Event | None = None,
        clock: Callable[[], float] = time.time,
        listener: Listener | None = None,
        hooks: RolloutHooks,
    ) -> None:
        self.records = RolloutStates(clients, options, stop=stop, clock=clock, listener=listener, hooks=hooks)
        self.applier = WaveApplier(self.records)
        self.gate = HealthGate(self.records, self.applier, hooks.query)
        self.parts = RolloutParts(self.records, self.applier, self.gate)

    @property
    def states(self) -> dict[str, ClusterSyncState]:
        """Each read cluster's state, kept current as the rollout writes it."""
        return self.records.states

    @property
    def unreachable(self) -> dict[str, str]:
        """The clusters that cannot be used this pass, each with why."""
        return self.records.unreachable

    @property
    def unsaved(self) -> dict[str, str]:
        """The clusters whose latest state could not be written, each with the error."""
        return self.records.unsaved

    def read_states(
        self,
        preloaded: Mapping[str, LoadedState] | None = None,
        failed: Mapping[str, KubeError] | None = None,
    ) -> dict[str, ClusterSyncState]:
        """Every cluster's stored state, read once per pass (``RolloutStates.read_states``)."""
        return self.records.read_states(preloaded, failed)

    # -- the rollout ------------------------------------------------------------------------------

    def sync(self, fleet: DesiredFleet, last_good: DesiredFleet | None = None) -> RolloutReport:
        """Read the clusters' states, then roll ``fleet`` out (see ``roll_out``); ``last_good`` is the
        one older revision a failed wave's clusters may go back to (each only if it ran it healthy)."""
        self.records.read_states()

        def fleets(revision: str) -> DesiredFleet | None:
            return last_good if last_good is not None and last_good.revision == revision else None

        return self.roll_out(fleet, fleets)

    def roll_out(
        self,
        fleet: DesiredFleet,
        fleets: FleetsOf | None = None,
        left_out: Collection[str] = (),
        going_back: bool = False,
    ) -> RolloutReport:
        """Roll ``fleet`` out wave by wave from the states read last; a failed wave halts, or rolls
        each of its clusters back to the revision it last ran healthy (``fleets`` gives the desired
        fleet of a revision, None when it cannot). The clusters ``left_out`` (a person pinned them
        to another revision) get nothing, but the waves are planned over the whole of ``fleet``, so
        that leaving a cluster out never moves another one to an earlier wave (``waves_without``).
        ``going_back``: a person's rollback (``syncer rollback``): its waves wait for health alone
        unless the policy asks for checks (``for_going_back``)."""
        labels = {name: c.labels for name, c in fleet.clusters.items()}
        waves = waves_without(plan_waves(labels, self.records.options.rollout), left_out)
        if going_back:
            waves = tuple(for_going_back(w, self.records.options.rollout.rollback_checks) for w in waves)
        fleet = restricted(fleet, set(fleet.clusters) - set(left_out))
        missing = sorted(set(fleet.clusters) - set(self.records.clients) - set(self.records.unreachable))
        if missing:
            return RolloutReport(
                fleet.revision, RolloutOutcome.HALTED, message=f"no connection for {', '.join(missing)}"
            )
        unread = sorted(set(fleet.clusters) - set(self.records.states) - set(self.records.unreachable))
        if unread:
            raise ValueError(f"roll_out before read_states: no state for {', '.join(unread)}")
        report = self._roll_out(fleet, waves, fleets or (lambda _: None))
        return replace(report, unsaved=tuple(sorted(self.records.unsaved.items())))

    def _roll_out(self, fleet: DesiredFleet, waves: tuple[Wave, ...], fleets: FleetsOf) -> RolloutReport:
        """The rollout machine (``syncer.rollout.machine``) run over this rollout's parts
        (``rollout_run``): what to do next is its decision, what happened the parts' answer."""
        return run_rollout(self.parts, fleet, waves, fleets)

    # -- drift repair -----------------------------------------------------------------------------

    def heal(self, fleet: DesiredFleet, *, read: bool = True) -> tuple[ChangeSet, ...]:
        """The drift job: every cluster that finished ``fleet``'s revision goes through
        ``repair_drift`` (the one path of drift repair, which asks whether the cluster may be written
        now). Clusters still rolling out, and clusters whose state cannot be read, are left out.
        The states are read first (``read``; else the ones read last are used). Returns the change
        sets that wrote or failed."""
        states = self.records.read_states() if read else dict(self.records.states)
        repaired: list[ChangeSet] = []
        for name in fleet.clusters:
            state = states.get(name)
            if state is None or not is_done(state, fleet.revision):
                continue
            result = self.applier.repair_drift(fleet, name)
            if result is not None:
                repaired.append(result)
        return tuple(repaired)
