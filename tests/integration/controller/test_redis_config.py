"""A redis.conf directive the Redis image does not know: redis-server refuses to start and the pods
crash-loop. The RedisCluster says so with redis-server's own lines (``RedisConfigRejected``, Stalled),
not as pods that are not Ready; fixing the directive makes it Ready.

Each pod's server is a real redis-server started with the redis.conf its pod mounts (``PodRedis``
with ``pod_config``), and its failure reaches the pod's status as a kubelet reports it for the
container's ``terminationMessagePolicy: FallbackToLogsOnError``.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from devfleet import fleet as devfleet
from syncer.controller.model import API_VERSION, KIND
from syncer.kube import ClusterClient, KubeObject
from tests.integration.controller.kit import condition, controller_running, install_crd, is_ready
from tests.integration.controller.podredis import PodRedis
from tests.integration.controller.rediskit import LOOPBACK_CLUSTER, controller_options
from tests.integration.topology.servers import redis_server_binary
from tests.support.waiting import eventually

pytestmark = pytest.mark.integration

TYPO = ("maxmemory-polcy", "allkeys-lru")


def what_redis_server_says(tmp_path: Path, line: str) -> list[str]:
    """redis-server's own lines about ``line`` in a redis.conf: the ``>>>`` line and the reason."""
    conf = tmp_path / "probe.conf"
    conf.write_text(line + "\n", encoding="utf-8")
    done = subprocess.run(
        [redis_server_binary(), str(conf), "--port", "0"],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert done.returncode != 0, done.stdout
    lines = [s.strip() for s in (done.stdout + done.stderr).splitlines() if s.strip()]
    [at] = [i for i, s in enumerate(lines) if s.startswith(">>>")]
    return lines[at : at + 2]


@pytest.fixture
def pods(
    loopback_fleet: devfleet.Fleet, tmp_path: Path, request: pytest.FixtureRequest
) -> Iterator[PodRedis]:
    kube = ClusterClient.from_kubeconfig(str(loopback_fleet.kubeconfig), LOOPBACK_CLUSTER)
    install_crd(kube)
    seed = f"{request.node.name}{os.getpid()}{time.time()}"
    namespace = "r-" + hashlib.sha1(seed.encode()).hexdigest()[:10]
    kube.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
    started = PodRedis(kube, namespace, tmp_path / "pods", persistence=False, pod_config=True).start()
    try:
        yield started
    finally:
        assert started.stop() == [], "redis-servers survived the test"
        kube.delete("v1", "Namespace", namespace)
        kube.close()


def test_an_unknown_directive_is_reported_with_redis_servers_own_lines(
    loopback_fleet: devfleet.Fleet, pods: PodRedis, tmp_path: Path
) -> None:
    kube, namespace = pods.kube, pods.namespace
    said = what_redis_server_says(tmp_path, " ".join(TYPO))
    assert said[0].startswith(">>> 'maxmemory-polcy"), said

    def apply(config: dict[str, str]) -> None:
        spec = {"version": "7.2", "shards": 1, "replicasPerShard": 0, "persistence": {"enabled": False}}
        body = {
            "apiVersion": API_VERSION,
            "kind": KIND,
            "metadata": {"name": "cache", "namespace": namespace},
        }
        kube.apply({**body, "spec": {**spec, "redisConfig": config}})

    def obj() -> KubeObject:
        return kube.get(API_VERSION, KIND, "cache", namespace)

    with controller_running(controller_options(loopback_fleet, namespace)):
        started = time.monotonic()
        apply({TYPO[0]: TYPO[1], "maxmemory": "64mb"})

        def rejected() -> KubeObject | None:
            found = obj()
            return found if condition(found, "Ready").get("reason") == "RedisConfigRejected" else None

        found = eventually("Ready=False for the rejected redis.conf", rejected, 60)
        print(f"RedisConfigRejected {time.monotonic() - started:.1f}s after the apply", flush=True)
        ready, stalled = condition(found, "Ready"), condition(found, "Stalled")
        assert ready["status"] == "False"
        assert (stalled["status"], stalled["reason"]) == ("True", "RedisConfigRejected")
        for line in said:
            assert line in ready["message"], (line, ready["message"])
        assert "spec.redisConfig.maxmemory-polcy" in ready["message"]
        assert f"pod {namespace}/cache-shard-0-0" in ready["message"]

        # The directive spelled right, the pod is replaced and the cluster becomes Ready.
        started = time.monotonic()
        apply({"maxmemory-policy": TYPO[1], "maxmemory": "64mb"})
        try:
            eventually("Ready=True once the directive is fixed", lambda: is_ready(obj()), 120)
            print(f"Ready {time.monotonic() - started:.1f}s after the fix", flush=True)
        except AssertionError as err:
            raise AssertionError(f"{err}; status: {obj().get('status')}") from None
        kube.delete(API_VERSION, KIND, "cache", namespace)
        eventually("deleted", lambda: not kube.list(API_VERSION, KIND, namespace=namespace).items, 60)
