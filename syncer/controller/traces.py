"""Which trace a reconcile belongs to: the agent's rollout that applied the object, or its own.

Owns: reading the W3C traceparent the agent wrote on a RedisCluster it applied
(``syncer.domain.applied.TRACEPARENT_ANNOTATION``) and running the reconciles of that object as
spans of that trace until the object is Ready under it (its children's writes and the wait for its
pods to become Ready included: ``controller.pods.ready``, from the first reconcile that found them
not Ready to the one that found them Ready). A reconcile of an object without the annotation, or one
after the object was Ready under its traceparent (a resync, a repair), is the root of a trace of its
own. What is remembered is per process: a controller that starts again joins an unfinished rollout's
trace again. A look at the Redis topology is a span of the reconcile with its formation steps as
events (``topology_look``).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from syncer.controller.formation import FormationStep
from syncer.domain.applied import TRACEPARENT_ANNOTATION
from syncer.tracing import Span, since, span

if TYPE_CHECKING:  # the topology modules load only with topology on
    from syncer.controller.model import ClusterSpec
    from syncer.controller.topology_link import TopologyPass
    from syncer.controller.topology_model import TopologyOptions


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


def topology_look(
    spec: ClusterSpec, access: TopologyOptions, look: Callable[[TopologyOptions], TopologyPass]
) -> TopologyPass:
    """``look`` at the Redis cluster of ``spec`` (``topology_link.observe_and_converge`` or
    ``health_probe.look``) as the span ``controller.topology``, a child of the reconcile's: each
    formation step told (``access.told``, still told) is an event ``formation`` of it with
    ``syncer.formation_step``; its ``syncer.result`` is the verdict's reason (``healthy`` when
    healthy), and a look that failed (``TopologyError``) is status ERROR with its message."""
    attributes: dict[str, str | int] = {
        "k8s.namespace.name": spec.namespace,
        "syncer.rediscluster": spec.name,
        "syncer.shards": spec.shards,
    }
    with span("controller.topology", attributes) as looking:

        def told(step: FormationStep) -> None:
            looking.event("formation", {"syncer.formation_step": step.value})
            access.told(step)

        found = look(replace(access, told=told))
        verdict = found.verdict
        looking.set("syncer.result", "healthy" if verdict.healthy else verdict.reason)
        if verdict.reason == "TopologyError":
            looking.fail(verdict.message)
        return found
