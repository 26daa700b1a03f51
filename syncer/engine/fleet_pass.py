"""One pass of the agent, in one call: ``FleetPass.run_pass``.

A pass advances the revision (poll git; a new tip goes through verify and the manifests or is
rejected whole), reads each cluster's sync state once, chooses the last good revision from those
states, rolls the revision in force out wave by wave, and records it as synced when the rollout
ended well. ``FleetPass.heal`` repairs drift on the clusters already on the revision in force.
Everything that happens is told to the listener as typed ``PassEvent``s and summed up in the
returned ``PassResult``; the caller decides how to log, count or show it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Protocol

from syncer.config import SourceOptions, TrustPolicy
from syncer.domain.changeset import ChangeSet
from syncer.domain.objects import ClusterManifests, DesiredFleet
from syncer.domain.plans import ClusterPlan
from syncer.domain.progress import Listener, PassEvent, Step
from syncer.domain.sync_state import ClusterSyncState
from syncer.engine.diff import plan_live_cluster
from syncer.engine.revision import Advance, PreparedRevision, Rejection, RevisionGate, RevisionOptions, Stage
from syncer.engine.rollout import FleetRollout
from syncer.engine.rollout_model import RolloutOptions, RolloutOutcome, RolloutReport, unreadable
from syncer.errors import ConfigError, KubeError, SourceError, SyncerError
from syncer.kube import KubeApi
from syncer.rollout import last_good_revision
from syncer.source import GitSource
from syncer.status.state_store import LoadedState

Connect = Callable[[str], KubeApi]
"""Opens the connection to one cluster, by name; SyncerError when it cannot."""


class Revisions(Protocol):
    """Where a pass takes revisions from: ``syncer.engine.revision.RevisionGate`` over git."""

    @property
    def current(self) -> PreparedRevision | None: ...

    def advance(self) -> Advance: ...

    def rebuild(self, revision: str) -> DesiredFleet: ...

    def mark_synced(self, revision: str) -> None: ...


@dataclass(frozen=True)
class PassResult:
    """What one pass did: the revision gate's answer, whether its rejection (if any) is new, the
    rollout's report when a rollout ran, the last good revision it chose and the clusters' states
    at the end of the pass."""

    advance: Advance
    report: RolloutReport | None = None
    new_rejection: bool = False
    last_good: str = ""
    states: Mapping[str, ClusterSyncState] = field(default_factory=lambda: MappingProxyType({}))

    @property
    def synced(self) -> bool:
        """True when the revision in force is on every cluster (applied now or before)."""
        return self.report is not None and self.report.outcome in {
            RolloutOutcome.APPLIED,
            RolloutOutcome.UNCHANGED,
        }


def git_revisions(source: SourceOptions, trust: TrustPolicy) -> RevisionGate:
    """The revisions of the fleet repository at ``source``, judged under ``trust``."""
    return RevisionGate(GitSource(source), trust, RevisionOptions(timeout=source.timeout))


def rejection_event(rejection: Rejection) -> PassEvent:
    """The event of a rejected tip: a source failure (git unreachable) is not the revision's fault."""
    step = Step.SOURCE_FAILED if rejection.stage is Stage.SOURCE else Step.REVISION_REJECTED
    return PassEvent(step, revision=rejection.revision, error=rejection.message, cause=rejection.error)


class FleetPass:
    """Takes revisions from ``revisions`` to the clusters, one pass per call."""

    def __init__(
        self,
        revisions: Revisions,
        connect: Connect,
        options: RolloutOptions = RolloutOptions(),
        listener: Listener | None = None,
    ) -> None:
        self.revisions = revisions
        self.connect = connect
        self.options = options
        self.listener = listener or (lambda _: None)
        self.clients: dict[str, KubeApi] = {}
        # Sharded replicas: whether this replica may write to a cluster now (None: every cluster).
        self.owns: Callable[[str], bool] | None = None
        self.known_clusters: tuple[str, ...] = ()
        self._seen_rejection: Rejection | None = None
        self._stop = threading.Event()
        self._read: dict[str, LoadedState] = {}
        self._opening = threading.RLock()  # clients and states are opened from the guard's threads too

    def client(self, cluster: str) -> KubeApi:
        """The connection to ``cluster``, opened on first use and kept."""
        with self._opening:
            if cluster not in self.clients:
                self.clients[cluster] = self.connect(cluster)
            return self.clients[cluster]

    def _rollout(self, stop: threading.Event) -> FleetRollout:
        return FleetRollout(self.clients, self.options, stop=stop, listener=self.listener, owns=self.owns)

    def _load(self, cluster: str) -> LoadedState:
        """``cluster``'s stored state, read at most once per pass."""
        with self._opening:
            if cluster not in self._read:
                self.client(cluster)
                self._read[cluster] = self._rollout(self._stop).load_state(cluster)
            return self._read[cluster]

    def plan_live(self, desired: ClusterManifests) -> ClusterPlan:
        """``desired`` planned against its cluster as the sync would plan it (its recorded inventory,
        the sync's rules); a cluster that cannot be reached gives a plan with ``error`` set."""
        try:
            api = self.client(desired.cluster)
            inventory = self._load(desired.cluster).state.applied_inventory()
            return plan_live_cluster(api, desired, self.options.diff, inventory, self.options.apply.rules)
        except SyncerError as err:
            return ClusterPlan(desired.cluster, error=str(err))

    def recorded_revisions(self) -> dict[str, str]:
        """The revisions the clusters record as applied or last good, each with the clusters recording
        it: the known clusters and those of the revision in force. A cluster whose record cannot be
        read is an error (a tip is never judged against part of the fleet's memory). The states read
        here are the ones the pass rolls out from: each is read once per pass."""
        current = self.revisions.current.fleet.clusters if self.revisions.current else {}
        found: dict[str, list[str]] = {}
        for name in sorted(set(self.known_clusters) | set(current)):
            try:
                state = self._load(name).state
            except (KubeError, ConfigError) as err:
                raise SourceError(f"cannot read the revision cluster {name} records: {err}") from err
            for revision in dict.fromkeys((state.revision, state.last_good)):
                if revision:
                    found.setdefault(revision, []).append(name)
        return {
            revision: f"the revision {', '.join(names)} record(s) as applied"
            for revision, names in found.items()
        }

    def run_pass(self, stop: threading.Event) -> PassResult:
        """Advance the revision and roll the revision in force out (or carry on with an interrupted
        rollout); ``stop`` ends the rollout at its next safe point."""
        self._stop, self._read = stop, {}
        try:
            return self._run_pass(stop)
        finally:
            self._read = {}

    def _run_pass(self, stop: threading.Event) -> PassResult:
        advance = self.revisions.advance()
        rejection = advance.rejection
        new_rejection = rejection is not None and rejection is not self._seen_rejection
        if rejection is not None and new_rejection:
            self._seen_rejection = rejection
            self.listener(rejection_event(rejection))
        current = advance.current
        if current is None:
            return PassResult(advance, new_rejection=new_rejection)
        for name in current.fleet.clusters:
            self.client(name)
        rollout = self._rollout(stop)
        try:
            states = rollout.read_states(self._read)
        except KubeError as err:
            return PassResult(advance, unreadable(current.revision, err), new_rejection)
        chosen = last_good_revision(states.values())
        report = rollout.roll_out(current.fleet, self._fleet_of(chosen, current))
        if report.outcome in {RolloutOutcome.APPLIED, RolloutOutcome.UNCHANGED}:
            self.revisions.mark_synced(current.revision)
        return PassResult(advance, report, new_rejection, chosen, MappingProxyType(dict(rollout.states)))

    def _fleet_of(self, revision: str, current: PreparedRevision) -> DesiredFleet | None:
        """The desired fleet of the last good ``revision`` (rebuilt from git unless it is the one in
        force); None when there is none or it cannot be rebuilt, and then a failed wave halts."""
        if not revision:
            return None
        if revision == current.revision:
            return current.fleet
        try:
            return self.revisions.rebuild(revision)
        except SyncerError as err:
            self.listener(PassEvent(Step.LAST_GOOD_UNAVAILABLE, revision=revision, error=str(err), cause=err))
            return None

    def heal(self, stop: threading.Event) -> tuple[ChangeSet, ...]:
        """Repair drift on the clusters already on the revision in force (see ``FleetRollout.heal``)."""
        current = self.revisions.current
        if current is None:
            return ()
        return self._rollout(stop).heal(current.fleet)
