"""One cluster's kube-apiserver stopped and started again on the session fleet.

The restart must keep the cluster's data (same etcd prefix), port and certificates, record the new
process so that ``status``, ``down`` and the session's leak check see it, and leave the other clusters
and the cluster's other components running throughout.
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Iterator

import pytest
from click.testing import CliRunner

from devfleet import fleet as devfleet
from devfleet.cli import cli
from syncer.errors import NotFound, ServerError
from syncer.kube import ApplyOptions, ClientOptions, ClusterClient
from tests.integration.conftest import FleetHandle

pytestmark = pytest.mark.integration

STOPPED = "eu-1"
APISERVER = "kube-apiserver"


def _quiet(_: str) -> None:
    pass


def _client(fleet: FleetHandle, cluster: str) -> ClusterClient:
    return ClusterClient.from_kubeconfig(str(fleet.kubeconfig), cluster, options=ClientOptions(timeout=3))


@pytest.fixture
def restartable(fleet: FleetHandle) -> Iterator[devfleet.Fleet]:
    """The session fleet, with the stopped apiserver brought back (and recorded) whatever happens."""
    yield fleet.state
    recorded = devfleet.Fleet.load(fleet.state.root)
    assert recorded is not None
    # What the CLI started is recorded in fleet.json only; the session's teardown checks its own list.
    fleet.state.processes[:] = recorded.processes
    fleet.state.start_component(STOPPED, APISERVER, _quiet)


@pytest.fixture
def kept(fleet: FleetHandle, request: pytest.FixtureRequest) -> Iterator[tuple[str, str]]:
    """A ConfigMap in a namespace of its own on the cluster to be stopped: (namespace, uid)."""
    name = "restart-" + hashlib.sha1(request.node.nodeid.encode()).hexdigest()[:8]
    client = _client(fleet, STOPPED)
    try:
        client.apply(
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}},
            ApplyOptions(field_manager="test"),
        )
        made = client.apply(
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": "kept", "namespace": name},
                "data": {"written": "before the stop"},
            },
            ApplyOptions(field_manager="test"),
        )
        yield name, str(made["metadata"]["uid"])
    finally:
        with contextlib.suppress(NotFound):
            client.delete("v1", "Namespace", name)
        client.close()


def test_a_stopped_apiserver_comes_back_with_its_data_port_and_record(
    fleet: FleetHandle, restartable: devfleet.Fleet, kept: tuple[str, str]
) -> None:
    """Through the CLI, as a developer would: stop, status, start."""
    namespace, uid = kept
    root = str(restartable.root)
    runner = CliRunner()
    old = restartable.component(STOPPED, APISERVER)
    others = [p for p in restartable.processes if p != old]

    stop = runner.invoke(cli, ["stop", "--state-dir", root, "--cluster", STOPPED, "--component", APISERVER])
    assert stop.exit_code == 0, stop.output
    assert not old.alive()
    assert all(p.alive() for p in others), f"only {STOPPED}'s apiserver may stop"
    status = runner.invoke(cli, ["status", "--state-dir", root])
    assert status.exit_code == 1, "status fails while a component is down"
    stopped_lines = [line.split() for line in status.stdout.splitlines() if "STOPPED" in line]
    assert stopped_lines == [[STOPPED, APISERVER, str(old.pid), "STOPPED"]]
    down = _client(fleet, STOPPED)
    try:
        with pytest.raises(ServerError, match="cannot reach the apiserver"):
            down.get("v1", "ConfigMap", "kept", namespace)
    finally:
        down.close()
    up = _client(fleet, "us-1")
    try:
        up.get("v1", "Namespace", "default")
    finally:
        up.close()

    start = runner.invoke(cli, ["start", "--state-dir", root, "--cluster", STOPPED])
    assert start.exit_code == 0, start.output
    recorded = devfleet.Fleet.load(restartable.root)
    assert recorded is not None
    new = recorded.component(STOPPED, APISERVER)
    assert new.alive()
    assert new.pid != old.pid
    assert new.argv == old.argv, "the same port, certificates and etcd prefix"
    assert all(p.alive() for p in others), "the other processes were not restarted"
    status = runner.invoke(cli, ["status", "--state-dir", root])
    assert status.exit_code == 0, status.stdout
    lines = [line.split() for line in status.stdout.splitlines()]
    assert [STOPPED, APISERVER, str(new.pid), "running"] in lines

    back = _client(fleet, STOPPED)
    try:
        found = back.get("v1", "ConfigMap", "kept", namespace)
    finally:
        back.close()
    assert found["metadata"]["uid"] == uid
    assert found["data"] == {"written": "before the stop"}


def test_an_unknown_cluster_or_component_is_refused(fleet: FleetHandle) -> None:
    root = str(fleet.state.root)
    runner = CliRunner()
    unknown = runner.invoke(cli, ["stop", "--state-dir", root, "--cluster", "ap-1"])
    assert unknown.exit_code == 1
    assert "no cluster 'ap-1'" in unknown.output
    shared = runner.invoke(cli, ["stop", "--state-dir", root, "--cluster", STOPPED, "--component", "etcd"])
    assert shared.exit_code == 2, "etcd is shared by the fleet, not a component of one cluster"
    assert all(alive for *_, alive in devfleet.status(fleet.state.root))
