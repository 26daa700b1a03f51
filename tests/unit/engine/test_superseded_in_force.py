"""A sharded replica that takes a newer revision mid-rollout (``Superseded``) rolls it out only once it
is the fleet's one revision in force, as at the start of a pass: it records it, or waits saying why
and applies nothing more. Otherwise a replica still on the older revision waits at a wave for this
one's clusters, while this one waits for the other's on a revision nobody recorded. In-memory
clusters and home cluster; the decisions are syncer's own."""

from __future__ import annotations

import threading

from syncer.domain.progress import PassEvent, Step
from syncer.engine.fleet_pass import PassScope
from syncer.engine.in_force import InForce, policy_fingerprint
from syncer.rollout.moves import RolloutOutcome
from syncer.status.revision_record import RevisionRecord
from syncer.status.state_store import StateStore
from tests.support.memory_kube import MemoryKube
from tests.support.memory_revisions import MemoryRevisions
from tests.support.unfenced import unfenced_pass
from tests.unit.engine.test_fleet_pass import CLUSTERS, STATE_NAMESPACE, fleet, options

MEMBERS = "syncer-members"


class Replica:
    """A replica owning every cluster, its branch in memory, sharing ``home`` with other replicas."""

    def __init__(self, home: MemoryKube, identity: str) -> None:
        self.clusters = {name: MemoryKube(name) for name in CLUSTERS}
        self.revisions = MemoryRevisions()
        self.events: list[PassEvent] = []
        self.on_canary_passed = lambda: None
        policy = policy_fingerprint(options().rollout)
        record = RevisionRecord(home, MEMBERS, identity)
        in_force = InForce(record, policy, lambda: {identity: policy})
        scope = PassScope(owns=lambda _: True, in_force=in_force)
        self.fleet_pass = unfenced_pass(
            self.revisions, self.clusters.__getitem__, options(), self._tell, scope=scope
        )
        self.record = record

    def _tell(self, event: PassEvent) -> None:
        self.events.append(event)
        if event.step is Step.GATE_PROCEED and event.wave == "canary" and event.revision == "rev-1":
            self.on_canary_passed()

    def on(self) -> dict[str, str]:
        return {n: StateStore(c, STATE_NAMESPACE).load().state.revision for n, c in self.clusters.items()}

    def in_force(self) -> str:
        seen = self.record.read()
        return seen.revision if seen is not None else ""


def test_a_revision_taken_mid_rollout_is_recorded_in_force_before_it_is_rolled_out() -> None:
    replica = Replica(MemoryKube("home"), "a")
    replica.revisions.push(fleet("rev-1"))
    recorded_when_applied: list[str] = []

    def push_newer() -> None:
        replica.revisions.push(fleet("rev-2"))

    def tell(event: PassEvent) -> None:
        if event.step is Step.APPLYING and event.revision == "rev-2":
            recorded_when_applied.append(replica.in_force())

    replica.on_canary_passed = push_newer
    listener = replica.fleet_pass.listener
    replica.fleet_pass.listener = lambda e: (tell(e), listener(e))[1]
    result = replica.fleet_pass.run_pass(threading.Event())
    assert result.report is not None
    assert (result.report.revision, result.report.outcome) == ("rev-2", RolloutOutcome.APPLIED)
    assert [e.revision for e in replica.events if e.step is Step.SUPERSEDED] == ["rev-2"]
    assert recorded_when_applied, "rev-2 was never applied"
    assert set(recorded_when_applied) == {"rev-2"}, recorded_when_applied
    assert replica.in_force() == "rev-2"
    assert set(replica.on().values()) == {"rev-2"}


def test_a_revision_taken_mid_rollout_that_cannot_be_put_in_force_is_not_rolled_out() -> None:
    home = MemoryKube("home")
    replica, other = Replica(home, "a"), Replica(home, "b")
    replica.revisions.push(fleet("rev-1"))

    def another_replica_moves_the_fleet_on() -> None:
        # Meanwhile another replica put rev-3 in force, which this one cannot fetch yet.
        other.revisions.push(fleet("rev-3"))
        other.fleet_pass.in_force.settle(  # type: ignore[union-attr]
            other.revisions.advance().current,  # type: ignore[arg-type]
            lambda *_: True,
            lambda: None,
        )
        replica.revisions.push(fleet("rev-2"))

    replica.on_canary_passed = another_replica_moves_the_fleet_on
    result = replica.fleet_pass.run_pass(threading.Event())
    assert result.report is not None
    assert result.report.outcome is RolloutOutcome.WAITING, result.report
    assert result.report.revision == "rev-2"
    assert "revision in force" in result.report.message
    assert "rev-3 (set by b)" in result.report.message
    waits = [e.reason for e in replica.events if e.step is Step.IN_FORCE_WAIT]
    assert waits == [result.report.message]
    assert not [e for e in replica.events if e.step is Step.APPLYING and e.revision == "rev-2"]
    assert replica.in_force() == "rev-3", "an older revision never moves the record back"
    assert replica.on() == {"canary": "rev-1", "eu-1": "", "us-1": ""}
