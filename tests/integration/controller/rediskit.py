"""A RedisCluster on the loopback fleet with a real redis-server per pod and the controller watching
it, for tests that change the cluster while a client keeps writing (the ``redis_scene`` fixture of
this folder's conftest starts one)."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import redis

from devfleet import fleet as devfleet
from syncer.controller.model import API_VERSION, KIND, ControllerOptions
from syncer.controller.topology import RedisNode, parse_cluster_nodes
from syncer.kube import ClusterClient, KubeObject
from tests.integration.controller.kit import condition, controller_running, install_crd, is_ready
from tests.integration.controller.podredis import PodRedis
from tests.integration.topology.servers import client
from tests.integration.topology.traffic import Traffic, TrafficResult
from tests.support.waiting import eventually

NAME = "cache"
LOOPBACK_CLUSTER = "topo"


def controller_options(
    fleet: devfleet.Fleet, namespace: str, context: str = LOOPBACK_CLUSTER
) -> ControllerOptions:
    """A controller with topology on, watching ``namespace`` of the fleet's ``context``, at the
    tests' quick intervals."""
    return ControllerOptions(
        kubeconfig=str(fleet.kubeconfig),
        context=context,
        watch_namespace=namespace,
        leader_elect=False,
        topology=True,
        poll_seconds=1.0,
        topology_interval=1.0,
        topology_timeout=1.0,
        topology_settle_seconds=10.0,
        watch_timeout_seconds=5,
        resync_seconds=30.0,
    )


@dataclass
class Scene:
    kube: ClusterClient
    namespace: str
    pods: PodRedis
    spec: dict[str, Any]

    def apply(self, **changes: Any) -> None:
        self.spec.update(changes)
        body = {
            "apiVersion": API_VERSION,
            "kind": KIND,
            "metadata": {"name": NAME, "namespace": self.namespace},
            "spec": self.spec,
        }
        self.kube.apply(body)

    def obj(self) -> KubeObject:
        return self.kube.get(API_VERSION, KIND, NAME, self.namespace)

    def wait_ready(self, timeout: float = 600.0) -> KubeObject:
        def ready() -> KubeObject | None:
            found = self.obj()
            return found if is_ready(found) else None

        try:
            return eventually("Ready=True", ready, timeout)
        except AssertionError as err:
            status = self.obj().get("status") or {}
            raise AssertionError(f"{err}; Ready: {self.ready()}; status: {status}") from None

    def ready(self) -> dict[str, Any]:
        return condition(self.obj(), "Ready")

    def nodes(self) -> list[RedisNode]:
        return self.pods.answering()

    def cluster_nodes(self) -> list[Any]:
        """CLUSTER NODES as one answering member sees it."""
        for node in self.nodes():
            try:
                with client(node) as conn:
                    text = conn.execute_command("CLUSTER", "NODES")
            except redis.RedisError:
                continue
            return list(parse_cluster_nodes(text))
        raise AssertionError("no Redis server answers")

    def views(self) -> list[list[Any]]:
        """CLUSTER NODES as each answering member sees it."""
        found = []
        for node in self.nodes():
            try:
                with client(node) as conn:
                    found.append(list(parse_cluster_nodes(conn.execute_command("CLUSTER", "NODES"))))
            except redis.RedisError:
                continue
        return found

    def myselves(self) -> list[Any]:
        """Each answering server's own CLUSTER NODES line (the one with its open slots)."""
        found = []
        for node in self.nodes():
            try:
                with client(node) as conn:
                    entries = parse_cluster_nodes(conn.execute_command("CLUSTER", "NODES"))
            except redis.RedisError:
                continue
            found.extend(e for e in entries if e.is_myself)
        return found

    def masters(self) -> dict[str, int]:
        """Master address -> slots served, as seen from the cluster."""
        return {e.name: e.slot_count for e in self.cluster_nodes() if e.is_master and e.slot_count}

    def traffic(self, **options: Any) -> Traffic:
        return Traffic(self.nodes(), **options).start()

    def change_while_writing(
        self, what: str, *, bulk: int, durable: bool = False, timeout: float = 600.0, **changes: Any
    ) -> tuple[KubeObject, TrafficResult]:
        """Apply ``changes`` to the spec while a client writes (``bulk`` keys preloaded; ``durable``:
        acknowledged once a replica has them), wait until Ready, then stop the client and ``check``
        that nothing was lost. The RedisCluster as it became Ready, and the client's figures."""
        traffic = self.traffic(bulk=bulk, durable=durable)
        self.apply(**changes)
        obj = self.wait_ready(timeout)
        return obj, check(traffic.stop(self.nodes()), what)

    def statefulsets(self) -> list[str]:
        items = self.kube.list("apps/v1", "StatefulSet", namespace=self.namespace).items
        return sorted(s["metadata"]["name"] for s in items)

    def events(self, reason: str) -> list[str]:
        items = self.kube.list("v1", "Event", namespace=self.namespace).items
        return [str(e.get("message")) for e in items if e.get("reason") == reason]


SceneStarter = Callable[..., AbstractContextManager[Scene]]
"""What the ``redis_scene`` fixture gives a test: ``with redis_scene(persistence=..., **spec) as s``."""


def check(result: TrafficResult, what: str) -> TrafficResult:
    """Print the figures of one operation and assert nothing was lost."""
    print(f"{what}: {result.summary()}", flush=True)
    assert result.lost == (), f"{what}: {len(result.lost)} keys lost, e.g. {result.lost[:5]}"
    assert result.stale_reads == 0, f"{what}: stale reads"
    assert result.writes > 0, f"{what}: the client never wrote"
    return result


@contextmanager
def scene(
    fleet: devfleet.Fleet,
    tmp_path: Path,
    test: str,
    *,
    persistence: bool,
    controller: bool = True,
    exporter: bool = False,
    pod_config: bool = False,
) -> Iterator[Scene]:
    """A namespace with a RedisCluster's pods backed by redis-servers; the controller runs in a thread
    (unless ``controller`` is False: the test runs its own); with ``exporter`` a redis_exporter
    measures the servers (``s.pods.exporter``); with ``pod_config`` each server reads the redis.conf
    its pod mounts (``PodRedis``)."""
    kube = ClusterClient.from_kubeconfig(str(fleet.kubeconfig), LOOPBACK_CLUSTER)
    install_crd(kube)
    namespace = "r-" + hashlib.sha1(f"{test}{os.getpid()}{time.time()}".encode()).hexdigest()[:10]
    kube.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
    pods = PodRedis(kube, namespace, tmp_path / "pods", persistence=persistence, pod_config=pod_config)
    pods.start(exporter=exporter)
    spec: dict[str, Any] = {"version": "7.2", "persistence": {"enabled": persistence}}
    made = Scene(kube, namespace, pods, spec)
    try:
        if controller:
            with controller_running(controller_options(fleet, namespace)):
                yield made
                _delete(made)
        else:
            yield made
    finally:
        assert pods.stop() == [], "redis-servers survived the test"
        try:
            kube.delete("v1", "Namespace", namespace)
        finally:
            kube.close()


def _delete(made: Scene) -> None:
    made.kube.delete(API_VERSION, KIND, NAME, made.namespace)
    eventually("deleted", lambda: not made.kube.list(API_VERSION, KIND, namespace=made.namespace).items, 60)


@contextmanager
def controller_process(
    fleet: devfleet.Fleet, namespace: str, log: Path, lease: Sequence[str] = (), metrics_port: int = 0
) -> Iterator[subprocess.Popen[bytes]]:
    """``syncer controller`` as its own process (so a test can SIGKILL or freeze it), stopped at exit;
    with ``lease`` (the Lease options) it elects a leader, else it leads alone; it serves /metrics on
    ``metrics_port`` (0: not at all)."""
    electing = ["--leader-elect", *lease] if lease else ["--no-leader-elect"]
    argv = [
        sys.executable, "-m", "syncer", "controller",
        "--kubeconfig", str(fleet.kubeconfig), "--context", LOOPBACK_CLUSTER,
        "--watch-namespace", namespace, *electing, "--topology",
        "--topology-interval", "1", "--topology-timeout", "1", "--metrics-port", str(metrics_port),
    ]  # fmt: skip
    with log.open("ab") as out:
        process = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    try:
        yield process
    finally:
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(10)
