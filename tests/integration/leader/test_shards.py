"""Replicas split a fleet of light clusters through real Leases, and a replica that does not own a
cluster cannot write to it.

Each replica here is a ``Shards`` object with clients of its own, driven round by round by the test
(the agent runs the same rounds on a timer). Ownership is read back from the owner Leases in the
clusters; writes refused by the fence are looked for in the apiservers' audit logs.
"""

from __future__ import annotations

import contextlib
import time
import uuid
from collections.abc import Callable, Iterator

import pytest

from devfleet import audit
from devfleet import fleet as devfleet
from syncer.errors import FencedOut
from syncer.kube import ClientOptions, ClusterClient
from syncer.leader.fence import FencedKube
from syncer.leader.shards import OWNER_LEASE, ShardOptions, Shards

pytestmark = pytest.mark.integration

CLUSTERS = devfleet.cluster_names(4, "s")
HOME = CLUSTERS[0]
NAMESPACE = "kube-system"
DURATION, DEADLINE, RETRY = 4.0, 3.0, 0.3


def _quiet(_: str) -> None:
    pass


@pytest.fixture(scope="module")
def light(tmp_path_factory: pytest.TempPathFactory) -> Iterator[devfleet.Fleet]:
    root = tmp_path_factory.mktemp("shards") / "state"
    options = devfleet.UpOptions(clusters=CLUSTERS, profile=devfleet.Profile.LIGHT, audit=True)
    fleet = devfleet.up(root, options, _quiet)
    try:
        yield fleet
    finally:
        assert devfleet.down(root, _quiet) == []


class Replica:
    """One replica's clients and shards; closed by the test."""

    def __init__(self, fleet: devfleet.Fleet, identity: str, group: str) -> None:
        options = ClientOptions(timeout=5, user_agent=f"shard-test/{identity}")
        self.clients = {
            name: ClusterClient.from_kubeconfig(str(fleet.kubeconfig), name, options=options)
            for name in CLUSTERS
        }
        self.identity = identity
        shard_options = ShardOptions(
            group=group,
            namespace=NAMESPACE,
            owner_namespace=NAMESPACE,
            identity=identity,
            lease_duration=DURATION,
            renew_deadline=DEADLINE,
            retry_period=RETRY,
        )
        self.shards = Shards(self.clients[HOME], self.clients, shard_options)
        self._fleet, self._options = fleet, options
        self._writers: list[ClusterClient] = []

    def fenced(self, cluster: str) -> FencedKube:
        """A writer to ``cluster`` fenced on its owner Lease, with a client of its own (the Leases
        keep theirs: their own writes must never wait for the fence)."""
        client = ClusterClient.from_kubeconfig(str(self._fleet.kubeconfig), cluster, options=self._options)
        self._writers.append(client)
        return FencedKube(client, self.shards.fence(cluster))

    def close(self) -> None:
        for client in [*self.clients.values(), *self._writers]:
            client.close()


@pytest.fixture
def replicas(light: devfleet.Fleet) -> Iterator[Callable[[str], Replica]]:
    group = f"g-{uuid.uuid4().hex[:6]}"
    made: list[Replica] = []

    def make(identity: str) -> Replica:
        made.append(Replica(light, identity, group))
        return made[-1]

    yield make
    for replica in made:
        replica.shards.leave()
        replica.close()
    # The owner Leases are per cluster, shared by the tests: leave them free for the next one.


def _holders(light: devfleet.Fleet) -> dict[str, str]:
    found = {}
    for name in CLUSTERS:
        kube = ClusterClient.from_kubeconfig(str(light.kubeconfig), name)
        try:
            lease = kube.get("coordination.k8s.io/v1", "Lease", OWNER_LEASE, NAMESPACE)
            found[name] = lease["spec"].get("holderIdentity") or ""
        finally:
            kube.close()
    return found


def _rounds(
    replicas: list[Replica], seconds: float, check: Callable[[], None] = lambda: None, at_least: int = 4
) -> None:
    """Rounds of every replica for ``seconds``, and at least ``at_least`` of them (a busy machine
    may take longer than a round's period)."""
    deadline = time.monotonic() + seconds
    done = 0
    slowest = 0.0
    while time.monotonic() < deadline or done < at_least:
        done += 1
        for replica in replicas:
            started = time.monotonic()
            replica.shards.round()
            slowest = max(slowest, time.monotonic() - started)
            check()
        time.sleep(RETRY)
    return slowest


def _never_two_owners(replicas: list[Replica]) -> Callable[[], None]:
    def check() -> None:
        for name in CLUSTERS:
            owners = [r.identity for r in replicas if r.shards.holds(name)]
            assert len(owners) <= 1, f"{name} held by {owners}"

    return check


def test_two_replicas_split_the_fleet_and_only_the_owner_writes(
    light: devfleet.Fleet, replicas: Callable[[str], Replica]
) -> None:
    a, b = replicas("replica-a"), replicas("replica-b")
    _rounds([a, b], 3.0, _never_two_owners([a, b]))
    assert set(a.shards.view.members) == {"replica-a", "replica-b"}
    assert a.shards.view.assignment == b.shards.view.assignment
    mine_a, mine_b = a.shards.view.held, b.shards.view.held
    assert mine_a | mine_b == set(CLUSTERS)
    assert not mine_a & mine_b
    assert mine_a
    assert mine_b
    holders = _holders(light)
    assert {c for c, h in holders.items() if h == "replica-a"} == mine_a
    # The fence: a write by the replica that does not own the cluster is refused before it is sent.
    theirs = sorted(mine_b)[0]
    name = f"fenced-{uuid.uuid4().hex[:6]}"
    body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
    with pytest.raises(FencedOut):
        a.fenced(theirs).apply(body)
    # The owner renews first: the checks above may have taken longer than its renew deadline on a
    # busy machine, and then its own fence has closed too (as it must).
    b.shards.round()
    assert theirs in b.shards.view.held
    b.fenced(theirs).apply(body)
    writers = {w.user_agent for w in audit.writes(light, theirs) if w.name == name}
    assert writers == {"shard-test/replica-b"}


def test_a_replica_that_stops_renewing_loses_its_clusters_within_a_lease_duration(
    light: devfleet.Fleet, replicas: Callable[[str], Replica]
) -> None:
    a, b = replicas("replica-a"), replicas("replica-b")
    _rounds([a, b], 3.0, _never_two_owners([a, b]))
    lost = a.shards.view.held
    assert lost
    stopped = time.monotonic()
    # replica-a freezes: no more rounds. Its fence closes after renew_deadline ...
    taken: dict[str, float] = {}

    def check() -> None:
        _never_two_owners([a, b])()
        for name in lost:
            if name not in taken and b.shards.holds(name):
                taken[name] = time.monotonic() - stopped

    slowest = _rounds([b], DURATION + 3 * RETRY + 2.0, check)
    assert not any(a.shards.holds(name) for name in lost)
    with pytest.raises(FencedOut):
        a.fenced(sorted(lost)[0]).apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "x"}})
    # ... and replica-b holds every cluster, each taken over within one lease duration after the
    # frozen replica's last renewal, plus the two rounds it takes to notice and to take the Lease.
    assert b.shards.view.held == set(CLUSTERS)
    assert set(taken) == lost
    assert max(taken.values()) <= DURATION + 2 * (slowest + RETRY)
    assert _holders(light) == dict.fromkeys(CLUSTERS, "replica-b")


def test_a_joining_replica_takes_its_share_and_a_leaving_one_hands_over_at_once(
    light: devfleet.Fleet, replicas: Callable[[str], Replica]
) -> None:
    a = replicas("replica-a")
    _rounds([a], 1.0)
    assert a.shards.view.held == set(CLUSTERS)
    b = replicas("replica-b")
    _rounds([a, b], 3.0, _never_two_owners([a, b]))
    assert b.shards.view.held
    assert a.shards.view.held | b.shards.view.held == set(CLUSTERS)
    # A clean stop releases every Lease: the other replica takes over in its next rounds, without
    # waiting for anything to expire.
    b.shards.leave()
    _rounds([a], 0.0, at_least=2)
    assert a.shards.view.held == set(CLUSTERS)


def test_a_client_checks_the_fence_again_right_before_a_write_leaves_and_never_for_a_read(
    light: devfleet.Fleet,
) -> None:
    """A write that waited for the client's own limits after the fence was checked is checked again
    just before it is sent: a fence closed meanwhile stops it, and the apiserver never sees it."""
    agent = f"shard-test/late-{uuid.uuid4().hex[:6]}"
    client = ClusterClient.from_kubeconfig(
        str(light.kubeconfig), HOME, options=ClientOptions(timeout=5, user_agent=agent)
    )
    closed = {"now": False}

    @contextlib.contextmanager
    def guarded() -> Iterator[None]:
        if closed["now"]:
            raise FencedOut("the fence closed while the write waited")
        yield

    client.guard_writes(guarded)
    name = f"late-{uuid.uuid4().hex[:6]}"
    body = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "data": {"k": "v"},
    }
    try:
        client.apply(body)
        closed["now"] = True
        with pytest.raises(FencedOut):
            client.apply({**body, "data": {"k": "changed"}})
        with pytest.raises(FencedOut):
            client.delete("v1", "ConfigMap", name, NAMESPACE)
        read = client.get("v1", "ConfigMap", name, NAMESPACE)
        assert read["data"] == {"k": "v"}
    finally:
        client.close()
    time.sleep(1)  # the audit log is written as requests end
    seen = [w for w in audit.writes(light, HOME) if w.user_agent == agent]
    assert len(seen) == 1, seen
