"""The fleet's real Jaeger (``devfleet.jaeger``), started once for the tracing tests and stopped with
the fleet."""

from __future__ import annotations

import pytest

from devfleet import jaeger
from devfleet.jaeger import LocalJaeger
from tests.integration.conftest import FleetHandle


@pytest.fixture(scope="session")
def local_jaeger(fleet: FleetHandle) -> LocalJaeger:
    """The fleet's Jaeger, running."""
    return jaeger.start(fleet.state.root, say=lambda msg: print(msg, flush=True))
