"""Helpers for controller tests: the CRD on the cluster, a controller in a thread, a recording watch."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, TypeVar

from prometheus_client import CollectorRegistry

from devfleet.access import install_redis_crd
from syncer.controller.model import API_VERSION, KIND, ControllerOptions
from syncer.controller.runner import run_controller
from syncer.errors import KubeError
from syncer.kube import ClusterClient, KubeObject

T = TypeVar("T")
CRD_API = "apiextensions.k8s.io/v1"


def install_crd(kube: ClusterClient) -> None:
    """Apply the RedisCluster CRD (idempotent: server-side apply) and wait until it is served."""
    install_redis_crd(kube, field_manager="syncer-tests")


def condition(obj: KubeObject, kind: str) -> dict[str, Any]:
    for item in (obj.get("status") or {}).get("conditions") or ():
        if item["type"] == kind:
            return dict(item)
    return {}


def is_ready(obj: KubeObject) -> bool:
    meta, status = obj["metadata"], obj.get("status") or {}
    return (
        condition(obj, "Ready").get("status") == "True"
        and status.get("observedGeneration") == meta["generation"]
    )


def redis_cluster(name: str, namespace: str, **spec: Any) -> dict[str, Any]:
    body_spec: dict[str, Any] = {"version": "7.2", "persistence": {"enabled": False}}
    body_spec.update(spec)
    return {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "metadata": {"name": name, "namespace": namespace},
        "spec": body_spec,
    }


@dataclass
class RunningController:
    options: ControllerOptions
    registry: CollectorRegistry
    stop: threading.Event = field(default_factory=threading.Event)
    thread: threading.Thread | None = None
    errors: list[BaseException] = field(default_factory=list)

    def metric(self, name: str, labels: dict[str, str]) -> float | None:
        return self.registry.get_sample_value(name, labels)


@contextmanager
def controller_running(options: ControllerOptions) -> Iterator[RunningController]:
    """The controller in a background thread of the test process, stopped and joined on exit."""
    running = RunningController(options, CollectorRegistry())

    def target() -> None:
        try:
            run_controller(options, running.stop, running.registry)
        except BaseException as err:
            running.errors.append(err)
            raise

    running.thread = threading.Thread(target=target, name="controller-under-test", daemon=True)
    running.thread.start()
    try:
        yield running
    finally:
        running.stop.set()
        running.thread.join(options.watch_timeout_seconds + 20)
        assert not running.thread.is_alive(), "the controller did not stop"
        assert not running.errors, running.errors


@dataclass
class Recorder:
    """Every version of the objects of one kind in a namespace, as a watch delivered them, and when
    each arrived (``time.monotonic``; the listed ones at the start)."""

    seen: list[KubeObject] = field(default_factory=list)
    arrived: list[float] = field(default_factory=list)
    stop: threading.Event = field(default_factory=threading.Event)


@contextmanager
def recording(kube: ClusterClient, api_version: str, kind: str, namespace: str) -> Iterator[Recorder]:
    """Record from a watch (resumed from the listed resource version, so nothing is missed between
    two watches) until the block ends; the watching thread is joined then."""
    recorder = Recorder()
    listed = kube.list(api_version, kind, namespace=namespace)
    recorder.seen.extend(listed.items)
    recorder.arrived.extend(time.monotonic() for _ in listed.items)

    def loop() -> None:
        version = listed.resource_version
        while not recorder.stop.is_set():
            try:
                for event in kube.watch(
                    api_version, kind, namespace=namespace, resource_version=version, timeout_seconds=2
                ):
                    version = event.object["metadata"].get("resourceVersion", version)
                    if event.type in ("ADDED", "MODIFIED"):
                        recorder.arrived.append(time.monotonic())
                        recorder.seen.append(event.object)
            except KubeError:
                recorder.stop.wait(0.5)

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    try:
        yield recorder
    finally:
        recorder.stop.set()
        thread.join(10)
        assert not thread.is_alive(), "the recording watch did not stop"
