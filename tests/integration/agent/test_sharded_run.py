"""Two ``syncer run`` replicas of one shard group on a fleet of light clusters, from signed commits
in a real git remote: they split the clusters through Leases, roll a revision out in the policy's
global waves (each cluster applied by its owner), show the owners in ``syncer status`` and
``/metrics``, and when one is killed mid-rollout and another replica joins, the clusters move within
one lease duration and no cluster is ever written by a replica that did not hold its owner Lease.

Light clusters have no controller: the status stand-in marks RedisClusters Ready for their
generation. Who wrote what, and when, is read from the apiservers' audit logs, not from the agents.
"""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from devfleet import audit
from devfleet import fleet as devfleet
from devfleet.standin import ReadyStatusStandIn
from syncer.domain.sync_state import ClusterSyncState, SyncPhase
from syncer.errors import NotFound
from syncer.kube import ClusterClient
from syncer.leader.election import LEASE_API
from syncer.leader.shards import OWNER_LEASE
from syncer.status.revision_record import RevisionInForce, RevisionRecord
from syncer.status.state_store import FENCING_LEASE, FENCING_TOKEN, STATE_CONFIGMAP, StateStore
from tests.integration.agent.procs import AgentProc, Agents
from tests.integration.agent.runkit import run_args
from tests.integration.verify.kit import GitRepo, SshKey, bare_remote, write_policy
from tests.support.namespaces import delete_namespaces
from tests.support.receivers import Receiver
from tests.support.waiting import eventually

pytestmark = [pytest.mark.integration, pytest.mark.timeout(2400)]

CLUSTERS = devfleet.cluster_names(6, "sr")
HOME = CLUSTERS[0]
# The 1 / 10 / 50 / 100 % waves of 6 clusters hold 1, 3 and 6 clusters cumulatively (10 % is empty).
CUMULATIVE = [1, 3, 6]
# Whole seconds (a Lease stores its duration as such); the margin (4 s) is above the request timeout.
LEASE_DURATION, RENEW_DEADLINE, RETRY_PERIOD = 8, 4, 1
ROLLOUT_TIMEOUT = 600


def waves(canary_bake: str) -> dict[str, object]:
    return {
        "waves": [
            {"name": "w1", "percent": 1, "bake": canary_bake},
            {"name": "w10", "percent": 10},
            {"name": "w50", "percent": 50},
            {"name": "all", "percent": 100},
        ],
        "defaults": {"maxConcurrent": 4, "healthTimeout": "300s", "bake": "0s"},
        "rollback": False,
    }


class Group:
    """A signed fleet repository, the agents' config and one shard group's replicas."""

    def __init__(self, root: Path, fleet: devfleet.Fleet, key: SshKey, canary_bake: str) -> None:
        self.root, self.fleet, self.key = root, fleet, key
        tag = uuid.uuid4().hex[:6]
        self.namespace, self.state_namespace, self.group = f"sr-{tag}", f"sr-{tag}-state", f"g-{tag}"
        self.remote = bare_remote(root / "remote.git")
        self.work = GitRepo(root / "work")
        fleet_file = {
            "apiVersion": "syncer.dev/v1alpha1",
            "kind": "Fleet",
            "defaults": {"namespace": self.namespace},
            "clusters": [{"name": n} for n in CLUSTERS],
        }
        self.work.write({"fleet.yaml": yaml.safe_dump(fleet_file)})
        write_policy(root / "trust.yaml", signers=[{"name": "ops", "ssh": key.public_line}], keys=[])
        (root / "waves.yaml").write_text(yaml.safe_dump(waves(canary_bake)))
        config = {
            "source": {"url": str(self.remote), "cacheDir": str(root / "cache"), "timeoutSeconds": 60},
            "trustPolicy": "trust.yaml",
            "clusters": {n: {"context": n, "kubeconfig": str(fleet.kubeconfig)} for n in CLUSTERS},
        }
        (root / "agent.yaml").write_text(yaml.safe_dump(config))
        self.clients = {n: ClusterClient.from_kubeconfig(str(fleet.kubeconfig), n) for n in CLUSTERS}
        self.agents = Agents(root)

    def notify(self, receiver: Receiver) -> None:
        """Every replica tells ``receiver`` (a webhook) of every notice."""
        config = yaml.safe_load((self.root / "agent.yaml").read_text())
        hook = {"name": "ops", "type": "webhook", "url": f"{receiver.url}/hook", "secretFile": "hmac.key"}
        config["notifications"] = {"receivers": [hook], "routes": [{"receivers": ["ops"]}]}
        (self.root / "agent.yaml").write_text(yaml.safe_dump(config))
        (self.root / "hmac.key").write_text("sharded-hmac-key\n")

    def start(self, identity: str, config: str = "agent.yaml") -> AgentProc:
        sharding = [
            "--shard-group",
            self.group,
            "--shard-identity",
            identity,
            "--lease-context",
            HOME,
            "--lease-namespace",
            f"{self.namespace}-members",
            "--lease-duration",
            f"{LEASE_DURATION}s",
            "--lease-renew-deadline",
            f"{RENEW_DEADLINE}s",
            "--lease-retry-period",
            f"{RETRY_PERIOD}s",
        ]
        args = run_args(self.root, "waves.yaml", self.fleet.kubeconfig, self.state_namespace, *sharding)
        args[args.index("--config") + 1] = str(self.root / config)
        return self.agents.start(identity, args)

    def mirror(self, name: str) -> Path:
        """A second remote with what the first holds, and an agent config ``name`` that polls it (as a
        replica behind a slow mirror would); returns the remote."""
        remote = bare_remote(self.root / f"{name}.git")
        config = yaml.safe_load((self.root / "agent.yaml").read_text())
        config["source"] = {
            **config["source"],
            "url": str(remote),
            "cacheDir": str(self.root / f"{name}-cache"),
        }
        (self.root / name).write_text(yaml.safe_dump(config))
        return remote

    def push(self, remote: Path) -> None:
        self.work.git("push", "-q", str(remote), "main")

    def start_sharing(self, *identities: str) -> dict[str, AgentProc]:
        """A replica for each of ``identities``, once every one of them holds a share of the clusters."""
        replicas = {i: self.start(i) for i in identities}
        eventually(
            "the replicas to hold a share of the clusters each",
            lambda: set(self.owners().values()) == set(replicas),
            120,
        )
        return replicas

    def commit(self, message: str, version: str, remote: Path | None = None) -> str:
        docs = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": self.namespace}}] + [
            {
                "apiVersion": "redis.syncer.dev/v1alpha1",
                "kind": "RedisCluster",
                "metadata": {"name": f"cache-{i}", "namespace": self.namespace},
                "spec": {"version": version, "shards": 3, "replicasPerShard": 1},
            }
            for i in range(3)
        ]
        sha = self.work.commit(message, {"base/objects.yaml": yaml.safe_dump_all(docs)}, sign=self.key)
        self.push(remote or self.remote)
        return sha

    def owners(self) -> dict[str, str]:
        found = {}
        for name, client in self.clients.items():
            try:
                lease = client.get(LEASE_API, "Lease", OWNER_LEASE, self.state_namespace)
                found[name] = str((lease.get("spec") or {}).get("holderIdentity") or "")
            except NotFound:
                found[name] = ""
        return found

    def states(self) -> dict[str, ClusterSyncState]:
        return {n: StateStore(c, self.state_namespace).load().state for n, c in self.clients.items()}

    def all_healthy(self, revision: str) -> bool:
        return all((s.revision, s.phase) == (revision, SyncPhase.HEALTHY) for s in self.states().values())

    def writes(self, name: str) -> list[audit.AuditedWrite]:
        """The replicas' writes to ``name``: everything but what a group keeps in the home cluster
        (member Leases and the revision in force, in its members' namespace; the fleet, and so its
        audit logs, serve every sharded test of the package: conftest.light)."""
        return [
            w
            for w in audit.writes(self.fleet, name)
            if "replica/" in w.user_agent
            and (w.resource != "leases" or w.name == OWNER_LEASE)
            and not w.namespace.endswith("-members")
        ]

    def close(self) -> None:
        self.agents.close()
        for client in self.clients.values():
            delete_namespaces([client], self.namespace, self.state_namespace, f"{self.namespace}-members")
            client.close()


def replica_of(write: audit.AuditedWrite) -> str:
    return write.user_agent.split("replica/", 1)[1]


def assert_single_writer(group: Group) -> None:
    """From the audit logs: every write to a cluster came from the replica that last took or renewed
    its owner Lease (a Lease write the apiserver refused takes nothing)."""
    for name in CLUSTERS:
        holder = ""
        for w in group.writes(name):
            if w.resource == "leases":
                if 200 <= w.code < 300:
                    holder = replica_of(w)
            elif w.resource != "namespaces":  # a Lease's namespace is made before the Lease
                assert replica_of(w) == holder, (name, w.resource, w.namespace, w.name, w.verb, holder)


@pytest.fixture
def group(light: devfleet.Fleet, tmp_path: Path, ops_key: SshKey) -> Iterator[Group]:
    made = Group(tmp_path, light, ops_key, canary_bake="0s")
    try:
        yield made
    finally:
        made.close()


def _status(group: Group) -> dict[str, dict[str, object]]:
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "syncer",
            "status",
            "--config",
            str(group.root / "agent.yaml"),
            "--state-namespace",
            group.state_namespace,
            "-o",
            "json",
        ],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    ).stdout
    return {row["cluster"]: row for row in json.loads(out)["clusters"]}


@pytest.mark.slow
def test_two_run_replicas_split_the_fleet_and_roll_out_in_global_waves(group: Group) -> None:
    receiver = Receiver()
    try:
        group.notify(receiver)
        _rolled_out_in_global_waves(group, receiver)
    finally:
        receiver.close()


def _rolled_out_in_global_waves(group: Group, receiver: Receiver) -> None:
    with group.agents.shown_on_failure():
        replicas = group.start_sharing("replica-a", "replica-b")
        with ReadyStatusStandIn(group.fleet.kubeconfig, CLUSTERS):
            revision = group.commit("caches", "7.2.5")
            eventually("every cluster healthy", lambda: group.all_healthy(revision), ROLLOUT_TIMEOUT)
            finished = eventually(
                "the rollout told finished", lambda: receiver.bodies(kind="rollout-finished"), 60
            )
        owners = group.owners()
        assert set(owners.values()) == set(replicas)
        # Both replicas see every wave's events; each notice is sent by one of them.
        assert len(finished) == 1, finished
        assert len(receiver.bodies(kind="rollout-started")) == 1
        passed = sorted(b["wave"] for b in receiver.bodies(kind="wave-passed"))
        assert passed, "no wave-passed notice"
        assert passed == sorted(set(passed)), passed

        # syncer status and /metrics name each cluster's owner.
        shown = _status(group)
        assert {name: row["owner"] for name, row in shown.items()} == owners
        for identity, proc in replicas.items():
            metrics = proc.metrics()
            for name, owner in owners.items():
                key = f'syncer_cluster_owner{{cluster="{name}",replica="{owner}"}}'
                assert metrics.get(key) == 1.0, (identity, key)

    # From the audit logs: each cluster's RedisClusters and state were written only by its owner,
    # both replicas applied, and the waves came in order with the expected cumulative counts.
    first: dict[str, float] = {}
    last: dict[str, float] = {}
    for name in CLUSTERS:
        rc = [
            w for w in group.writes(name) if w.resource == "redisclusters" and w.namespace == group.namespace
        ]
        assert {replica_of(w) for w in rc} == {owners[name]}, name
        first[name] = min(w.at.timestamp() for w in rc)
        last[name] = max(w.at.timestamp() for w in rc)
    assert_single_writer(group)
    order = sorted(CLUSTERS, key=lambda n: first[n])
    # Wave boundaries: a cluster starts a new wave when every cluster before it had been applied.
    boundaries = [i for i in range(1, len(order)) if max(last[c] for c in order[:i]) < first[order[i]]]
    cumulative = sorted({*boundaries, len(order)})
    assert all(c in cumulative for c in CUMULATIVE), (cumulative, order, first, last)
    writers_of_waves = [{owners[c] for c in order[a:b]} for a, b in itertools.pairwise([0, *CUMULATIVE])]
    assert set().union(*writers_of_waves) == {"replica-a", "replica-b"}


@pytest.mark.slow
def test_a_replica_killed_mid_rollout_and_one_joining_move_clusters_within_a_lease_duration(
    light: devfleet.Fleet, tmp_path: Path, ops_key: SshKey
) -> None:
    group = Group(tmp_path, light, ops_key, canary_bake="20s")
    try:
        with group.agents.shown_on_failure():
            replicas = group.start_sharing("replica-a", "replica-b")
            with ReadyStatusStandIn(group.fleet.kubeconfig, CLUSTERS):
                revision = group.commit("caches", "7.2.5")
                canary = eventually(
                    "the canary applied",
                    lambda: next(
                        (n for n, s in group.states().items() if s.revision == revision and s.wave == "w1"),
                        None,
                    ),
                    ROLLOUT_TIMEOUT,
                )
                victim = group.owners()[canary]
                survivor = next(i for i in replicas if i != victim)
                replicas[victim].kill()
                eventually(
                    "the survivor to hold every cluster",
                    lambda: set(group.owners().values()) == {survivor},
                    120,
                )
                joined = group.start("replica-c")
                eventually(
                    "the joining replica to hold its share",
                    lambda: set(group.owners().values()) == {survivor, "replica-c"},
                    120,
                )
                eventually("every cluster healthy", lambda: group.all_healthy(revision), ROLLOUT_TIMEOUT)
                assert joined.running()
                assert replicas[survivor].running()
        assert_single_writer(group)

        # On the apiservers' clocks: each of the victim's clusters was taken by the survivor within a
        # lease duration (plus the rounds it takes to notice) of the victim's last renewal of it.
        for name in CLUSTERS:
            ours = [w for w in group.writes(name) if w.resource == "leases" and 200 <= w.code < 300]
            by_victim = [w.at.timestamp() for w in ours if replica_of(w) == victim]
            if not by_victim:
                continue
            after = [w.at.timestamp() for w in ours if w.at.timestamp() > max(by_victim)]
            if after:
                assert after[0] - max(by_victim) <= LEASE_DURATION + 4 * RETRY_PERIOD + 5.0, name
        # The joining replica took its first cluster within a lease duration of its first membership.
        home = [
            w
            for w in audit.writes(light, HOME)
            if w.resource == "leases" and "replica/replica-c" in w.user_agent
        ]
        member = min(w.at.timestamp() for w in home if w.name != OWNER_LEASE)
        taken = min(
            w.at.timestamp()
            for name in CLUSTERS
            for w in group.writes(name)
            if w.resource == "leases" and replica_of(w) == "replica-c" and 200 <= w.code < 300
        )
        assert taken - member <= LEASE_DURATION + 4 * RETRY_PERIOD + 5.0
        assert group.states()[canary].revision == revision
    finally:
        group.close()


def test_replicas_that_took_two_revisions_settle_on_one_in_force_and_no_cluster_moves_back(
    group: Group,
) -> None:
    """One replica polls a mirror that has only the first of two pushes, the other the remote that
    has both: each starts rolling out its own revision, waits at a wave for clusters the other owns,
    and once the mirror has the second push every cluster ends on it, recorded once in force."""
    mirror = group.mirror("agent-mirror.yaml")
    with group.agents.shown_on_failure():
        group.start("replica-a", "agent-mirror.yaml")
        group.start("replica-b")
        eventually(
            "both replicas to hold a share", lambda: len(set(group.owners().values()) - {""}) == 2, 120
        )
        with ReadyStatusStandIn(group.fleet.kubeconfig, CLUSTERS):
            first = group.commit("caches", "7.2.5", remote=mirror)
            group.push(group.remote)
            second = group.commit("caches 7.2.6", "7.2.6")
            # replica-a knows only the first push for a while; then the mirror catches up.
            eventually(
                "the second push recorded in force",
                lambda: (record := _in_force(group)) is not None and record.revision == second,
                120,
            )
            group.push(mirror)
            eventually("every cluster healthy on the second push", lambda: group.all_healthy(second), 180)
        record = _in_force(group)
        assert record is not None
        assert record.revision == second
        for name, client in group.clients.items():
            for i in range(3):
                rc = client.get("redis.syncer.dev/v1alpha1", "RedisCluster", f"cache-{i}", group.namespace)
                assert rc["spec"]["version"] == "7.2.6", (name, i)
                # One change per revision at most, in push order: a move back would be a third.
                assert rc["metadata"]["generation"] <= 2, (name, i, rc["metadata"]["generation"])
            # Each state records its owner Lease's fencing token (not a leader's, not none).
            configmap = client.get("v1", "ConfigMap", STATE_CONFIGMAP, group.state_namespace)
            annotations = configmap["metadata"]["annotations"]
            assert annotations[FENCING_LEASE] == f"{group.state_namespace}/{OWNER_LEASE}", name
            assert int(annotations[FENCING_TOKEN]) >= 1, name
        assert first != second
    assert_single_writer(group)


@pytest.mark.slow
def test_a_replica_that_takes_a_newer_revision_mid_rollout_puts_it_in_force_before_rolling_it_out(
    light: devfleet.Fleet, tmp_path: Path, ops_key: SshKey
) -> None:
    """Both replicas roll the first push out and wait at the baking canary; the second push reaches
    only one of them, which takes it over at its gate. It records it in force before it rolls it
    out (else each replica would wait at a wave for the other's clusters on its own revision), and
    once the lagging replica gets the push every cluster ends on it. The canary bakes 10 s: the second
    push is recorded in force about 2 s into it."""
    group = Group(tmp_path, light, ops_key, canary_bake="10s")
    try:
        mirror = group.mirror("agent-mirror.yaml")
        with group.agents.shown_on_failure():
            group.start("replica-a", "agent-mirror.yaml")
            group.start("replica-b")
            eventually(
                "both replicas to hold a share", lambda: len(set(group.owners().values()) - {""}) == 2, 120
            )
            with ReadyStatusStandIn(group.fleet.kubeconfig, CLUSTERS):
                first = group.commit("caches", "7.2.5", remote=mirror)
                group.push(group.remote)
                eventually(
                    "the canary baking on the first push",
                    lambda: any(s.revision == first and s.wave == "w1" for s in group.states().values()),
                    ROLLOUT_TIMEOUT,
                )
                second = group.commit("caches 7.2.6", "7.2.6")  # replica-b's remote only
                eventually(
                    "the second push recorded in force",
                    lambda: (record := _in_force(group)) is not None and record.revision == second,
                    120,
                )
                group.push(mirror)
                eventually("every cluster healthy on the second push", lambda: group.all_healthy(second), 180)
        record = _in_force(group)
        assert record is not None
        assert (record.revision, record.set_by) == (second, "replica-b")
        assert_single_writer(group)
    finally:
        group.close()


def _in_force(group: Group) -> RevisionInForce | None:
    return RevisionRecord(group.clients[HOME], f"{group.namespace}-members", "test").read()
