"""The controller forms and watches a real Redis Cluster: the pods of a RedisCluster are given
loopback IPs by kwok (a fleet started with a pod CIDR inside 127.0.0.0/8), and the test runs a real
redis-server on each pod's IP, so the controller's topology path talks to real Redis exactly as it
would to real pods. Killing a master shows up in the RedisCluster's status."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from devfleet import fleet as devfleet
from syncer.controller.model import ControllerOptions
from syncer.controller.topology import RedisNode
from syncer.kube import ClusterClient
from tests.integration.controller.kit import (
    API_VERSION,
    KIND,
    condition,
    controller_running,
    install_crd,
    is_ready,
    redis_cluster,
)
from tests.integration.topology.servers import RedisServers, client
from tests.support.waiting import eventually

pytestmark = pytest.mark.integration

CLUSTER = "topo"
SHARDS = 3


@pytest.fixture
def kube(loopback_fleet: devfleet.Fleet) -> Iterator[ClusterClient]:
    api = ClusterClient.from_kubeconfig(str(loopback_fleet.kubeconfig), CLUSTER)
    install_crd(api)
    api.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "topo"}})
    yield api
    api.close()


def pod_nodes(kube: ClusterClient, fleet: devfleet.Fleet) -> list[RedisNode] | None:
    pods = kube.list("v1", "Pod", namespace="topo").items
    ips = [(p.get("status") or {}).get("podIP") for p in pods]
    if len(pods) != SHARDS * 2 or not all(ips):
        return None
    assert fleet.pod_range is not None
    assert all(fleet.pod_range.contains(str(ip)) for ip in ips), ips
    return [RedisNode(str(ip), 6379) for ip in ips]


def role(node: RedisNode) -> str:
    with client(node) as conn:
        return str(conn.info("replication")["role"])


def live(kube: ClusterClient) -> dict[str, Any]:
    return kube.get(API_VERSION, KIND, "cache", "topo")


def test_the_controller_forms_the_redis_cluster_and_reports_a_killed_master(
    loopback_fleet: devfleet.Fleet, kube: ClusterClient, tmp_path: Path
) -> None:
    servers = RedisServers(tmp_path)
    options = ControllerOptions(
        kubeconfig=str(loopback_fleet.kubeconfig),
        context=CLUSTER,
        watch_namespace="topo",
        leader_elect=False,
        topology=True,
        poll_seconds=1.0,
        watch_timeout_seconds=5,
    )
    try:
        with controller_running(options):
            kube.apply(redis_cluster("cache", "topo", shards=SHARDS, replicasPerShard=1))
            nodes = eventually("six pods with loopback IPs", lambda: pod_nodes(kube, loopback_fleet), 60)
            servers.start_at(nodes)

            formed = eventually(
                "Ready with the Redis cluster formed", lambda: is_ready(live(kube)) or None, 90
            )
            assert formed
            with client(nodes[0]) as conn:
                info = conn.execute_command("CLUSTER", "INFO")
            assert "cluster_state:ok" in info
            assert "cluster_slots_assigned:16384" in info
            masters = [n for n in nodes if role(n) == "master"]
            assert len(masters) == SHARDS

            servers.kill(masters[0])

            def reports_it() -> dict[str, Any] | None:
                ready = condition(live(kube), "Ready")
                return (
                    ready
                    if ready.get("status") == "False" and str(masters[0].host) in ready["message"]
                    else None
                )

            ready = eventually("Ready=False naming the killed master", reports_it, 60)
            # A Redis-level reason, never the pod-level one: the health watch's (the master does not
            # answer, or the cluster says fail) or the reconcile's own look at the topology (which
            # may reach the node first and find it refusing connections, or flagged by its peers).
            redis_level = {
                "MasterUnreachable",
                "ClusterStateFail",
                "NodesUnreachable",
                "NodesFailed",
                "SlotsUncovered",
                "TopologyUnhealthy",
            }
            assert ready["reason"] in redis_level, ready
            kube.delete(API_VERSION, KIND, "cache", "topo")
            eventually(
                "the RedisCluster to be gone",
                lambda: not kube.list(API_VERSION, KIND, namespace="topo").items,
                60,
            )
    finally:
        assert servers.stop() == []
