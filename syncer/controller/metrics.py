"""Prometheus collectors of the controller, registered on a registry the caller owns.

Label values are bounded: ``phase`` and ``result`` come from fixed sets, ``condition`` and ``state``
too; ``namespace``/``name`` give one set of series per RedisCluster, removed when it is deleted.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from syncer.controller.status import Condition

# From a reconcile that only reads (a few ms) to one that waits on a slot migration (a minute): a
# P95 falls between two close bounds wherever it lies.
RECONCILE_BUCKETS = (
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 20.0, 30.0, 45.0, 60.0, 120.0,
)  # fmt: skip

POD_STATES = ("ready", "unready", "missing")
"""``ready``: counted Ready by its StatefulSet; ``unready``: exists but not Ready; ``missing``: asked
for by the spec, not created (yet)."""


def pod_counts(status: Mapping[str, Any], desired: int) -> dict[str, int]:
    """The RedisCluster's pods by state, from the shards of the status the reconcile wrote."""
    shards = [s for s in status.get("shards") or () if isinstance(s, Mapping)]
    existing = sum(int(s.get("replicas") or 0) for s in shards)
    ready = sum(int(s.get("readyReplicas") or 0) for s in shards)
    return {"ready": ready, "unready": max(existing - ready, 0), "missing": max(desired - existing, 0)}


def condition_values(status: Mapping[str, Any]) -> dict[str, bool]:
    """Each kstatus condition of the status: True or not (absent counts as not)."""
    found = {
        str(c.get("type")): c.get("status") == "True"
        for c in status.get("conditions") or ()
        if isinstance(c, Mapping)
    }
    return {kind.value: found.get(kind.value, False) for kind in Condition}


class Metrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        self.reconcile_total = Counter(
            "rediscluster_reconcile_total",
            "Reconciles of RedisCluster objects by phase and result.",
            ["phase", "result"],
            registry=registry,
        )
        self.reconcile_duration = Histogram(
            "rediscluster_reconcile_duration_seconds",
            "Time one reconcile of a RedisCluster took.",
            buckets=RECONCILE_BUCKETS,
            registry=registry,
        )
        self.ready = Gauge(
            "rediscluster_ready",
            "1 when the RedisCluster's Ready condition is True, else 0.",
            ["namespace", "name"],
            registry=registry,
        )
        self.conditions = Gauge(
            "rediscluster_status",
            "1 when the RedisCluster's condition (Ready, Reconciling, Stalled) is True, else 0.",
            ["namespace", "name", "condition"],
            registry=registry,
        )
        self.pods = Gauge(
            "rediscluster_pods",
            "The RedisCluster's pods by state: ready, unready, missing.",
            ["namespace", "name", "state"],
            registry=registry,
        )

    def observe(self, phase: str, result: str, seconds: float) -> None:
        self.reconcile_total.labels(phase=phase, result=result).inc()
        self.reconcile_duration.observe(seconds)

    def set_status(self, namespace: str, name: str, status: Mapping[str, Any], desired_pods: int) -> None:
        """The gauges of one RedisCluster from the status its reconcile wrote."""
        found = condition_values(status)
        self.ready.labels(namespace=namespace, name=name).set(1.0 if found[Condition.READY.value] else 0.0)
        for condition, true in found.items():
            gauge = self.conditions.labels(namespace=namespace, name=name, condition=condition)
            gauge.set(1.0 if true else 0.0)
        for state, count in pod_counts(status, desired_pods).items():
            self.pods.labels(namespace=namespace, name=name, state=state).set(count)

    def forget(self, namespace: str, name: str) -> None:
        """Remove every series of a RedisCluster that is gone."""
        with contextlib.suppress(KeyError):
            self.ready.remove(namespace, name)
        for condition in Condition:
            with contextlib.suppress(KeyError):
                self.conditions.remove(namespace, name, condition.value)
        for state in POD_STATES:
            with contextlib.suppress(KeyError):
                self.pods.remove(namespace, name, state)
