"""Sharded replicas for tests: the fleet of light clusters they run on (``light_fleet``), a
``FleetRollout`` whose writes go through a ``Shards`` fence, a thread renewing its Leases, and a
process entry point so a test can SIGKILL a replica mid-wave:
``python -m tests.integration.engine.sharded_kit KUBECONFIG IDENTITY GROUP REPO REVISION BAKE CLUSTER...``.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import yaml

from devfleet import fleet as devfleet
from devfleet.access import install_redis_crd
from syncer.config.rollout import RolloutPolicy, WaveGate, WavePolicy
from syncer.engine.rollout import FleetRollout
from syncer.engine.rollout_model import RolloutHooks, RolloutOptions, RolloutReport
from syncer.kube import ClientOptions, ClusterClient
from syncer.leader.assignment import owned_by
from syncer.leader.fence import FencedKube
from syncer.leader.shards import ShardOptions, Shards
from syncer.manifests import load_fleet

NAMESPACE = "syncer-system"
RETRY = 0.5
DURATION, DEADLINE = 8.0, 4.0  # the margin (4 s) is above the request timeout (3 s)


def _quiet(_: str) -> None:
    pass


@contextmanager
def light_fleet(
    root: Path, clusters: Sequence[str], namespaces: Sequence[str] = ()
) -> Iterator[devfleet.Fleet]:
    """Light clusters whose apiservers audit every write, each with the RedisCluster CRD and
    ``namespaces``; stopped afterwards, failing if anything it started is left running. Many
    apiservers start slowly on a busy machine: they are allowed 20 minutes."""
    options = devfleet.UpOptions(
        clusters=tuple(clusters), profile=devfleet.Profile.LIGHT, audit=True, timeout=1200.0
    )
    fleet = devfleet.up(root, options, _quiet)
    try:
        for name in clusters:
            admin = ClusterClient.from_kubeconfig(str(fleet.kubeconfig), name)
            try:
                install_redis_crd(admin, field_manager="syncer-tests")
                for namespace in namespaces:
                    admin.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
            finally:
                admin.close()
        yield fleet
    finally:
        assert devfleet.down(root, _quiet) == []


def policy(canary_bake: float = 0.0) -> RolloutPolicy:
    gate = WaveGate(max_concurrent=4, health_timeout=120.0, bake=0.0)
    first = WaveGate(max_concurrent=4, health_timeout=120.0, bake=canary_bake)
    shares = (("w1", 1, first), ("w10", 10, gate), ("w50", 50, gate), ("all", 100, gate))
    return RolloutPolicy(tuple(WavePolicy(n, p, None, g) for n, p, g in shares), rollback=False)


def write_repo(root: Path, prefix: str, clusters: Sequence[str]) -> Path:
    entries = [{"name": n} for n in clusters]
    fleet_file = {"apiVersion": "syncer.dev/v1alpha1", "kind": "Fleet", "clusters": entries}
    (root / "base").mkdir(parents=True)
    (root / "fleet.yaml").write_text(yaml.safe_dump(fleet_file))
    docs = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": prefix}}] + [
        {
            "apiVersion": "redis.syncer.dev/v1alpha1",
            "kind": "RedisCluster",
            "metadata": {"name": f"cache-{i}", "namespace": prefix},
            "spec": {"version": "7.2.5", "shards": 3, "replicasPerShard": 1},
        }
        for i in range(3)
    ]
    (root / "base" / "all.yaml").write_text(yaml.safe_dump_all(docs))
    return root


class Replica:
    """One replica: its clients (user agent ``syncer-test/<identity>``), its Shards renewed by a
    thread, and its rollout."""

    def __init__(
        self, kubeconfig: Path, identity: str, group: str, clusters: Sequence[str], canary_bake: float = 0.0
    ) -> None:
        self.identity = identity
        options = ClientOptions(timeout=3, user_agent=f"syncer-test/{identity}")
        self.raw = {n: ClusterClient.from_kubeconfig(str(kubeconfig), n, options=options) for n in clusters}
        shard_options = ShardOptions(
            group=group,
            namespace=NAMESPACE,
            owner_namespace=NAMESPACE,
            identity=identity,
            lease_duration=DURATION,
            renew_deadline=DEADLINE,
            retry_period=RETRY,
        )
        self.shards = Shards(self.raw[clusters[0]], self.raw, shard_options)
        self.stop = threading.Event()
        self._renewing = threading.Thread(target=self._renew, daemon=True)
        self._renewing.start()
        # The rollout's writers have clients of their own (the Leases keep theirs).
        self.writers = {
            n: ClusterClient.from_kubeconfig(str(kubeconfig), n, options=options) for n in clusters
        }
        clients = {n: FencedKube(api, self.shards.fence(n)) for n, api in self.writers.items()}
        rollout_options = RolloutOptions(rollout=policy(canary_bake), health_poll=0.5)
        self.rollout = FleetRollout(
            clients,
            rollout_options,
            stop=self.stop,
            hooks=RolloutHooks(owns=self.shards.holds, sharded=True, fences=self.shards.fence),
        )
        self.report: RolloutReport | None = None

    def _renew(self) -> None:
        while not self.stop.wait(RETRY):
            self.shards.round()

    def sync(self, repo: Path, revision: str) -> threading.Thread:
        def run() -> None:
            self.report = self.rollout.sync(load_fleet(repo, revision))

        thread = threading.Thread(target=run, daemon=True)
        thread.start()
        return thread

    def close(self) -> None:
        self.stop.set()
        self._renewing.join()
        self.shards.leave()
        for api in [*self.raw.values(), *self.writers.values()]:
            api.close()


def settle(replicas: int, *shards: Shards, timeout: float = 120.0) -> None:
    """Until each of ``shards`` sees ``replicas`` members and holds every cluster assigned to it."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        views = [s.view for s in shards]
        if all(
            len(v.members) == replicas and v.held == owned_by(v.assignment, s.options.identity)
            for s, v in zip(shards, views, strict=True)
        ):
            return
        time.sleep(RETRY)
    raise TimeoutError(f"the replicas did not settle: {[s.view for s in shards]}")


def main(argv: Sequence[str]) -> None:
    kubeconfig, identity, group, repo, revision, bake, *clusters = argv
    replica = Replica(Path(kubeconfig), identity, group, clusters, float(bake))
    settle(2, replica.shards, timeout=300.0)
    replica.sync(Path(repo), revision).join()
    print(replica.report.outcome if replica.report else "no report", flush=True)
    replica.close()


if __name__ == "__main__":
    main(sys.argv[1:])
