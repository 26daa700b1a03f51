"""What a client of the RedisCluster's client Service is offered, read again and again while a test
changes the cluster: the pods its selector matches that are Ready, with their IPs and uids.

That is the rule of Kubernetes' EndpointSlice controller (a pod is an endpoint of a Service when the
Service's selector matches its labels, it has an IP and is not being deleted; ready when its Ready
condition is True), applied here to the live Service and pods at each reading. The EndpointSlices
themselves stay empty on the loopback fleet: the apiserver refuses loopback addresses as endpoints,
and every pod there has one, so that a real redis-server can serve it."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from syncer.kube import ClusterClient


@dataclass(frozen=True)
class Endpoint:
    pod: str
    uid: str
    ip: str


def _ready(pod: dict[str, Any]) -> bool:
    conditions = (pod.get("status") or {}).get("conditions") or ()
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def ready_endpoints(kube: ClusterClient, namespace: str, service: str) -> frozenset[Endpoint]:
    """The endpoints a client of ``service`` may be sent to: the Ready pods its selector matches."""
    selector = kube.get("v1", "Service", service, namespace)["spec"].get("selector") or {}
    if not selector:
        return frozenset()
    labels = ",".join(f"{key}={value}" for key, value in sorted(selector.items()))
    found: set[Endpoint] = set()
    for pod in kube.list("v1", "Pod", namespace=namespace, label_selector=labels).items:
        meta, ip = pod["metadata"], (pod.get("status") or {}).get("podIP")
        if ip and not meta.get("deletionTimestamp") and _ready(pod):
            found.add(Endpoint(str(meta["name"]), str(meta["uid"]), str(ip)))
    return frozenset(found)


@dataclass
class EndpointWatch:
    """Reads the ready endpoints (the Service, then its pods) every ``every`` seconds in a thread
    and hands each reading to ``look``, which returns what is wrong with it ("" when nothing is);
    ``stop`` ends the thread and returns every complaint with the time it was made, after the
    start."""

    kube: ClusterClient
    namespace: str
    service: str
    look: Callable[[frozenset[Endpoint]], str]
    every: float = 0.05
    readings: int = 0
    complaints: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> EndpointWatch:
        started = time.monotonic()

        def run() -> None:
            while not self._stop.is_set():
                try:
                    found = ready_endpoints(self.kube, self.namespace, self.service)
                    complaint = self.look(found)
                except Exception as err:  # the watch must outlive an apiserver hiccup
                    self.errors.append(f"{type(err).__name__}: {err}"[:300])
                else:
                    self.readings += 1
                    if complaint:
                        self.complaints.append(f"{time.monotonic() - started:.2f}s: {complaint}")
                self._stop.wait(self.every)

        self._thread = threading.Thread(target=run, name="endpoint-watch", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> list[str]:
        """The complaints so far; the thread ends at the first call (later calls only answer)."""
        if self._stop.is_set():
            return self.complaints
        self._stop.set()
        if self._thread is not None:
            self._thread.join(30)
        print(f"endpoint watch: {self.readings} readings, {len(self.errors)} failed reads", flush=True)
        assert self.readings > 0, f"the endpoints were never read: {self.errors[:3]}"
        return self.complaints
