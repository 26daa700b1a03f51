"""What the analysis tests share: the fleet's real Prometheus and exporters the tests run.

An ``Exporter`` is a real HTTP endpoint (prometheus_client's server) whose gauges a test sets; the
fleet's Prometheus scrapes it like any target, so a query answers with what was really scraped.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from prometheus_client import CollectorRegistry, Gauge, start_http_server

from devfleet.prometheus import LocalPrometheus


@dataclass
class Exporter:
    """A gauge ``name`` with a ``cluster`` label, served on ``address`` (``host:port``)."""

    gauge: Gauge
    address: str

    def set(self, cluster: str, value: float) -> None:
        self.gauge.labels(cluster=cluster).set(value)


@contextmanager
def exporter(prometheus: LocalPrometheus, job: str, metric: str) -> Iterator[Exporter]:
    """An exporter of ``metric`` scraped by ``prometheus`` as ``job`` until the block ends."""
    registry = CollectorRegistry()
    gauge = Gauge(metric, f"{metric}, set by the test", ["cluster"], registry=registry)
    server, thread = start_http_server(0, addr="127.0.0.1", registry=registry)
    address = f"127.0.0.1:{server.server_address[1]}"
    prometheus.scrape(job, [address])
    try:
        yield Exporter(gauge, address)
    finally:
        prometheus.scrape(job, [])
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
