"""Prometheus collectors of the controller, registered on a registry the caller owns."""

from __future__ import annotations

import contextlib

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram


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
            registry=registry,
        )
        self.ready = Gauge(
            "rediscluster_ready",
            "1 when the RedisCluster's Ready condition is True, else 0.",
            ["namespace", "name"],
            registry=registry,
        )

    def observe(self, phase: str, result: str, seconds: float) -> None:
        self.reconcile_total.labels(phase=phase, result=result).inc()
        self.reconcile_duration.observe(seconds)

    def set_ready(self, namespace: str, name: str, ready: bool) -> None:
        self.ready.labels(namespace=namespace, name=name).set(1.0 if ready else 0.0)

    def forget(self, namespace: str, name: str) -> None:
        with contextlib.suppress(KeyError):
            self.ready.remove(namespace, name)
