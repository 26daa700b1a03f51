"""The test client itself: a writer that outlives its test (the test failed between ``start`` and
``stop``) keeps writing to the addresses it knew, which the fleet hands to a later test's pods. Its
keys must not be that later test's keys, or the later test reads its own acknowledged writes as
lost and its read-backs as stale, whatever the controller did; and the fixtures stop it."""

from __future__ import annotations

import pytest

from syncer.controller.topology import TopologyOptions, bootstrap
from tests.integration.topology.servers import RedisServers, shards_of
from tests.integration.topology.traffic import Traffic, stop_leftovers
from tests.support.waiting import eventually

pytestmark = pytest.mark.integration

OPTIONS = TopologyOptions(timeout=2.0, meet_timeout=20.0, ready_timeout=30.0)


def test_a_writer_left_running_on_the_same_servers_changes_none_of_a_later_writers_keys(
    servers: RedisServers,
) -> None:
    nodes = servers.start(3)
    assert bootstrap(shards_of(nodes, 3), OPTIONS).healthy
    current = Traffic(nodes, bulk=100).start()
    eventually("the current writer's first rounds", lambda: current.writes > 3 * current.hot, 60)
    # A writer of an earlier test, still running: it starts its rounds at 0 on the same servers.
    leftover = Traffic(nodes, bulk=100).start()
    eventually("a whole round of the leftover writer", lambda: leftover.writes > leftover.hot, 60)
    outcome = current.stop()
    print(outcome.summary(), flush=True)
    assert outcome.lost == (), f"{len(outcome.lost)} keys lost, e.g. {outcome.lost[:5]}"
    assert outcome.stale_reads == 0
    # What the fixtures do after each test: the leftover writer is stopped, and only it.
    assert stop_leftovers() == 1
    assert leftover._thread is not None
    assert not leftover._thread.is_alive()
    assert stop_leftovers() == 0
