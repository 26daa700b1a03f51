"""Two replicas roll one revision out over a fleet of light clusters they split through Leases.

Each replica is a ``FleetRollout`` with clients of its own whose writes go through its ``Shards``
fence, and a thread renewing its Leases; both run the same revision at the same time. Light clusters
have no controller: the status stand-in marks each RedisCluster Ready for its generation. Who wrote
what, and when, is read from the apiservers' audit logs, not from the replicas.
"""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from devfleet import audit
from devfleet import fleet as devfleet
from devfleet.standin import ReadyStatusStandIn
from syncer.domain.sync_state import SyncPhase
from syncer.kube import ClusterClient
from syncer.rollout import plan_waves
from syncer.rollout.moves import RolloutOutcome
from syncer.status.state_store import StateStore
from tests.integration.engine.sharded_kit import (
    DURATION,
    NAMESPACE,
    RETRY,
    Replica,
    light_fleet,
    policy,
    write_repo,
)

# Starting many apiservers on a busy machine takes long: each test may take 40 minutes.
pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.timeout(2400)]

# With the default 20 clusters the policy's 1/10/50/100 % waves hold 1, 2, 10 and 20 clusters in
# total; with 6 (SYNCER_TEST_SHARDED_CLUSTERS=6, for a machine short of memory) 1, 3 and 6, the 10% wave
# being empty.
COUNT = int(os.environ.get("SYNCER_TEST_SHARDED_CLUSTERS", "20"))
EXPECTED = {20: [1, 2, 10, 20], 6: [1, 3, 6]}
CLUSTERS = devfleet.cluster_names(COUNT, "w")
HOME = CLUSTERS[0]
# The canary's bake in the kill test: the survivor takes the canary over within the bound the test
# asserts (DURATION + 4 * RETRY + 5 s = 15 s), so inside the bake, and resumes the wave there.
KILL_BAKE = 20
# The clusters' sync states outlive a test (the fleet is the module's) and a revision they record as
# healthy is not rolled out again: each test rolls out a revision of its own (rev-0, rev-1).


@pytest.fixture(scope="module")
def light(tmp_path_factory: pytest.TempPathFactory) -> Iterator[devfleet.Fleet]:
    with light_fleet(tmp_path_factory.mktemp("sharded") / "state", CLUSTERS, (NAMESPACE,)) as fleet:
        yield fleet


def _settled(replicas: list[Replica]) -> None:
    """Until both replicas agree on the members and hold every cluster between them."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        views = [r.shards.view for r in replicas]
        held = [v.held for v in views]
        if all(len(v.members) == len(replicas) for v in views) and frozenset().union(*held) == set(CLUSTERS):
            return
        time.sleep(RETRY)
    raise AssertionError(f"the replicas did not settle: {[r.shards.view for r in replicas]}")


def test_two_replicas_roll_out_in_global_waves_each_writing_only_its_own_clusters(
    light: devfleet.Fleet, tmp_path: Path
) -> None:
    prefix = f"sh-{uuid.uuid4().hex[:6]}"
    repo = write_repo(tmp_path / "repo", prefix, CLUSTERS)
    group = f"g-{uuid.uuid4().hex[:6]}"
    replicas = [Replica(light.kubeconfig, i, group, CLUSTERS) for i in ("replica-a", "replica-b")]
    try:
        _settled(replicas)
        owners = dict(replicas[0].shards.view.assignment)
        assert set(owners.values()) == {"replica-a", "replica-b"}
        with ReadyStatusStandIn(light.kubeconfig, CLUSTERS):
            threads = [r.sync(repo, "rev-0") for r in replicas]
            for thread in threads:
                thread.join(timeout=600)
        reports = [r.report for r in replicas]
        assert all(r is not None and r.outcome is RolloutOutcome.APPLIED for r in reports), reports
    finally:
        for replica in replicas:
            replica.close()
    waves = plan_waves({name: {} for name in CLUSTERS}, policy())
    cumulative = [sum(len(w.clusters) for w in waves[: i + 1]) for i in range(len(waves))]
    assert cumulative == EXPECTED[COUNT]
    # From the audit logs: which replica applied each cluster's RedisClusters, and when it began.
    first: dict[str, float] = {}
    last: dict[str, float] = {}
    for name in CLUSTERS:
        writes = [
            w
            for w in audit.writes(light, name)
            if w.resource == "redisclusters" and w.namespace == prefix and not w.subresource
        ]
        writers = {w.user_agent for w in writes}
        assert writers == {f"syncer-test/{owners[name]}"}, (name, writers)
        first[name] = min(w.at.timestamp() for w in writes)
        last[name] = max(w.at.timestamp() for w in writes)
        state_writes = {
            w.user_agent
            for w in audit.writes(light, name)
            if w.resource == "configmaps" and w.namespace == NAMESPACE
        }
        assert state_writes == {f"syncer-test/{owners[name]}"}, (name, state_writes)
    # Waves in order, whichever replica applied them: no cluster of a wave was written before every
    # cluster of the wave before it had been applied.
    for earlier, later in itertools.pairwise(waves):
        assert max(last[c] for c in earlier.clusters) < min(first[c] for c in later.clusters)
    for name in CLUSTERS:
        admin = ClusterClient.from_kubeconfig(str(light.kubeconfig), name)
        try:
            state = StateStore(admin, NAMESPACE).load().state
        finally:
            admin.close()
        assert state.revision == "rev-0"
        assert state.phase is SyncPhase.HEALTHY


def _owner_of(fleet: devfleet.Fleet, cluster: str) -> str:
    admin = ClusterClient.from_kubeconfig(str(fleet.kubeconfig), cluster)
    try:
        lease = admin.get("coordination.k8s.io/v1", "Lease", "syncer-owner", NAMESPACE)
        return str(lease["spec"].get("holderIdentity") or "")
    finally:
        admin.close()


def _state(fleet: devfleet.Fleet, cluster: str) -> tuple[str, SyncPhase]:
    admin = ClusterClient.from_kubeconfig(str(fleet.kubeconfig), cluster)
    try:
        state = StateStore(admin, NAMESPACE).load().state
        return state.revision, state.phase
    finally:
        admin.close()


def _replica_writes(fleet: devfleet.Fleet, cluster: str) -> list[audit.AuditedWrite]:
    """The replicas' writes to ``cluster`` as its apiserver audited them: owner Lease writes and
    everything else they wrote there (member Leases, in the home cluster, are left out)."""
    return [
        w
        for w in audit.writes(fleet, cluster)
        if w.user_agent.startswith("syncer-test/") and (w.resource != "leases" or w.name == "syncer-owner")
    ]


def test_killing_the_replica_that_owns_the_canary_mid_wave_hands_the_fleet_over_without_double_writes(
    light: devfleet.Fleet, tmp_path: Path
) -> None:
    prefix = f"kl-{uuid.uuid4().hex[:6]}"
    repo = write_repo(tmp_path / "repo", prefix, CLUSTERS)
    group = f"g-{uuid.uuid4().hex[:6]}"
    canary = plan_waves({name: {} for name in CLUSTERS}, policy())[0].clusters[0]
    env = {**os.environ, "PYTHONPATH": str(Path.cwd())}
    errors = {identity: (tmp_path / f"{identity}.log").open("w") for identity in ("replica-a", "replica-b")}
    started = {
        identity: subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tests.integration.engine.sharded_kit",
                str(light.kubeconfig),
                identity,
                group,
                str(repo),
                "rev-1",
                str(KILL_BAKE),
                *CLUSTERS,
            ],
            env=env,
            stdout=subprocess.PIPE,
            stderr=errors[identity],
            text=True,
        )
        for identity in ("replica-a", "replica-b")
    }

    def logs() -> str:
        return "\n".join(f"{i}: {(tmp_path / f'{i}.log').read_text()[-3000:]}" for i in started)

    try:
        with ReadyStatusStandIn(light.kubeconfig, CLUSTERS):
            deadline = time.monotonic() + 600
            while _state(light, canary) != ("rev-1", SyncPhase.APPLIED):
                assert all(p.poll() is None for p in started.values()), f"a replica ended early\n{logs()}"
                assert time.monotonic() < deadline, f"the canary was never applied\n{logs()}"
                time.sleep(0.5)
            victim = _owner_of(light, canary)
            assert victim in started
            started[victim].kill()
            started[victim].wait()
            survivor = next(i for i in started if i != victim)
            out, _ = started[survivor].communicate(timeout=900)
        assert out.strip() == "applied"
    finally:
        for proc in started.values():
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            if proc.stdout is not None:
                proc.stdout.close()
        for file in errors.values():
            file.close()
    assert all(_state(light, name) == ("rev-1", SyncPhase.HEALTHY) for name in CLUSTERS)

    # From the audit logs: every write to a cluster came from the replica that last took or renewed
    # its owner Lease (a write the apiserver refused, such as a renewal that lost a conflict, takes
    # nothing). A slow replica may lose clusters and win them back; a write by a non-owner must never
    # reach an apiserver.
    for name in CLUSTERS:
        holder = ""
        for w in _replica_writes(light, name):
            who = w.user_agent.removeprefix("syncer-test/")
            if w.resource == "leases":
                if 200 <= w.code < 300:
                    holder = who
            else:
                assert who == holder, (name, w, holder)
    canary_writes = _replica_writes(light, canary)
    writers = [w.user_agent.removeprefix("syncer-test/") for w in canary_writes]
    assert writers[-1] == survivor
    assert victim in writers
    # The takeover, on the apiserver's clock: the survivor took the canary's owner Lease within one
    # lease duration of the victim's last renewal of it, plus the rounds it takes to notice.
    last_renewal = max(
        w.at.timestamp()
        for w in canary_writes
        if w.resource == "leases" and w.user_agent == f"syncer-test/{victim}" and 200 <= w.code < 300
    )
    taken = min(
        w.at.timestamp()
        for w in canary_writes
        if w.resource == "leases"
        and w.user_agent == f"syncer-test/{survivor}"
        and 200 <= w.code < 300
        and w.at.timestamp() > last_renewal
    )
    print(
        f"canary owner lease: last renewed by {victim}, taken by {survivor} {taken - last_renewal:.1f}s later"
    )
    assert taken - last_renewal <= DURATION + 4 * RETRY + 5.0
