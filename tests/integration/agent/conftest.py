"""Fixtures the agent tests share across modules: the light fleet of the sharded ``syncer run`` tests
(test_sharded_run, test_sharded_gates), started once for both and stopped when the package's tests end.
Each test's shard group works in namespaces of its own (a random tag), so the tests do not meet."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from devfleet import fleet as devfleet
from tests.integration.agent.test_sharded_run import CLUSTERS
from tests.integration.engine.sharded_kit import light_fleet


@pytest.fixture(scope="package")
def light(tmp_path_factory: pytest.TempPathFactory) -> Iterator[devfleet.Fleet]:
    """Light clusters ``CLUSTERS`` whose apiservers audit every write."""
    with light_fleet(tmp_path_factory.mktemp("sharded-run") / "state", CLUSTERS) as fleet:
        yield fleet
