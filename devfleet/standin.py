"""The status stand-in of light clusters. NOT a controller.

Light clusters run no controller manager, scheduler, kwok or RedisCluster controller, so nothing would
ever make a RedisCluster Ready there. Where a test or benchmark needs rollout waves to pass their
health gate on light clusters, ``ReadyStatusStandIn`` writes ``observedGeneration`` and a
``Ready=True`` condition (reason ``StatusStandIn``) onto every RedisCluster it sees, for its current
generation, through the status subresource. It creates no pods and checks nothing: Ready from it
means "the stand-in saw this generation", never "Redis runs". Runs that need real readiness use full
clusters and the real controller.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import urllib3
from kubernetes import client, watch
from kubernetes.client.exceptions import ApiException

from devfleet.nodes import admin_client

log = logging.getLogger(__name__)

GROUP, VERSION, PLURAL = "redis.syncer.dev", "v1alpha1", "redisclusters"
FIELD_MANAGER = "devfleet-status-stand-in"
REASON = "StatusStandIn"
MESSAGE = "marked Ready by the devfleet status stand-in of a light cluster; no pods or Redis run here"
# Seconds each watch lasts before it is opened again (also how long stopping may take).
WATCH_SECONDS = 5


def _needs_mark(obj: Mapping[str, Any]) -> bool:
    meta = obj.get("metadata") or {}
    status = obj.get("status") or {}
    if meta.get("deletionTimestamp"):
        return False
    ready = [c for c in status.get("conditions") or [] if c.get("type") == "Ready"]
    return status.get("observedGeneration") != meta.get("generation") or not (
        ready and ready[0].get("status") == "True"
    )


def ready_status(generation: int) -> dict[str, Any]:
    """The status the stand-in writes for ``generation``."""
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    condition = {
        "type": "Ready",
        "status": "True",
        "reason": REASON,
        "message": MESSAGE,
        "lastTransitionTime": now,
        "observedGeneration": generation,
    }
    return {"status": {"observedGeneration": generation, "conditions": [condition]}}


class ReadyStatusStandIn:
    """Marks the RedisClusters of the given clusters Ready for their generation (see the module
    docstring: a stand-in for the missing controller, not one). One watching thread per cluster;
    ``marked`` counts the status writes per cluster."""

    def __init__(self, kubeconfig: Path, clusters: Sequence[str], label_selector: str = "") -> None:
        self.kubeconfig = kubeconfig
        self.clusters = tuple(clusters)
        self.label_selector = label_selector
        self.marked = dict.fromkeys(self.clusters, 0)
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []

    def start(self) -> ReadyStatusStandIn:
        for name in self.clusters:
            thread = threading.Thread(target=self._run, args=(name,), name=f"stand-in-{name}", daemon=True)
            thread.start()
            self._threads.append(thread)
        return self

    def stop(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=WATCH_SECONDS + 10)
        self._threads.clear()

    def __enter__(self) -> ReadyStatusStandIn:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def total(self) -> int:
        with self._lock:
            return sum(self.marked.values())

    def _mark(self, custom: client.CustomObjectsApi, cluster: str, obj: Mapping[str, Any]) -> None:
        if not _needs_mark(obj):
            return
        meta = obj["metadata"]
        try:
            custom.patch_namespaced_custom_object_status(
                GROUP,
                VERSION,
                meta["namespace"],
                PLURAL,
                meta["name"],
                ready_status(int(meta["generation"])),
                field_manager=FIELD_MANAGER,
                _content_type="application/merge-patch+json",
            )
        except ApiException as err:
            if err.status not in {404, 409}:  # gone, or changed meanwhile (the watch brings it again)
                raise
            return
        with self._lock:
            self.marked[cluster] += 1

    def _events(self, custom: client.CustomObjectsApi) -> Iterator[tuple[str, dict[str, Any]]]:
        """A list, then watches from where it left off (ApiException 410 when that is too old)."""
        listed: dict[str, Any] = custom.list_cluster_custom_object(  # type: ignore[assignment]
            GROUP, VERSION, PLURAL, label_selector=self.label_selector
        )
        for item in listed.get("items") or []:
            yield "ADDED", item
        version = listed["metadata"]["resourceVersion"]
        while not self._stop.is_set():
            stream = watch.Watch().stream(  # type: ignore[no-untyped-call]
                custom.list_cluster_custom_object,
                GROUP,
                VERSION,
                PLURAL,
                label_selector=self.label_selector,
                resource_version=version,
                timeout_seconds=WATCH_SECONDS,
                allow_watch_bookmarks=True,
            )
            for event in stream:
                obj = event["object"]
                version = (obj.get("metadata") or {}).get("resourceVersion") or version
                yield event["type"], obj

    def _run(self, cluster: str) -> None:
        with admin_client(self.kubeconfig, cluster) as api_client:
            custom = client.CustomObjectsApi(api_client)
            while not self._stop.is_set():
                try:
                    for kind, obj in self._events(custom):
                        if self._stop.is_set():
                            return
                        if kind in {"ADDED", "MODIFIED"}:
                            self._mark(custom, cluster, obj)
                except ApiException as err:
                    # 404: the CRD is not installed yet; 410: the watch is too old, list again.
                    if err.status not in {404, 410}:
                        log.warning("status stand-in on %s: %s", cluster, err)
                    self._stop.wait(0.5)
                except (urllib3.exceptions.HTTPError, OSError) as err:
                    log.warning("status stand-in on %s: apiserver unreachable: %s", cluster, err)
                    self._stop.wait(1.0)


@contextmanager
def status_stand_in(kubeconfig: Path, clusters: Sequence[str]) -> Iterator[ReadyStatusStandIn]:
    """Runs a ``ReadyStatusStandIn`` for ``clusters`` while the block runs."""
    stand_in = ReadyStatusStandIn(kubeconfig, clusters).start()
    try:
        yield stand_in
    finally:
        stand_in.stop()
