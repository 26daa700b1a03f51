"""``syncer run`` as real processes on the real 3-cluster fleet, from a signed commit in a real git
remote: an agent killed with SIGKILL mid-rollout is started again and resumes from the clusters'
sync states without redoing finished waves; of two replicas only the Lease holder applies, and when
it is killed the other takes the Lease once it expires and rolls the next revision out; SIGTERM
stops an agent at a safe point, leaving every cluster's state whole for the next one."""

from __future__ import annotations

import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from syncer.controller.model import ControllerOptions
from syncer.controller.runner import run_controller
from syncer.domain.sync_state import ClusterSyncState, SyncPhase
from syncer.errors import NotFound
from syncer.kube import ClusterClient
from syncer.status import StateStore
from syncer.status.state_store import LoadedState
from tests.integration.agent.procs import AgentProc, Agents
from tests.integration.agent.runkit import run_args
from tests.integration.conftest import FleetHandle
from tests.integration.verify.kit import GitRepo, SshKey, bare_remote, write_policy
from tests.support.namespaces import delete_namespaces
from tests.support.waiting import eventually

pytestmark = pytest.mark.integration

RC_API = "redis.syncer.dev/v1alpha1"
CLUSTERS = ("canary", "eu-1", "us-1")
LABELS = {
    "canary": {"tier": "canary", "region": "eu"},
    "eu-1": {"tier": "prod", "region": "eu"},
    "us-1": {"tier": "prod", "region": "us"},
}
# Three waves of one cluster each. The first two bake long enough that a test can catch the
# rollout between waves by watching the sync states (eu-1 applied, its wave not passed yet: its bake
# is that window, the agent noticing its health within a second); the last one is short.
THREE_WAVES = {
    "waves": [
        {"name": "canary", "percent": 1, "selector": {"matchLabels": {"tier": "canary"}}},
        {"name": "eu", "percent": 67, "selector": {"matchLabels": {"region": "eu"}}, "bake": "9s"},
        {"name": "us", "percent": 100, "selector": {"matchLabels": {"region": "us"}}, "bake": "1s"},
    ],
    "defaults": {"maxConcurrent": 1, "healthTimeout": "60s", "bake": "5s"},
    "rollback": False,
}
TWO_WAVES = {
    "waves": [
        {"name": "canary", "percent": 1, "selector": {"matchLabels": {"tier": "canary"}}},
        {"name": "rest", "percent": 100},
    ],
    "defaults": {"maxConcurrent": 2, "healthTimeout": "60s", "bake": "1s"},
    "rollback": False,
}
# Lease settings of the two-replica test (whole seconds: the Lease stores the duration as such).
LEASE_DURATION, LEASE_RENEW_DEADLINE, LEASE_RETRY_PERIOD = 4, 3, 1
# A SIGTERM'd agent with embedded controllers stops within one controller watch (10 s on local
# fleets) plus the controllers' 15 s of grace to finish their work.
STOP_BOUND = 10 + 15 + 5
ROLLOUT_TIMEOUT = 90


def redis_cluster(namespace: str, version: str) -> dict[str, Any]:
    return {
        "apiVersion": RC_API,
        "kind": "RedisCluster",
        "metadata": {"name": "sessions", "namespace": namespace},
        "spec": {
            "shards": 1,
            "replicasPerShard": 0,
            "version": version,
            "persistence": {"enabled": False},
            "rolloutStrategy": {"steps": [{"percent": 100}], "stepTimeout": "20s", "revertOnFailure": True},
        },
    }


class Rig:
    """A signed fleet repository in a bare remote, the agent's config and rollout policies for the
    test fleet, and (on demand) one in-process controller per cluster watching the test's namespace."""

    def __init__(self, root: Path, fleet: FleetHandle, key: SshKey, namespace: str) -> None:
        self.root = root
        self.fleet = fleet
        self.key = key
        self.namespace = namespace
        self.state_namespace = f"{namespace}-state"
        self.lease_namespace = f"{namespace}-lease"
        self.remote = bare_remote(root / "remote.git")
        self.work = GitRepo(root / "work")
        fleet_file = {
            "apiVersion": "syncer.dev/v1alpha1",
            "kind": "Fleet",
            "defaults": {"namespace": namespace},
            "clusters": [{"name": n, "labels": labels} for n, labels in LABELS.items()],
        }
        self.work.write({"fleet.yaml": yaml.safe_dump(fleet_file)})
        write_policy(root / "trust.yaml", signers=[{"name": "ops", "ssh": key.public_line}], keys=[])
        (root / "three-waves.yaml").write_text(yaml.safe_dump(THREE_WAVES))
        (root / "two-waves.yaml").write_text(yaml.safe_dump(TWO_WAVES))
        config = {
            "source": {"url": str(self.remote), "cacheDir": str(root / "cache"), "timeoutSeconds": 30},
            "trustPolicy": "trust.yaml",
            "clusters": {n: {"context": n, "kubeconfig": str(fleet.kubeconfig)} for n in fleet.names},
        }
        (root / "agent.yaml").write_text(yaml.safe_dump(config))
        self.clients = {n: ClusterClient.from_kubeconfig(str(fleet.kubeconfig), n) for n in fleet.names}
        self.stop = threading.Event()
        self.controllers: list[threading.Thread] = []

    def args(self, policy: str, *extra: str) -> list[str]:
        """``syncer run`` arguments: this rig's config, a free HTTP port and short intervals."""
        return run_args(self.root, policy, self.fleet.kubeconfig, self.state_namespace, *extra)

    def commit(self, message: str, version: str) -> str:
        docs = [
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": self.namespace}},
            redis_cluster(self.namespace, version),
        ]
        sha = self.work.commit(message, {"base/objects.yaml": yaml.safe_dump_all(docs)}, sign=self.key)
        self.work.git("push", "-q", str(self.remote), "main")
        return sha

    def start_controllers(self) -> None:
        if self.controllers:
            return
        for name in self.fleet.names:
            options = ControllerOptions(
                kubeconfig=str(self.fleet.kubeconfig),
                context=name,
                watch_namespace=self.namespace,
                leader_elect=False,
                watch_timeout_seconds=5,
                poll_seconds=1.0,
            )
            thread = threading.Thread(target=run_controller, args=(options, self.stop), daemon=True)
            thread.start()
            self.controllers.append(thread)

    # -- what the clusters record -----------------------------------------------------------------

    def loaded(self) -> dict[str, LoadedState]:
        return {n: StateStore(c, self.state_namespace).load() for n, c in self.clients.items()}

    def states(self) -> dict[str, ClusterSyncState]:
        return {n: loaded.state for n, loaded in self.loaded().items()}

    def between_waves(self, revision: str) -> dict[str, ClusterSyncState] | None:
        """The states once the canary wave is done and the eu wave applied (and baking), else None."""
        found = self.states()
        canary, eu = found["canary"], found["eu-1"]
        if (canary.revision, canary.phase) == (revision, SyncPhase.HEALTHY) and (eu.revision, eu.phase) == (
            revision,
            SyncPhase.APPLIED,
        ):
            return found
        return None

    def all_healthy(self, revision: str) -> dict[str, ClusterSyncState] | None:
        found = self.states()
        if all((s.revision, s.phase) == (revision, SyncPhase.HEALTHY) for s in found.values()):
            return found
        return None

    def lease_holder(self) -> str:
        try:
            lease = self.clients["canary"].get(
                "coordination.k8s.io/v1", "Lease", "syncer-agent", self.lease_namespace
            )
        except NotFound:
            return ""
        return str((lease.get("spec") or {}).get("holderIdentity") or "")

    def close(self) -> None:
        # Whoever reconciled the RedisClusters may be gone (an agent's embedded controllers): the
        # in-process controllers remove the finalizers, and stop only once every RedisCluster is gone.
        self.start_controllers()
        for client in self.clients.values():
            for rc in client.list(RC_API, "RedisCluster", namespace=self.namespace).items:
                client.delete(RC_API, "RedisCluster", rc["metadata"]["name"], self.namespace)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and any(
            c.list(RC_API, "RedisCluster", namespace=self.namespace).items for c in self.clients.values()
        ):
            time.sleep(0.5)
        self.stop.set()
        for thread in self.controllers:
            thread.join(timeout=30)
        for client in self.clients.values():
            delete_namespaces([client], self.namespace, self.state_namespace, self.lease_namespace)
            client.close()


@pytest.fixture
def rig(
    fleet: FleetHandle, namespace: str, tmp_path: Path, ops_key: SshKey, crd_installed: None
) -> Iterator[Rig]:
    made = Rig(tmp_path, fleet, ops_key, f"{namespace}-p")
    try:
        yield made
    finally:
        made.close()


@pytest.fixture
def agents(tmp_path: Path, rig: Rig) -> Iterator[Agents]:
    """The test's agent processes; killed at the end (before the rig is torn down)."""
    procs = Agents(tmp_path)
    try:
        yield procs
    finally:
        procs.close()


def clusters_of(proc: AgentProc, step: str) -> list[str]:
    return [str(r.get("cluster")) for r in proc.steps(step)]


def test_an_agent_killed_mid_rollout_resumes_from_the_clusters_without_redoing_finished_waves(
    rig: Rig, agents: Agents
) -> None:
    rig.start_controllers()
    with agents.shown_on_failure():
        revision = rig.commit("sessions cache", "7.2.4")
        first = agents.start("first", rig.args("three-waves.yaml", "--no-leader-elect"))
        first.port()

        # Kill it while the eu wave bakes: the canary wave is done, us-1 not yet touched.
        at_kill = eventually(
            "the canary wave done and eu-1 applied", lambda: rig.between_waves(revision), ROLLOUT_TIMEOUT
        )
        first.kill()
        assert first.gone()
        after_kill = rig.states()
        assert after_kill["us-1"].phase is SyncPhase.NEVER
        assert after_kill["eu-1"].phase is SyncPhase.APPLIED
        assert clusters_of(first, "applying") == ["canary", "eu-1"]
        assert not first.said("sync "), "the first agent never finished its pass"

        second = agents.start("second", rig.args("three-waves.yaml", "--no-leader-elect"))
        done = eventually("every cluster healthy", lambda: rig.all_healthy(revision), ROLLOUT_TIMEOUT)
        eventually("the second agent's pass to end", lambda: second.said("sync applied"), 30)

        # Finished and applied clusters were not applied again: their apply times are the first
        # agent's, and the second agent applied us-1 only.
        assert done["canary"].applied_at == at_kill["canary"].applied_at
        assert done["eu-1"].applied_at == at_kill["eu-1"].applied_at
        assert done["us-1"].applied_at > at_kill["eu-1"].applied_at
        assert clusters_of(second, "applying") == ["us-1"]
        # eu-1 was applied but its wave not judged: it is judged now, not applied again. The canary
        # wave had passed: it is only watched, its gate is not judged again.
        already = {(r.get("wave"), r.get("cluster")) for r in second.steps("already-applied")}
        assert ("eu", "eu-1") in already
        assert ("canary", "canary") not in already
        assert {r.get("wave") for r in second.steps("gate-proceed")} == {"eu", "us"}
        # The canary's bake counted from the time recorded in the cluster: it was not baked again.
        canary_waits = [r for r in second.steps("gate-wait") if r.get("wave") == "canary"]
        assert canary_waits == []
        assert done["canary"].healthy_since == at_kill["canary"].healthy_since
        for name, client in rig.clients.items():
            live = client.get(RC_API, "RedisCluster", "sessions", rig.namespace)
            assert live["spec"]["version"] == "7.2.4", name


@pytest.mark.slow
def test_of_two_replicas_only_the_lease_holder_applies_and_the_other_takes_over_when_it_dies(
    rig: Rig, agents: Agents
) -> None:
    rig.start_controllers()
    lease_flags = [
        "--leader-elect",
        "--lease-namespace",
        rig.lease_namespace,  # does not exist yet: the agent creates it
        "--lease-context",
        "canary",
        "--lease-duration",
        f"{LEASE_DURATION}s",
        "--lease-renew-deadline",
        f"{LEASE_RENEW_DEADLINE}s",
        "--lease-retry-period",
        f"{LEASE_RETRY_PERIOD}s",
    ]
    with agents.shown_on_failure():
        first = rig.commit("sessions cache", "7.2.4")
        replicas = [agents.start(name, rig.args("two-waves.yaml", *lease_flags)) for name in ("a", "b")]
        holder = eventually(
            "a Lease holder", lambda: all(p.running() for p in replicas) and rig.lease_holder(), 30
        )

        def identity(proc: AgentProc) -> str:
            acquired = proc.said("acquired lease ")
            return acquired[-1].rsplit(" as ", 1)[1] if acquired else ""

        leader = eventually(
            "the holder to say so", lambda: next((p for p in replicas if identity(p) == holder), None), 10
        )
        standby = next(p for p in replicas if p is not leader)
        assert identity(standby) == ""
        eventually("the leader's syncer_leader gauge", lambda: leader.metrics()["syncer_leader"] == 1, 10)

        eventually("every cluster healthy", lambda: rig.all_healthy(first), ROLLOUT_TIMEOUT)
        assert rig.lease_holder() == holder
        assert sorted(clusters_of(leader, "applied")) == sorted(CLUSTERS)
        applied = {k: v for k, v in leader.metrics().items() if k.startswith("syncer_apply_objects_total")}
        assert sum(applied.values()) > 0, applied
        # The standby served its endpoints and did nothing else.
        standby_metrics = standby.metrics()
        assert standby_metrics["syncer_leader"] == 0
        assert not [k for k in standby_metrics if k.startswith("syncer_apply_objects_total")]
        assert not [k for k in standby_metrics if k.startswith("syncer_git_poll_total")]
        assert clusters_of(standby, "applying") == []
        assert not standby.said("leading")
        status, body = standby.get("/readyz")
        assert (status, body.split(";")[0]) == (200, "standby")

        leader.kill()
        killed = time.monotonic()
        assert leader.gone()
        second = rig.commit("newer redis", "7.2.5")
        taker = eventually(
            "another Lease holder", lambda: rig.lease_holder() not in ("", holder) or None, 30, 0.05
        )
        took = time.monotonic() - killed
        print(f"takeover {took:.2f}s after SIGKILL (lease duration {LEASE_DURATION}s)")
        assert taker is True
        took_as = eventually("the standby to say it took the Lease", lambda: identity(standby) or None, 5)
        assert rig.lease_holder() == took_as
        # The standby waits for the Lease to expire: it has seen the last renewal (at most one retry
        # period before the kill) no later than one retry period after it was made, counts the
        # duration from then, and tries once per retry period; one more second for the API calls.
        assert took >= LEASE_DURATION - LEASE_RETRY_PERIOD - 0.5
        assert took <= LEASE_DURATION + 2 * LEASE_RETRY_PERIOD + 1

        eventually(
            "every cluster healthy at the new revision", lambda: rig.all_healthy(second), ROLLOUT_TIMEOUT
        )
        assert standby.metrics()["syncer_leader"] == 1
        assert sorted(clusters_of(standby, "applied")) == sorted(CLUSTERS)
        for name, client in rig.clients.items():
            live = client.get(RC_API, "RedisCluster", "sessions", rig.namespace)
            assert live["spec"]["version"] == "7.2.5", name


@pytest.mark.slow
def test_sigterm_stops_the_agent_between_clusters_with_every_state_whole(rig: Rig, agents: Agents) -> None:
    with agents.shown_on_failure():
        revision = rig.commit("sessions cache", "7.2.4")
        # This agent reconciles the RedisClusters itself, so its controllers' stop is part of its exit.
        embedded = ["--no-leader-elect", "--controller-every-cluster", "--watch-namespace", rig.namespace]
        first = agents.start("first", rig.args("three-waves.yaml", *embedded))
        first.port()
        eventually(
            "the canary wave done and eu-1 applied", lambda: rig.between_waves(revision), ROLLOUT_TIMEOUT
        )

        first.send(signal.SIGTERM)
        sent = time.monotonic()
        try:
            code = first.popen.wait(timeout=STOP_BOUND)
        except subprocess.TimeoutExpired:
            pytest.fail(f"the agent did not exit within {STOP_BOUND}s of SIGTERM")
        print(f"exited {time.monotonic() - sent:.2f}s after SIGTERM with {code}")
        assert code == 0
        assert first.gone()
        assert first.said("sync interrupted")
        assert first.said("stopped leading")
        assert clusters_of(first, "applying") == ["canary", "eu-1"]

        loaded = rig.loaded()
        assert {n: loaded[n].problem for n in CLUSTERS} == dict.fromkeys(CLUSTERS, "")
        phases = {n: loaded[n].state.phase for n in CLUSTERS}
        assert SyncPhase.APPLYING not in phases.values(), phases
        assert phases["canary"] is SyncPhase.HEALTHY
        assert phases["eu-1"] in {SyncPhase.APPLIED, SyncPhase.HEALTHY}
        assert phases["us-1"] is SyncPhase.NEVER

        rig.start_controllers()
        second = agents.start("second", rig.args("three-waves.yaml", "--no-leader-elect"))
        done = eventually("every cluster healthy", lambda: rig.all_healthy(revision), ROLLOUT_TIMEOUT)
        assert done["canary"].applied_at == loaded["canary"].state.applied_at
        assert done["eu-1"].applied_at == loaded["eu-1"].state.applied_at
        assert clusters_of(second, "applying") == ["us-1"]
