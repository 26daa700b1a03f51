"""``syncer-fleet up --redis``: a real redis-server behind every Redis pod of the fleet and the
exporter sidecar's redis_exporter beside it, scraped by the fleet's Prometheus with a ``cluster``
label; ``down`` stops all of it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from devfleet import fleet as devfleet
from devfleet import procs, prometheus, redispods
from syncer.controller.model import API_VERSION, KIND
from syncer.kube import ClusterClient
from tests.integration.controller.kit import controller_running, install_crd, is_ready
from tests.integration.controller.rediskit import controller_options
from tests.support.waiting import eventually

CLUSTER = "redis-fleet"
NAME = "shop"
SHARDS = 3
PASSWORD = "s3cret-fleet"


def _children(pid: int) -> list[int]:
    try:
        text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    except OSError:
        return []
    return [int(p) for p in text.split()]


def _pod_ip(kube: ClusterClient, namespace: str) -> str:
    [pod, *_] = kube.list("v1", "Pod", namespace=namespace).items
    return str(pod["status"]["podIP"])


def _alive(pid: int) -> bool:
    return procs._start_ticks(pid) is not None


@pytest.fixture(scope="module")
def redis_fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[devfleet.Fleet]:
    root = tmp_path_factory.mktemp("redis-fleet") / "state"
    options = devfleet.UpOptions(clusters=(CLUSTER,), redis=True)
    started = devfleet.up(root, options, say=lambda _: None)
    try:
        yield started
    finally:
        assert devfleet.down(root, say=lambda _: None) == []


def test_prometheus_sees_a_real_redis_behind_every_pod_with_the_fleet_s_cluster_label(
    redis_fleet: devfleet.Fleet,
) -> None:
    assert redis_fleet.pod_range is not None, "--redis gives pods loopback IPs of the fleet's own"
    [stand_in] = [p for p in redis_fleet.processes if p.name == redispods.NAME]
    local = prometheus.start(redis_fleet.root, say=lambda _: None)
    kube = ClusterClient.from_kubeconfig(str(redis_fleet.kubeconfig), CLUSTER)
    install_crd(kube)
    namespace = "redis-pods"
    kube.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
    secret = {"name": "shop-auth", "namespace": namespace}
    kube.apply(
        {"apiVersion": "v1", "kind": "Secret", "metadata": secret, "stringData": {"password": PASSWORD}}
    )
    options = controller_options(redis_fleet, namespace, CLUSTER)
    spec = {
        "version": "7.2",
        "shards": SHARDS,
        "replicasPerShard": 0,
        "persistence": {"enabled": False},
        "exporter": {"enabled": True},
        # The servers require the Secret's password, and each exporter is given it as the sidecar is.
        "auth": {"secretRef": {"name": "shop-auth", "key": "password"}},
    }
    body = {"apiVersion": API_VERSION, "kind": KIND, "metadata": {"name": NAME, "namespace": namespace}}
    try:
        with controller_running(options):
            kube.apply({**body, "spec": spec})
            # Ready with topology on: the controller formed a Redis cluster of the pods' real servers.
            eventually("Ready", lambda: is_ready(kube.get(API_VERSION, KIND, NAME, namespace)), 300)
            up = f'redis_up{{cluster="{CLUSTER}", rediscluster="{NAME}", namespace="{namespace}"}} == 1'
            eventually(
                f"Prometheus to see {SHARDS} redis_exporters answering",
                lambda: local.query(f"count({up})") == SHARDS,
                120,
            )
            state = f'min(redis_cluster_state{{cluster="{CLUSTER}", rediscluster="{NAME}"}})'
            eventually("every server's cluster_state:ok", lambda: local.query(state) == 1.0, 60)
            with redis.Redis(host=_pod_ip(kube, namespace), port=6379, password=PASSWORD) as conn:
                assert conn.ping()
            with (
                redis.Redis(host=_pod_ip(kube, namespace), port=6379) as conn,
                pytest.raises(redis.AuthenticationError),
            ):
                conn.ping()
            servers = _children(stand_in.pid)
            assert len(servers) == 2 * SHARDS, f"a redis-server and an exporter per pod: {servers}"
    finally:
        kube.close()
    # down stops the stand-in, and with it every server and exporter it ran, and their targets.
    targets = prometheus.targets_dir(redis_fleet.root) / f"{redispods.job(CLUSTER)}.json"
    assert targets.exists()
    assert devfleet.down(redis_fleet.root, say=lambda _: None) == []
    assert not [pid for pid in servers if _alive(pid)], "redis-servers or exporters outlived down"
