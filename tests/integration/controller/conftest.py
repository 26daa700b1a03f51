from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from devfleet import fleet as devfleet
from syncer.controller.model import API_VERSION, KIND, ControllerOptions
from syncer.kube import ClusterClient
from tests.integration.conftest import FleetHandle
from tests.integration.controller.kit import RunningController, controller_running, install_crd
from tests.integration.controller.rediskit import LOOPBACK_CLUSTER, Scene, SceneStarter, scene
from tests.integration.topology.traffic import stop_leftovers
from tests.support.waiting import eventually


@pytest.fixture(scope="module")
def kube(fleet: FleetHandle) -> Iterator[ClusterClient]:
    client = ClusterClient.from_kubeconfig(str(fleet.kubeconfig), fleet.names[0])
    install_crd(client)
    yield client
    client.close()


@pytest.fixture
def controller(
    fleet: FleetHandle, kube: ClusterClient, cluster: str, namespace: str
) -> Iterator[RunningController]:
    options = ControllerOptions(
        kubeconfig=str(fleet.kubeconfig),
        context=cluster,
        watch_namespace=namespace,
        leader_elect=False,
        watch_timeout_seconds=5,
        resync_seconds=30.0,
        poll_seconds=1.0,
    )
    with controller_running(options) as running:
        yield running
        # Delete what the test left while the controller still runs: its finalizer would otherwise
        # keep the namespace terminating for ever.
        for item in kube.list(API_VERSION, KIND, namespace=namespace).items:
            kube.delete(API_VERSION, KIND, item["metadata"]["name"], namespace)
        eventually(
            "the test's RedisClusters to be finalized",
            lambda: not kube.list(API_VERSION, KIND, namespace=namespace).items,
            60,
        )


@pytest.fixture(scope="session")
def loopback_fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[devfleet.Fleet]:
    """A one-cluster fleet whose pods get loopback IPs from a range claimed for it alone, so tests
    can run a real redis-server per pod; the claim is released at teardown. Its apiserver audits every
    write (``devfleet.audit``), so a test can tell which process wrote what."""
    root = tmp_path_factory.mktemp("loopback-fleet") / "state"
    options = devfleet.UpOptions(clusters=(LOOPBACK_CLUSTER,), loopback_pods=True, audit=True)
    started = devfleet.up(root, options, say=lambda _: None)
    claimed = started.pod_range
    try:
        assert claimed is not None
        assert claimed.lock.exists()
        yield started
    finally:
        processes = list(started.processes)
        assert devfleet.down(root, say=lambda _: None) == []
        assert not [p for p in processes if p.alive()]
        # Another fleet on this machine may claim the freed range at once: only our claim must be gone.
        holder = claimed.lock.read_text().split()[:1] if claimed and claimed.lock.exists() else []
        assert claimed is None or holder != [str(claimed.owner)], "down did not release the pod range"


@pytest.fixture
def redis_scene(
    loopback_fleet: devfleet.Fleet, tmp_path: Path, request: pytest.FixtureRequest
) -> SceneStarter:
    """Starts this test's RedisCluster on the loopback fleet (``rediskit.scene``):
    ``with redis_scene(persistence=False, shards=3, replicasPerShard=1) as s`` applies that spec and
    waits until it is Ready (with no spec nothing is applied; ``controller=False``: the test runs its own;
    ``exporter=True``: a redis_exporter measures the servers; ``pod_config=True``: each server reads the
    redis.conf its pod mounts)."""

    @contextmanager
    def start(
        *,
        persistence: bool,
        controller: bool = True,
        exporter: bool = False,
        pod_config: bool = False,
        **spec: Any,
    ) -> Iterator[Scene]:
        test = request.node.name
        made_scene = scene(
            loopback_fleet,
            tmp_path,
            test,
            persistence=persistence,
            controller=controller,
            exporter=exporter,
            pod_config=pod_config,
        )
        with made_scene as made:
            if spec:
                made.apply(**spec)
                made.wait_ready()
            yield made

    return start


@pytest.fixture(autouse=True)
def no_writer_outlives_its_test() -> Iterator[None]:
    """Stop a client writer its test left running (the test failed between ``start`` and ``stop``):
    it would go on writing into whatever cluster a later test builds on its servers' addresses, and
    that test would read its keys as lost. A test that leaves one running fails here."""
    yield
    left = stop_leftovers()
    assert not left, f"{left} traffic writer(s) still running after the test, stopped now"
