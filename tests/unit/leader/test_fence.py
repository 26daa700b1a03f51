"""The fence's decisions, with two electors sharing an in-memory Lease and a clock the test moves:
writes go out only while the Lease is surely held, a replica frozen past its lease is fenced out
the moment it runs again, and each new holder gets a higher token."""

from __future__ import annotations

import copy
import threading
import time
from collections.abc import Mapping
from contextlib import AbstractContextManager, nullcontext
from typing import Any

import pytest

from syncer.config.settings import LeaseSettings
from syncer.errors import Conflict, FencedOut, NotFound
from syncer.leader import LeaderElector
from syncer.leader.fence import UNFENCED, FencedKube
from syncer.leader.follow import follow


class Leases:
    """One Lease object with resourceVersion checks, as the elector uses it."""

    def __init__(self) -> None:
        self.lease: dict[str, Any] | None = None
        self.version = 0
        self.writes: list[str] = []

    @property
    def cluster(self) -> str:
        return "home"

    def get(self, api_version: str, kind: str, name: str, namespace: str = "") -> dict[str, Any]:
        if self.lease is None:
            raise NotFound("no lease")
        return copy.deepcopy(self.lease)

    def create(self, body: Mapping[str, Any]) -> dict[str, Any]:
        if self.lease is not None:
            raise Conflict("exists")
        return self._store(body)

    def replace(self, body: Mapping[str, Any]) -> dict[str, Any]:
        if (
            self.lease is None
            or body["metadata"].get("resourceVersion") != self.lease["metadata"]["resourceVersion"]
        ):
            raise Conflict("changed")
        return self._store(body)

    def apply(self, body: Mapping[str, Any], options: object = None) -> dict[str, Any]:
        self.writes.append(body["metadata"]["name"])
        return dict(body)

    def _store(self, body: Mapping[str, Any]) -> dict[str, Any]:
        self.version += 1
        self.lease = copy.deepcopy(dict(body))
        self.lease["metadata"]["resourceVersion"] = str(self.version)
        return copy.deepcopy(self.lease)


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def elector(leases: Leases, clock: Clock, identity: str) -> LeaderElector:
    lease = LeaseSettings("syncer-agent", "syncer-system", duration=4, renew_deadline=3, retry_period=1)
    return LeaderElector(leases, lease, identity, clock=clock)  # type: ignore[arg-type]


def test_a_replica_frozen_past_its_lease_is_fenced_out_when_it_runs_again() -> None:
    leases, clock = Leases(), Clock()
    first, second = elector(leases, clock, "a"), elector(leases, clock, "b")
    assert first.try_acquire_or_renew()
    assert not second.try_acquire_or_renew()
    fence = first.fence(margin=1.0)
    fence.check()
    writer = FencedKube(leases, fence)  # type: ignore[arg-type]
    writer.apply({"metadata": {"name": "before"}})
    first_token = fence.token
    assert first_token >= 1

    clock.now += 3.5  # frozen: no renewal; 0.5 s of the lease left is less than the margin
    with pytest.raises(FencedOut, match="no longer holds the leader Lease"):
        writer.apply({"metadata": {"name": "after"}})
    clock.now += 1.0
    assert second.try_acquire_or_renew()
    assert second.token > first_token
    # Resumed, the first replica still believes it leads until its next round, but cannot write.
    assert first.is_leader
    with pytest.raises(FencedOut):
        fence.check()
    assert not first.try_acquire_or_renew()
    assert leases.writes == ["before"]


def test_renewals_keep_the_fence_open_and_reads_never_need_it() -> None:
    leases, clock = Leases(), Clock()
    first = elector(leases, clock, "a")
    fence = first.fence(margin=1.0)
    with pytest.raises(FencedOut):
        fence.check()  # not acquired yet
    assert first.try_acquire_or_renew()
    token = fence.token
    for _ in range(20):
        clock.now += 1.0
        assert first.try_acquire_or_renew()
        fence.check()
    assert fence.token == token  # renewals are not transitions
    clock.now += 10
    reader = FencedKube(leases, fence)  # type: ignore[arg-type]
    assert reader.get("coordination.k8s.io/v1", "Lease", "syncer-agent")["spec"]["holderIdentity"] == "a"
    UNFENCED.check()
    assert UNFENCED.token == 0


class Gate:
    """A fence a test opens and closes."""

    token = 7
    lease = "ns/syncer-agent"

    def __init__(self) -> None:
        self.opened = threading.Event()

    def check(self) -> None:
        if not self.opened.is_set():
            raise FencedOut("closed")

    def writing(self) -> AbstractContextManager[None]:
        self.check()
        return nullcontext()


def test_follow_runs_the_work_only_while_the_fence_is_open_and_again_when_it_reopens() -> None:
    gate, stop = Gate(), threading.Event()
    started: list[bool] = []
    halted: list[bool] = []

    def work(halt: threading.Event) -> None:
        started.append(gate.opened.is_set())
        halt.wait(10)
        halted.append(not gate.opened.is_set() or stop.is_set())

    follower = threading.Thread(target=follow, args=(gate, stop, work, 0.01))
    follower.start()
    time.sleep(0.1)
    assert started == []  # closed: never started
    for _ in range(2):
        gate.opened.set()
        deadline = time.monotonic() + 5
        while len(started) == len(halted) and time.monotonic() < deadline:
            time.sleep(0.01)
        gate.opened.clear()  # closed: the work is halted
        deadline = time.monotonic() + 5
        while len(halted) < len(started) and time.monotonic() < deadline:
            time.sleep(0.01)
    stop.set()
    follower.join(5)
    assert not follower.is_alive()
    assert started == [True, True]
    assert halted == [True, True]
