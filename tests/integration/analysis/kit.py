"""What the analysis tests share: the fleet's real Prometheus and exporters the tests run.

An ``Exporter`` is a real HTTP endpoint (prometheus_client's server) whose gauges a test sets; a
``live_exporter`` serves, at each scrape, what the revision live in each cluster says (a label of the
test's Namespace there). The fleet's Prometheus scrapes them like any target, so a query answers with
what was really scraped.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass

from prometheus_client import CollectorRegistry, Gauge, start_http_server
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from devfleet.prometheus import LocalPrometheus
from syncer.errors import KubeError
from syncer.kube import KubeApi
from tests.support.waiting import eventually

ERRORS_LABEL = "quality.test/errors"
"""The label of a test's Namespace whose value the live exporter serves as that cluster's error rate."""


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


class _LiveErrors(Collector):
    """``analysis_test_errors{cluster, namespace}``: each cluster's Namespace label as last read. A
    thread reads the clusters every ``every`` seconds, so a scrape answers at once (a scrape may take
    no longer than Prometheus' scrape interval)."""

    def __init__(self, clients: Mapping[str, KubeApi], namespace: str, every: float = 0.2) -> None:
        self.clients = clients
        self.namespace = namespace
        self.values: dict[str, float] = {}
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._poll, args=(every,), daemon=True)
        self.thread.start()

    def _read(self, api: KubeApi) -> float | None:
        try:
            live = api.get("v1", "Namespace", self.namespace)
        except KubeError:
            return None  # not there (yet): no series
        value = ((live.get("metadata") or {}).get("labels") or {}).get(ERRORS_LABEL)
        return None if value is None else float(value)

    def _poll(self, every: float) -> None:
        while not self.stop.is_set():
            read = {name: self._read(api) for name, api in sorted(self.clients.items())}
            self.values = {name: value for name, value in read.items() if value is not None}
            self.stop.wait(every)

    def collect(self) -> Iterable[Metric]:
        family = GaugeMetricFamily(
            "analysis_test_errors", "error rate the live revision sets", labels=["cluster", "namespace"]
        )
        for name, value in sorted(self.values.items()):
            family.add_metric([name, self.namespace], value)
        yield family


@contextmanager
def live_exporter(
    prometheus: LocalPrometheus, job: str, clients: Mapping[str, KubeApi], namespace: str
) -> Iterator[str]:
    """Serve ``analysis_test_errors`` from the live clusters, scraped by ``prometheus`` as ``job``;
    the block starts once Prometheus scrapes it."""
    registry = CollectorRegistry()
    collector = _LiveErrors(clients, namespace)
    registry.register(collector)
    server, thread = start_http_server(0, addr="127.0.0.1", registry=registry)
    address = f"127.0.0.1:{server.server_address[1]}"
    prometheus.scrape(job, [address])
    try:
        eventually(f"{job} scraped", lambda: prometheus.query(f'up{{job="{job}"}}') == 1.0, 60)
        yield address
    finally:
        prometheus.scrape(job, [])
        collector.stop.set()
        collector.thread.join(timeout=5)
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
