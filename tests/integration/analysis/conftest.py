"""The fleet's real Prometheus (``devfleet.prometheus``), started once for the analysis tests and
stopped with the fleet."""

from __future__ import annotations

import pytest

from devfleet import prometheus
from devfleet.prometheus import LocalPrometheus
from tests.integration.conftest import FleetHandle


@pytest.fixture(scope="session")
def local_prometheus(fleet: FleetHandle) -> LocalPrometheus:
    """The fleet's Prometheus, running (started again when a test stopped it)."""
    return prometheus.start(fleet.state.root, say=lambda msg: print(msg, flush=True))


@pytest.fixture
def running_prometheus(local_prometheus: LocalPrometheus, fleet: FleetHandle) -> LocalPrometheus:
    """``local_prometheus``, started again first if an earlier test stopped it."""
    return prometheus.start(fleet.state.root, say=lambda msg: None)
