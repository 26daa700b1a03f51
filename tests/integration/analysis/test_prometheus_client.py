"""The analysis' Prometheus client against the fleet's real Prometheus (HTTPS): values as scraped, no
series, a certificate it cannot verify and an outage as answers without a value."""

from __future__ import annotations

import pytest

from devfleet import prometheus
from devfleet.prometheus import LocalPrometheus
from syncer.analysis import PrometheusSource, QueryAnswer
from syncer.prom import PrometheusClient
from tests.integration.analysis.kit import exporter
from tests.integration.conftest import FleetHandle
from tests.support.waiting import eventually

pytestmark = pytest.mark.integration


def test_a_scraped_value_is_answered_and_an_outage_is_an_error(
    running_prometheus: LocalPrometheus, fleet: FleetHandle
) -> None:
    client = PrometheusClient(
        PrometheusSource(running_prometheus.url, str(running_prometheus.ca_file)), timeout=5.0
    )
    unverified = PrometheusClient(PrometheusSource(running_prometheus.url), timeout=5.0)
    try:
        with exporter(running_prometheus, "client-test", "client_test_errors") as served:
            served.set("canary", 0.25)
            query = 'sum(client_test_errors{cluster="canary"})'
            assert eventually("the scraped value", lambda: client.query(query).value, 30) == 0.25
            served.set("canary", 0.5)
            assert eventually("the new value", lambda: client.query(query).value == 0.5, 30)
            refused = unverified.query(query)
            assert refused.value is None
            assert "CERTIFICATE_VERIFY_FAILED" in refused.error
            missing = client.query('sum(client_test_errors{cluster="nowhere"}) > 0')
            assert missing == QueryAnswer(missing="the query gives no series")
            prometheus.stop(fleet.state.root, say=lambda msg: None)
            down = client.query(query)
            assert down.value is None
            assert down.error.startswith(f"{running_prometheus.url} did not answer: ConnectionError")
    finally:
        client.close()
        unverified.close()
        prometheus.start(fleet.state.root, say=lambda msg: None)
