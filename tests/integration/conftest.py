"""Integration fixtures: one real local fleet per test session, a fresh namespace per test.

The fleet is started only when a test asks for it, and stopped at the end of the session; the
teardown fails the session if any process the fleet started is still alive.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from kubernetes import client, config
from kubernetes.client.exceptions import ApiException

from devfleet import fleet as devfleet
from syncer.kube import ClusterClient
from tests.integration.controller.kit import install_crd
from tests.integration.verify.kit import Keys, SshKey
from tests.support.namespaces import delete_namespaces


class FleetHandle:
    """The running fleet as tests see it: clusters by name and API clients per cluster."""

    def __init__(self, state: devfleet.Fleet) -> None:
        self.state = state
        self.kubeconfig: Path = state.kubeconfig
        self.names: list[str] = [c.name for c in state.clusters]
        self._clients: dict[str, client.ApiClient] = {}

    def api(self, cluster: str) -> client.ApiClient:
        if cluster not in self._clients:
            self._clients[cluster] = config.new_client_from_config(
                config_file=str(self.kubeconfig), context=cluster
            )
        return self._clients[cluster]

    @contextmanager
    def made_namespace(self, cluster: str, name: str) -> Iterator[str]:
        """Namespace ``name`` in ``cluster`` for the block, deleted afterwards (if still there)."""
        core = client.CoreV1Api(self.api(cluster))
        core.create_namespace({"metadata": {"name": name}})
        yield name
        try:
            core.delete_namespace(name)
        except ApiException as err:
            if err.status != 404:
                raise

    def close(self) -> None:
        for api_client in self._clients.values():
            api_client.close()


@pytest.fixture(scope="session")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FleetHandle]:
    """A session-wide fleet of three clusters: canary, eu-1, us-1, whose apiservers audit every write
    (``devfleet.audit``: who wrote what, as the cluster saw it)."""
    root = tmp_path_factory.mktemp("fleet") / "state"
    state = devfleet.up(root, devfleet.UpOptions(audit=True), say=lambda msg: print(msg, flush=True))
    handle = FleetHandle(state)
    try:
        yield handle
    finally:
        handle.close()
        # What up started and whatever the tests recorded since (a Prometheus, a component started
        # again): the record on disk is what down stops, and what it must have stopped.
        recorded = devfleet.Fleet.load(root)
        started = list(state.processes) + (recorded.processes if recorded is not None else [])
        survivors = devfleet.down(root, say=lambda msg: None)
        leaked = [p for p in started if p.alive()]
        assert not survivors, f"fleet processes could not be stopped: {survivors}"
        assert not leaked, f"fleet processes leaked: {leaked}"


@pytest.fixture(scope="session")
def ops_key(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SshKey]:
    """An SSH key, made with ssh-keygen, that tests sign fleet-repository commits with."""
    with Keys(tmp_path_factory.mktemp("keys")) as keys:
        yield keys.ssh("ops")


@pytest.fixture(scope="session")
def crd_installed(fleet: FleetHandle) -> None:
    """The RedisCluster CRD, installed in every cluster of the session fleet and served."""
    for name in fleet.names:
        api = ClusterClient.from_kubeconfig(str(fleet.kubeconfig), name)
        try:
            install_crd(api)
        finally:
            api.close()


@pytest.fixture
def clients(fleet: FleetHandle, crd_installed: None) -> Iterator[dict[str, ClusterClient]]:
    """A client of each cluster of the session fleet (the RedisCluster CRD served), as the fleet's
    admin, closed afterwards."""
    made = {n: ClusterClient.from_kubeconfig(str(fleet.kubeconfig), n) for n in fleet.names}
    yield made
    for each in made.values():
        each.close()


@pytest.fixture
def prefix(namespace: str, clients: dict[str, ClusterClient]) -> Iterator[str]:
    """The name of the test's namespace in every cluster (and, with ``-state``, of its sync states),
    for tests that roll a fleet repository out with it as the default namespace; both deleted
    afterwards."""
    name = f"{namespace}-p"
    yield name
    delete_namespaces(clients.values(), name, f"{name}-state")


@pytest.fixture
def cluster(fleet: FleetHandle) -> str:
    """One cluster of the session fleet, for tests that need a single cluster."""
    return fleet.names[0]


@pytest.fixture
def kube(fleet: FleetHandle, cluster: str) -> Iterator[ClusterClient]:
    """A client of ``cluster`` as the fleet's admin, closed afterwards."""
    client = ClusterClient.from_kubeconfig(str(fleet.kubeconfig), cluster)
    yield client
    client.close()


@pytest.fixture
def namespace(fleet: FleetHandle, cluster: str, request: pytest.FixtureRequest) -> Iterator[str]:
    """A namespace unique to this test in ``cluster``, deleted afterwards."""
    digest = hashlib.sha1(f"{request.node.nodeid}{os.getpid()}".encode()).hexdigest()[:8]
    name = f"t-{request.node.name[:40].lower().replace('_', '-').strip('-')}-{digest}"
    name = "".join(ch if ch.isalnum() or ch == "-" else "-" for ch in name)
    with fleet.made_namespace(cluster, name) as made:
        yield made


def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> None:
    """When a test that uses the fleet fails, attach the tail of every component log to the report."""
    if call.when != "call" or call.excinfo is None or "fleet" not in getattr(item, "fixturenames", ()):
        return
    handle = item.funcargs.get("fleet") if hasattr(item, "funcargs") else None
    if isinstance(handle, FleetHandle):
        for proc in handle.state.processes:
            item.add_report_section("call", f"{proc.name} log", devfleet.tail(Path(proc.log), 8))
