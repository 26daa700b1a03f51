"""Which trace a reconcile belongs to: the agent's rollout that applied the object, or its own.

Owns: reading the W3C traceparent the agent wrote on a RedisCluster it applied
(``syncer.domain.applied.TRACEPARENT_ANNOTATION``) and running the reconciles of that object as
spans of that trace until the object is Ready under it (its children's writes and the wait for its
pods to become Ready included: ``controller.pods.ready``, from the first reconcile that found them
not Ready to the one that found them Ready). A reconcile of an object without the annotation, or one
after the object was Ready under its traceparent (a resync, a repair), is the root of a trace of its
own. What is remembered is per process: a controller that starts again joins an unfinished rollout's
trace again.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from syncer.domain.applied import TRACEPARENT_ANNOTATION
from syncer.tracing import Span, since, span


@dataclass
class Reconciling:
    """The span of one reconcile; ``done`` says how it ended."""

    span: Span
    ready: bool = False

    def done(self, ready: bool, phase: str, result: str) -> None:
        self.ready = ready
        self.span.set("syncer.phase", phase)
        self.span.set("syncer.result", result)
        if result != "success":
            self.span.fail(f"{phase}: {result}")


class ReconcileTraces:
    """Per object: the traceparent whose rollout ended Ready, and since when one waits for its pods."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._finished: dict[str, str] = {}
        self._waiting: dict[str, tuple[str, int]] = {}

    @contextmanager
    def reconcile(self, obj: Mapping[str, Any], cluster: str = "") -> Iterator[Reconciling]:
        metadata = obj.get("metadata") or {}
        key = f"{metadata.get('namespace', '')}/{metadata.get('name', '')}"
        parent = str((metadata.get("annotations") or {}).get(TRACEPARENT_ANNOTATION) or "")
        with self._lock:
            if parent and self._finished.get(key) == parent:
                parent = ""  # that rollout is over: this reconcile is one of its own
        attributes: dict[str, str | int] = {
            "k8s.namespace.name": str(metadata.get("namespace", "")),
            "syncer.rediscluster": str(metadata.get("name", "")),
            "k8s.generation": int(metadata.get("generation") or 0),
        }
        if cluster:
            attributes["syncer.cluster"] = cluster
        with span("controller.reconcile", attributes, parent, root=not parent) as recorded:
            reconciling = Reconciling(recorded)
            yield reconciling
            if parent:
                self._after(key, parent, reconciling.ready)

    def _after(self, key: str, parent: str, ready: bool) -> None:
        with self._lock:
            waiting = self._waiting.get(key)
            if not ready:
                if waiting is None or waiting[0] != parent:
                    self._waiting[key] = (parent, time.time_ns())
                return
            self._finished[key] = parent
            self._waiting.pop(key, None)
        if waiting is not None and waiting[0] == parent:
            since("controller.pods.ready", waiting[1])
