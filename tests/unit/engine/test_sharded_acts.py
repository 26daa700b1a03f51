"""A person's acts seen from sharded replicas, through in-memory clusters shared by two replicas that
own different clusters: each replica writes only its own clusters, and both reach the same decision
from what the clusters record (an abort, a suspension), saying the same reason."""

from __future__ import annotations

import threading
import time
from dataclasses import replace

from syncer.config.rollout import WaveGate
from syncer.domain.gates import Abort
from syncer.domain.progress import PassEvent, Step
from syncer.domain.sync_state import Suspension, SyncPhase
from syncer.engine.fleet_pass import PassResult, PassScope
from syncer.rollout.moves import RolloutOutcome
from syncer.status.acts import PersonActs
from syncer.status.state_store import StateStore
from tests.support.fleet_repo import canary_then_rest
from tests.support.memory_kube import MemoryKube
from tests.support.memory_revisions import MemoryRevisions
from tests.support.unfenced import unfenced_pass
from tests.unit.engine.test_fleet_pass import CLUSTERS, STATE_NAMESPACE, fleet, options


class Shared:
    """The clusters and the branch both replicas see."""

    def __init__(self, health_timeout: float = 0.0) -> None:
        self.clusters = {name: MemoryKube(name) for name in CLUSTERS}
        self.revisions = MemoryRevisions()
        gate = WaveGate(max_concurrent=2, health_timeout=health_timeout, bake=0.0)
        self.options = replace(options(), rollout=canary_then_rest(gate))
        self.on_hold = False

    def acts(self, cluster: str) -> PersonActs:
        return PersonActs(self.clusters[cluster], STATE_NAMESPACE)

    def on(self) -> dict[str, tuple[str, SyncPhase]]:
        states = {n: StateStore(c, STATE_NAMESPACE).load().state for n, c in self.clusters.items()}
        return {n: (s.revision, s.phase) for n, s in states.items()}

    def writes(self) -> dict[str, int]:
        """Every write each cluster took (state writes included)."""
        return {
            n: sum(k for (v, _, _), k in c.calls.items() if v not in {"get", "list"})
            for n, c in self.clusters.items()
        }


class Replica:
    """One replica's pass over the shared clusters, owning ``owned``; ``stop_waiting`` ends its pass
    when its gate waits (as SIGTERM would)."""

    def __init__(self, shared: Shared, owned: set[str]) -> None:
        self.events: list[PassEvent] = []
        self.stop_waiting = False
        self.stop = threading.Event()
        self.fleet_pass = unfenced_pass(
            shared.revisions,
            shared.clusters.__getitem__,
            shared.options,
            self._tell,
            scope=PassScope(owns=owned.__contains__),
        )

    def _tell(self, event: PassEvent) -> None:
        self.events.append(event)
        if self.stop_waiting and event.step is Step.GATE_WAIT:
            self.stop.set()

    def run(self) -> PassResult:
        self.events.clear()
        self.stop.clear()
        return self.fleet_pass.run_pass(self.stop)

    def told(self, step: Step) -> list[str]:
        return [e.reason for e in self.events if e.step is step]


def test_an_abort_of_the_canary_in_flight_ends_it_on_both_replicas_and_only_its_owner_rolls_it_back() -> None:
    shared = Shared(health_timeout=30.0)
    owner, other = Replica(shared, {"canary"}), Replica(shared, {"eu-1", "us-1"})
    shared.revisions.push(fleet("rev-1"))
    owner.stop_waiting = True
    owner.run()
    other.run()
    assert shared.on() == dict.fromkeys(CLUSTERS, ("rev-1", SyncPhase.HEALTHY))
    shared.revisions.push(fleet("rev-2", never_ready=True))
    owner.run()  # the canary is on rev-2, its gate waits for its health
    assert shared.on()["canary"] == ("rev-2", SyncPhase.APPLIED)
    shared.acts("canary").record_abort(Abort("rev-2", "ops", "latency", 1.8e9))

    before = shared.writes()
    result = other.run()
    assert result.report is not None
    assert result.report.outcome is RolloutOutcome.HALTED, result.report
    assert result.report.message == "aborted by ops at 2027-01-15 08:00 UTC: latency"
    assert shared.writes() == before, "a replica writes nothing to a cluster it does not own"

    result = owner.run()
    assert result.report is not None
    assert result.report.outcome is RolloutOutcome.ROLLED_BACK, result.report
    assert shared.on()["canary"] == ("rev-1", SyncPhase.ROLLED_BACK)
    for replica in (owner, other):  # from now on both refuse rev-2 there, for the same reason
        result = replica.run()
        assert result.report is not None
        assert result.report.outcome is RolloutOutcome.HALTED, result.report
        assert result.report.message.startswith("canary: refused: failed before (content): aborted by ops")
    assert {n: on[0] for n, on in shared.on().items()} == {
        "canary": "rev-1",
        "eu-1": "rev-1",
        "us-1": "rev-1",
    }


def test_a_cluster_suspended_while_a_replica_waits_for_it_ends_the_wait_with_the_suspension() -> None:
    shared = Shared(health_timeout=30.0)
    first, second = Replica(shared, {"canary", "us-1"}), Replica(shared, {"eu-1"})
    shared.revisions.push(fleet("rev-1"))
    first.stop_waiting = second.stop_waiting = True
    first.run()
    second.run()
    first.run()
    assert shared.on() == dict.fromkeys(CLUSTERS, ("rev-1", SyncPhase.HEALTHY))
    first.stop_waiting = False

    def suspend_once(event: PassEvent) -> None:
        if event.step is Step.GATE_WAIT and event.wave == "rest" and event.revision == "rev-2":
            first.events.append(event)
            if not shared.on_hold:
                shared.on_hold = True  # while the first replica waits for eu-1's owner
                shared.acts("eu-1").record_suspension(Suspension("INC-7", "ops", 1.8e9))
        else:
            first.events.append(event)

    first.fleet_pass.listener = suspend_once
    shared.revisions.push(fleet("rev-2"))
    started = time.monotonic()
    result = first.run()
    assert time.monotonic() - started < 10.0, "nothing can change while eu-1 is suspended: no wait"
    assert result.report is not None
    assert result.report.outcome is RolloutOutcome.WAITING, result.report
    assert result.report.message == "waiting for eu-1: suspended by ops at 2027-01-15 08:00 UTC: INC-7"
    result = second.run()
    assert result.report is not None
    assert result.report.outcome is RolloutOutcome.WAITING, result.report
    assert result.report.message == "suspended: eu-1: suspended by ops at 2027-01-15 08:00 UTC: INC-7"
    assert shared.on() == {
        "canary": ("rev-2", SyncPhase.HEALTHY),
        "eu-1": ("rev-1", SyncPhase.HEALTHY),
        "us-1": ("rev-2", SyncPhase.APPLIED),
    }
