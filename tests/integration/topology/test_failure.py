"""A master killed with SIGKILL shows up in inspect as failed and unreachable, never as healthy."""

from __future__ import annotations

import pytest

from syncer.controller.topology import TopologyOptions, TopologyReport, bootstrap, inspect
from tests.integration.topology.servers import RedisServers, shards_of
from tests.support.waiting import eventually

pytestmark = pytest.mark.integration

OPTIONS = TopologyOptions(timeout=2.0, meet_timeout=20.0, ready_timeout=30.0)


def test_killed_master_is_reported_failed_and_unreachable(servers: RedisServers) -> None:
    nodes = servers.start(6)
    shards = shards_of(nodes, 3)
    formed = bootstrap(shards, OPTIONS)
    assert formed.healthy, formed.summary()
    victim, heir = shards[0]

    servers.kill(victim)

    def confirmed_fail() -> TopologyReport | None:
        report = inspect(nodes, 3, OPTIONS)
        flagged = str(victim) in report.failed_nodes and str(victim) not in report.suspected_nodes
        return report if flagged else None

    report = eventually(f"the peers to flag {victim} fail", confirmed_fail, 30.0, every=0.1)
    assert not report.healthy
    assert report.unreachable == (str(victim),)
    assert any(e.startswith(f"{victim}: unreachable") for e in report.errors), report.errors
    summary = report.summary()
    assert summary.startswith("unhealthy: ")
    assert f"failed: {victim}" in summary
    assert f"unreachable: {victim}" in summary

    # The replica takes over the slots; the cluster serves again, and the report still says unhealthy
    # because a member is down.
    def failed_over() -> TopologyReport | None:
        seen = inspect(nodes, 3, OPTIONS)
        masters = {m.master for m in seen.masters_with_slots}
        return seen if str(heir) in masters and seen.cluster_state == "ok" else None

    after = eventually(f"{heir} to take over the slots of {victim}", failed_over, 30.0, every=0.1)
    assert after.slots_covered == 16384
    assert len(after.masters_with_slots) == 3
    assert str(victim) in after.failed_nodes
    assert not after.healthy

    # Bootstrap on the original layout does not pretend either: it names the dead node, changes nothing.
    again = bootstrap(shards, OPTIONS)
    assert not again.healthy
    assert again.actions == ()
    assert any(e.startswith(f"{victim}: unreachable") for e in again.errors), again.errors
