"""With requirepass/masterauth on: the right password forms the cluster, a wrong one is reported per node."""

from __future__ import annotations

import pytest

from syncer.controller.topology import RedisNode, TopologyOptions, bootstrap, inspect
from tests.integration.topology.conftest import PASSWORD
from tests.integration.topology.servers import RedisServers, shards_of

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def nodes(auth_servers: RedisServers) -> list[RedisNode]:
    return auth_servers.start(4)


def options(password: str | None) -> TopologyOptions:
    return TopologyOptions(timeout=5.0, password=password, meet_timeout=20.0, ready_timeout=30.0)


def test_wrong_password_is_reported_for_every_node_and_changes_nothing(nodes: list[RedisNode]) -> None:
    report = bootstrap(shards_of(nodes, 2), options("not-the-password"))
    assert not report.healthy
    assert report.actions == ()
    assert report.unreachable == ()
    for node in nodes:
        mine = [e for e in report.errors if e.startswith(f"{node}: authentication failed")]
        assert mine, report.errors
        assert "WRONGPASS" in mine[0] or "invalid username-password pair" in mine[0]
    assert "authentication failed" in report.summary()


def test_missing_password_is_reported_by_inspect(nodes: list[RedisNode]) -> None:
    report = inspect(nodes, 2, options(None))
    assert not report.healthy
    assert report.cluster_state == "unknown"
    assert sorted(e.split(": ", 1)[0] for e in report.errors) == sorted(str(n) for n in nodes)
    # Redis's own words are kept after our prefix (NOAUTH, or HELLO refused before authentication).
    assert all(" authentication failed: " in e for e in report.errors), report.errors
    assert all("authenticat" in e.split(" authentication failed: ", 1)[1].lower() for e in report.errors)


def test_right_password_forms_the_cluster_with_replication(nodes: list[RedisNode]) -> None:
    shards = shards_of(nodes, 2)
    report = bootstrap(shards, options(PASSWORD))
    assert report.errors == ()
    assert report.healthy, report.summary()
    assert [m.replicas for m in report.masters_with_slots] == [(str(shard[1]),) for shard in shards]
    seen = inspect(nodes, 2, options(PASSWORD))
    assert seen.healthy, seen.summary()
