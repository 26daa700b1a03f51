"""One pass of the agent, in one call: ``FleetPass.run_pass``.

A pass advances the revision (poll git; a new tip goes through verify and the manifests or is
rejected whole), reads each cluster's sync state once, rolls the revision in force out wave by wave
(a failed wave's clusters each go back to the revision they last ran healthy), and records it as
synced when the rollout ended well. ``FleetPass.heal`` repairs drift on the clusters already on the
revision in force. A cluster that cannot be connected to or read is reported and waited for; it
never stops the pass for the others. A pass whose replica lost the Lease ends without writing.
Everything that happens is told to the listener as typed ``PassEvent``s and summed up in the
returned ``PassResult``; the caller decides how to log, count or show it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Protocol

from syncer.config import SourceOptions, TrustPolicy
from syncer.domain.changeset import ChangeSet
from syncer.domain.objects import DesiredFleet
from syncer.domain.progress import Listener, PassEvent, Step
from syncer.domain.revision_history import HistoryEntry
from syncer.domain.sync_state import ClusterSyncState
from syncer.engine.acts_read import ActsRead
from syncer.engine.cluster_reads import ClusterReads
from syncer.engine.in_force import InForce
from syncer.engine.pinned import heal_pins, roll_pins
from syncer.engine.revision import (
    Advance,
    PollOutcome,
    PreparedRevision,
    Rejection,
    RevisionGate,
    RevisionOptions,
    Stage,
)
from syncer.engine.rollout import FleetRollout
from syncer.engine.rollout_model import RolloutHooks, RolloutOptions, RolloutReport
from syncer.engine.unknown_records import ignore_unknown
from syncer.errors import FencedOut, SyncerError
from syncer.rollout.moves import RolloutOutcome
from syncer.rollout.pins import pins_away
from syncer.source import GitSource
from syncer.tracing import Span, span

MAX_SUPERSEDED = 5  # newer revisions one pass takes over from, before leaving the rest to the next


class Revisions(Protocol):
    """Where a pass takes revisions from: ``syncer.engine.revision.RevisionGate`` over git."""

    @property
    def current(self) -> PreparedRevision | None: ...

    def advance(self) -> Advance: ...

    def rebuild(self, revision: str) -> DesiredFleet: ...

    def mark_synced(self, revision: str) -> Rejection | None:
        """Remember ``revision`` as synced; the source failure when the cache cannot record it."""
        ...

    def admits(self, revision: str, recorded: str) -> bool:
        """Whether ``revision`` may go to a cluster that records ``recorded`` (it descends from it,
        or the trust policy allows history rewrites)."""
        ...

    def descends(self, revision: str, ancestor: str) -> bool:
        """Whether ``revision`` is a later commit on ``ancestor``'s line of history."""
        ...

    @property
    def unknown(self) -> frozenset[str]:
        """The recorded commits the last poll found the repository does not hold."""
        ...

    def holds(self, revision: str) -> bool:
        """Whether the repository holds ``revision``."""
        ...


@dataclass(frozen=True)
class PassResult:
    """What one pass did: the revision gate's answer, whether its rejection (if any) is new, the
    rollout's report when a rollout ran, the clusters' states at the end of the pass, the clusters
    that could not be used (with why) and each cluster's history of revisions as its state's last
    read or write left it (``syncer.status.history``)."""

    advance: Advance
    report: RolloutReport | None = None
    new_rejection: bool = False
    states: Mapping[str, ClusterSyncState] = field(default_factory=lambda: MappingProxyType({}))
    unreachable: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    histories: Mapping[str, tuple[HistoryEntry, ...]] = field(default_factory=lambda: MappingProxyType({}))

    @property
    def synced(self) -> bool:
        """True when the revision in force is on every cluster (applied now or before)."""
        return self.report is not None and self.report.outcome in {
            RolloutOutcome.APPLIED,
            RolloutOutcome.UNCHANGED,
        }


def _describe(passing: Span, result: PassResult) -> None:
    """The pass's span: the revision in force and how its rollout ended."""
    if result.advance.current is not None:
        passing.set("syncer.revision", result.advance.current.revision)
    if result.report is not None:
        passing.set("syncer.result", result.report.outcome.value)
        if result.report.outcome is RolloutOutcome.HALTED:
            passing.fail(result.report.message)


def git_revisions(
    source: SourceOptions,
    trust: TrustPolicy,
    recorded: Callable[[Collection[str]], Mapping[str, str]] | None = None,
    judge: Callable[[DesiredFleet, DesiredFleet | None], object] | None = None,
) -> RevisionGate:
    """The revisions of the fleet repository at ``source``, judged under ``trust`` (``recorded`` and
    ``judge``: see ``RevisionGate``)."""
    options = RevisionOptions(timeout=source.timeout)
    return RevisionGate(GitSource(source), trust, options, recorded, judge=judge)


@dataclass(frozen=True)
class PassScope:
    """The clusters a pass answers for: a sharded replica writes only those it ``owns`` now (None:
    every cluster) and settles the one revision in force with the other replicas (``in_force``;
    None: this replica alone decides)."""

    owns: Callable[[str], bool] | None = None
    in_force: InForce | None = None


def signer_of(prepared: PreparedRevision) -> str:
    """The trust policy's name of who signed the revision's own commit ("" when not known)."""
    commits = prepared.verification.commits
    own = [c for c in commits if c.commit == prepared.revision] or list(commits[-1:])
    return own[0].signer if own else ""


def rejection_event(rejection: Rejection) -> PassEvent:
    """The event of a rejected tip: a source failure (git unreachable) is not the revision's fault."""
    step = Step.SOURCE_FAILED if rejection.stage is Stage.SOURCE else Step.REVISION_REJECTED
    return PassEvent(step, revision=rejection.revision, error=rejection.message, cause=rejection.error)


class FleetPass:
    """Takes revisions from ``revisions`` to the clusters, one pass per call; ``reads`` are the
    clusters' connections and states (with their fences), the same the revision gate judges from."""

    def __init__(
        self,
        revisions: Revisions,
        reads: ClusterReads,
        options: RolloutOptions,
        listener: Listener | None = None,
        *,
        scope: PassScope = PassScope(),
    ) -> None:
        self.revisions = revisions
        self.reads = reads
        self.options = options
        self.listener = listener or (lambda _: None)
        self.fences = reads.fences
        self.clients = reads.clients
        self.owns = scope.owns
        self.in_force = scope.in_force
        self._seen_rejection: Rejection | None = None
        # States decided but not written yet (their cluster could not be written), kept across passes.
        self._pending: dict[str, ClusterSyncState] = {}
        self._suspended: dict[str, bool] = {}  # whether each cluster recorded a suspension when last read
        self._acts = ActsRead()
        self._rebuilt: dict[str, DesiredFleet] = {}  # older revisions rebuilt this pass, for rollbacks
        self._signers: dict[str, str] = {}  # who signed each revision rolled out, for the history

    def _new_rollout(self, stop: threading.Event) -> FleetRollout:
        hooks = RolloutHooks(
            owns=self.owns or (lambda _: True),
            sharded=self.owns is not None,
            fences=self.fences,
            newer=self._newer,
            admits=self.revisions.admits,
            signer=lambda revision: self._signers.get(revision, ""),
        )
        return FleetRollout(self.clients, self.options, stop=stop, listener=self.listener, hooks=hooks)

    def _rollout(self, stop: threading.Event, fleet: DesiredFleet) -> FleetRollout:
        """A rollout over the clusters of ``fleet``; those that cannot be connected to are reported
        and waited for."""
        for name in fleet.clusters:
            self.reads.connected(name)
        rollout = self._new_rollout(stop)
        for name, problem in self.reads.unconnected.items():
            if name in fleet.clusters:
                rollout.unreachable[name] = problem
                self.listener(PassEvent(Step.CLUSTER_UNREACHABLE, cluster=name, error=problem))
        return rollout

    def run_pass(self, stop: threading.Event) -> PassResult:
        """Advance the revision and roll the revision in force out (or carry on with an interrupted
        rollout); ``stop`` ends the rollout at its next safe point. A cluster that cannot be reached
        is reported and waited for; it never stops the pass for the others."""
        self.reads.begin(stop)
        self._rebuilt = {}
        try:
            with span("syncer.pass", root=True) as passing:
                result = self._run_pass(stop)
                _describe(passing, result)
                return result
        finally:
            self.reads.end()
            self._rebuilt = {}

    def _advance(self) -> tuple[Advance, bool]:
        """Advance the revision; tell the recorded revisions not used as a base and a rejection not
        told before (True when it is new)."""
        with span("syncer.poll") as polling:
            advance = self.revisions.advance()
            if advance.rejection is not None:
                polling.fail(advance.rejection.message)
        for ignored in advance.ignored_bases:
            self.listener(PassEvent(Step.BASE_IGNORED, revision=ignored.revision, reason=ignored.message))
        rejection = advance.rejection
        new_rejection = rejection is not None and not rejection.same_as(self._seen_rejection)
        if rejection is not None and new_rejection:
            self._seen_rejection = rejection
            self.listener(rejection_event(rejection))
        return advance, new_rejection

    def _source_fault(self, advance: Advance, new: bool, fault: Rejection) -> tuple[Advance, bool]:
        """A cache fault met after the poll: the pass's source failure (a failed poll), told when not
        told yet; a tip's own rejection stays the pass's rejection."""
        told = fault.same_as(self._seen_rejection)
        if not told:
            self._seen_rejection = fault
            self.listener(rejection_event(fault))
        if advance.rejection is not None and advance.rejection.stage is not Stage.SOURCE:
            return advance, new
        return replace(advance, rejection=fault), new or not told

    def _run_pass(self, stop: threading.Event) -> PassResult:
        advance, new_rejection = self._advance()
        current = advance.current
        if current is None:
            return PassResult(advance, new_rejection=new_rejection)
        current, why = self._settled(current)
        if why:
            waiting = RolloutReport(current.revision, RolloutOutcome.WAITING, message=why)
            return PassResult(advance, waiting, new_rejection)
        try:
            report, rollout = self._roll(current, stop)
            for _ in range(MAX_SUPERSEDED):
                latest = self.revisions.current
                if report.outcome is not RolloutOutcome.SUPERSEDED or latest is None:
                    break
                self.listener(PassEvent(Step.SUPERSEDED, revision=latest.revision, reason=report.revision))
                # The newer revision is rolled out only once it is the fleet's one in force, as at the
                # start of a pass: another replica may wait at a wave for this one's clusters on it.
                current, why = self._settled(latest)
                if why:
                    unsaved = report.unsaved  # the superseded rollout's, still to be written
                    report = RolloutReport(
                        current.revision, RolloutOutcome.WAITING, message=why, unsaved=unsaved
                    )
                    break
                report, rollout = self._roll(current, stop, rollout)
            if report.outcome is RolloutOutcome.FENCED_OUT:  # the rollout told it: nothing more is written
                return PassResult(advance, report, new_rejection)
        except FencedOut as err:
            return PassResult(advance, self._fenced_out(current.revision, err), new_rejection)
        self._pending = {n: rollout.states[n] for n, _ in report.unsaved if n in rollout.states}
        if report.outcome in {RolloutOutcome.APPLIED, RolloutOutcome.UNCHANGED}:
            fault = self.revisions.mark_synced(current.revision)
            if fault is not None:  # the cache could not record it: this poll failed, told once
                advance, new_rejection = self._source_fault(advance, new_rejection, fault)
        states = MappingProxyType(dict(rollout.states))
        unreachable = MappingProxyType(dict(rollout.unreachable))
        histories = MappingProxyType(rollout.records.histories())
        return PassResult(advance, report, new_rejection, states, unreachable, histories)

    def _roll(
        self, current: PreparedRevision, stop: threading.Event, superseded: FleetRollout | None = None
    ) -> tuple[RolloutReport, FleetRollout]:
        """Roll ``current`` out from the states read this pass (or, taking over from the rollout of a
        ``superseded`` revision, from the states as that rollout left them)."""
        self._signers[current.revision] = signer_of(current)
        rollout = self._rollout(stop, current.fleet)
        rollout.read_states(self.reads.read, self.reads.unread)
        if superseded is None:
            self._remember(rollout)
            self._tell_suspensions(rollout.states)
            self._acts.record(rollout.states)  # people's acts, in the pass's trace
        else:
            rollout.states.update(superseded.states)
            rollout.unsaved.update(superseded.unsaved)
        context = (self.listener, rollout.records.clock())
        ignore_unknown(rollout.states, rollout.unsaved, self.revisions.unknown, current.revision, context)
        rollout.records.hold_back(current.revision)
        rollout.records.save_unsaved()
        # A cluster a person pinned to another revision (``syncer rollback``) is left out of the
        # revision in force, and gets its pinned revision through the same rollout instead.
        pins = pins_away(rollout.states, current.revision)
        report = rollout.roll_out(current.fleet, lambda revision: self._fleet_of(revision, current), pins)
        if report.outcome is not RolloutOutcome.FENCED_OUT:  # else nothing more may be written
            lost = roll_pins(rollout, pins, lambda revision: self._fleet_of(revision, current))
            if lost is not None:  # a pinned rollout lost the Lease: so did the pass
                report = replace(report, outcome=RolloutOutcome.FENCED_OUT, message=lost.message)
        return report, rollout

    def _fenced_out(self, revision: str, err: FencedOut) -> RolloutReport:
        """This replica may not write any more (it lost the Lease): the pass ends here, nothing more
        is written; the replica that holds the Lease carries on from the clusters' states."""
        self.listener(PassEvent(Step.FENCED_OUT, revision=revision, error=str(err), cause=err))
        return RolloutReport(revision, RolloutOutcome.FENCED_OUT, message=str(err))

    def _settled(self, current: PreparedRevision) -> tuple[PreparedRevision, str]:
        """The revision this pass rolls out: ``current``, or for a sharded replica the fleet's one
        revision in force (``engine.in_force``); with why it must not roll out now (else "")."""
        if self.in_force is None:
            return current, ""
        current, why = self.in_force.settle(
            current, self.revisions.descends, self._take_newer, self.revisions.holds
        )
        if why:
            self.listener(PassEvent(Step.IN_FORCE_WAIT, revision=current.revision, reason=why))
        return current, why

    def _take_newer(self) -> PreparedRevision | None:
        """Poll git again (the fleet's revision in force is newer than this replica's)."""
        self._newer()
        return self.revisions.current

    def _newer(self) -> bool:
        """Poll git between waves: True when a newer tip passed verification and is now in force."""
        return self._advance()[0].outcome is PollOutcome.ACCEPTED

    def _remember(self, rollout: FleetRollout) -> None:
        """A state this replica decided but could not write stays decided: it is used instead of the
        older stored one (and written again) until a write succeeds, so a cluster whose state cannot
        be written is not applied and rolled back again on every pass (``_roll`` writes it again
        first)."""
        for name, pending in self._pending.items():
            stored = rollout.states.get(name)
            if stored is not None and stored.updated_at <= pending.updated_at:
                rollout.states[name] = pending
                rollout.unsaved[name] = "not written yet"

    def _tell_suspensions(self, states: Mapping[str, ClusterSyncState]) -> None:
        """Tell each cluster whose suspension began or ended since the last pass read it (the
        first read of a cluster only learns it)."""
        for name, state in sorted(states.items()):
            before, now = self._suspended.get(name), state.suspension.active
            self._suspended[name] = now
            if before is None or before == now:
                continue
            step = Step.SUSPENSION_STARTED if now else Step.SUSPENSION_ENDED
            why = state.suspension.describe() or state.suspension.describe_end()
            self.listener(PassEvent(step, state.wave, name, state.revision, reason=why))

    def _fleet_of(self, revision: str, current: PreparedRevision) -> DesiredFleet | None:
        """The desired fleet of ``revision`` (rebuilt from git unless it is the one in force); None
        when it cannot be rebuilt, and then the clusters that would go back to it stay failed."""
        if revision == current.revision:
            return current.fleet
        if revision not in self._rebuilt:
            try:
                self._rebuilt[revision] = self.revisions.rebuild(revision)
            except SyncerError as err:
                self.listener(
                    PassEvent(Step.LAST_GOOD_UNAVAILABLE, revision=revision, error=str(err), cause=err)
                )
                return None
        return self._rebuilt[revision]

    def heal(self, stop: threading.Event) -> tuple[ChangeSet, ...]:
        """Repair drift on the clusters already on the revision in force (see ``FleetRollout.heal``),
        and on the clusters a person pinned, against their pinned revision."""
        current = self.revisions.current
        if current is None:
            return ()
        self.reads.unconnected.clear()
        try:
            with span("syncer.drift", {"syncer.revision": current.revision}, root=True):
                rollout = self._rollout(stop, current.fleet)
                repaired = rollout.heal(current.fleet)
                pins = pins_away(rollout.states, current.revision)
                return repaired + heal_pins(rollout, pins, lambda rev: self._fleet_of(rev, current))
        except FencedOut as err:
            self._fenced_out(current.revision, err)
            return ()
        finally:
            self._rebuilt = {}
