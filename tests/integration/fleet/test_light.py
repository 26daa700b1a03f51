"""Light clusters are real, separate, secured apiservers with less in them, and fleets never collide.

Two light fleets of their own run side by side in this module (not the session fleet): each cluster
has its own CA and RBAC, serves only the API groups syncer needs, keeps RedisClusters, and logs every
write to its audit log; the status stand-in marks RedisClusters Ready for their generation.
"""

from __future__ import annotations

import ssl
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from devfleet import access, audit, cpu, memory
from devfleet import fleet as devfleet
from devfleet.cli import cli
from devfleet.standin import REASON, ReadyStatusStandIn
from syncer.errors import Forbidden, NotFound
from syncer.kube import ApplyOptions, ClientOptions, ClusterClient
from tests.integration.controller.kit import install_crd
from tests.support.waiting import eventually

pytestmark = pytest.mark.integration

API = "redis.syncer.dev/v1alpha1"


def _quiet(_: str) -> None:
    pass


@pytest.fixture(scope="module")
def two_fleets(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[devfleet.Fleet, devfleet.Fleet]]:
    """Two light fleets started at the same time on this machine, with the same cluster names."""
    roots = [tmp_path_factory.mktemp("light") / "state", tmp_path_factory.mktemp("light") / "state"]
    options = devfleet.UpOptions(
        clusters=devfleet.cluster_names(3), profile=devfleet.Profile.LIGHT, audit=True
    )
    started: list[devfleet.Fleet | BaseException] = [RuntimeError("not started")] * 2

    def start(index: int) -> None:
        try:
            started[index] = devfleet.up(roots[index], options, _quiet)
        except BaseException as err:
            started[index] = err

    threads = [threading.Thread(target=start, args=(i,)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    try:
        fleets = [f for f in started if isinstance(f, devfleet.Fleet)]
        assert len(fleets) == 2, f"a fleet did not start: {started}"
        yield fleets[0], fleets[1]
    finally:
        for root in roots:
            assert devfleet.down(root, _quiet) == []


def _client(fleet: devfleet.Fleet, cluster: str) -> ClusterClient:
    return ClusterClient.from_kubeconfig(str(fleet.kubeconfig), cluster, options=ClientOptions(timeout=10))


def _redis(namespace: str, name: str, shards: int = 3) -> dict[str, Any]:
    return {
        "apiVersion": API,
        "kind": "RedisCluster",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"version": "7.2.5", "shards": shards, "replicasPerShard": 1},
    }


def test_a_light_cluster_runs_only_its_apiserver(two_fleets: tuple[devfleet.Fleet, devfleet.Fleet]) -> None:
    for fleet in two_fleets:
        names = sorted(p.name for p in fleet.live())
        assert names == ["etcd"] + ["kube-apiserver"] * 3
        assert [c.profile for c in fleet.clusters] == [devfleet.Profile.LIGHT] * 3
        rows = {r.cluster: r for r in memory.per_cluster(fleet)}
        assert {"c-01", "c-02", "c-03", "-"} == set(rows)
        assert all(r.processes == 1 and r.rss_kib > 0 for r in rows.values())


def test_an_idle_light_cluster_costs_well_under_one_percent_of_a_core(
    two_fleets: tuple[devfleet.Fleet, devfleet.Fleet],
) -> None:
    # A hundred of them must fit on a small machine. A Go memory limit below the live heap once kept
    # each one's collector running without pause, at about 7% of a core (0.3% without it).
    for fleet in two_fleets:
        rows = [r for r in cpu.per_cluster(fleet, 8.0) if r.profile == devfleet.Profile.LIGHT]
        assert len(rows) == 3
        assert all(r.core_share < 0.025 for r in rows), rows
    shown = CliRunner().invoke(cli, ["cpu", "--state-dir", str(two_fleets[0].root), "--window", "1"])
    assert shown.exit_code == 0, shown.output
    lines = shown.output.splitlines()
    assert sorted(line.split()[0] for line in lines if " light " in line) == ["c-01", "c-02", "c-03"]
    assert any(line.startswith("light: mean ") and line.endswith("% of a core per cluster") for line in lines)


def test_fleets_side_by_side_share_no_port_and_no_data(
    two_fleets: tuple[devfleet.Fleet, devfleet.Fleet],
) -> None:
    first, second = two_fleets
    ports = [c.port for f in two_fleets for c in f.clusters] + [f.etcd_port for f in two_fleets]
    assert len(set(ports)) == len(ports)
    assert first.root != second.root
    one, two = _client(first, "c-01"), _client(second, "c-01")
    try:
        one.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "only-in-first"}})
        assert one.get("v1", "Namespace", "only-in-first")["metadata"]["name"] == "only-in-first"
        with pytest.raises(NotFound):
            two.get("v1", "Namespace", "only-in-first")
    finally:
        one.close()
        two.close()


def test_only_the_groups_syncer_needs_are_served(two_fleets: tuple[devfleet.Fleet, devfleet.Fleet]) -> None:
    kube = _client(two_fleets[0], "c-02")
    try:
        assert kube.list("v1", "ConfigMap", namespace="kube-system").items is not None
        assert kube.list("coordination.k8s.io/v1", "Lease", namespace="kube-system").items is not None
        with pytest.raises(NotFound):
            kube.list("batch/v1", "Job")
        with pytest.raises(NotFound):
            kube.list("apps/v1", "StatefulSet")
        with pytest.raises(NotFound):
            kube.list("storage.k8s.io/v1", "StorageClass")
    finally:
        kube.close()


def test_each_cluster_trusts_only_its_own_ca_and_enforces_rbac(
    two_fleets: tuple[devfleet.Fleet, devfleet.Fleet], tmp_path: Path
) -> None:
    fleet = two_fleets[0]
    one, other = fleet.cluster("c-01"), fleet.cluster("c-02")
    # The admin certificate of c-01 is not accepted by c-02, whose CA did not sign it.
    ctx = ssl.create_default_context(cafile=str(other.files.pki / "ca.crt"))
    ctx.load_cert_chain(str(one.files.pki / "admin.crt"), str(one.files.pki / "admin.key"))
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(f"{other.server}/api/v1/namespaces", context=ctx, timeout=10)
    refused.value.close()
    assert refused.value.code == 401
    # A user of the cluster's own CA has no rights until bound.
    kubeconfig = access.user_kubeconfig(fleet, "c-01", "nobody", (), tmp_path / "nobody.kubeconfig")
    nobody = ClusterClient.from_kubeconfig(str(kubeconfig), "c-01")
    try:
        with pytest.raises(Forbidden):
            nobody.list("v1", "ConfigMap", namespace="default")
    finally:
        nobody.close()


def test_the_stand_in_marks_each_generation_ready_and_the_audit_log_names_every_writer(
    two_fleets: tuple[devfleet.Fleet, devfleet.Fleet],
) -> None:
    fleet = two_fleets[1]
    kube = _client(fleet, "c-03")
    agent = "syncer-tests/replica-a"
    writer = ClusterClient.from_kubeconfig(
        str(fleet.kubeconfig), "c-03", options=ClientOptions(timeout=10, user_agent=agent)
    )
    try:
        install_crd(kube)
        kube.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "prod"}})
        with ReadyStatusStandIn(fleet.kubeconfig, ["c-03"]) as stand_in:
            writer.apply(_redis("prod", "cache"), ApplyOptions(field_manager="syncer"))

            def ready_for(generation: int) -> bool:
                live = kube.get(API, "RedisCluster", "cache", "prod")
                status = live.get("status") or {}
                conditions = {c["type"]: c for c in status.get("conditions") or []}
                return (
                    live["metadata"]["generation"] == generation
                    and status.get("observedGeneration") == generation
                    and conditions.get("Ready", {}).get("reason") == REASON
                )

            eventually("generation 1 marked Ready by the stand-in", lambda: ready_for(1), 30)
            writer.apply(_redis("prod", "cache", shards=4), ApplyOptions(field_manager="syncer"))
            eventually("generation 2 marked Ready by the stand-in", lambda: ready_for(2), 30)
            eventually("the stand-in to count its two writes", lambda: stand_in.marked["c-03"] == 2, 10)
        writes = [
            w for w in audit.writes(fleet, "c-03") if w.resource == "redisclusters" and w.name == "cache"
        ]
        by_agent = [w for w in writes if w.user_agent == agent]
        assert [w.verb for w in by_agent] == ["patch", "patch"]
        assert all(w.code in {200, 201} for w in by_agent)
        assert {w.subresource for w in writes if w.user_agent != agent} == {"status"}
        assert all(w.user == "fleet-admin" for w in writes)
    finally:
        writer.close()
        kube.close()
