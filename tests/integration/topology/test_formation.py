"""How a fresh cluster is formed: slots claimed before the meeting, servers still starting waited for,
each step told to the formation listener (real redis-servers)."""

from __future__ import annotations

import threading

import pytest

from syncer.controller.formation import FormationMarks, FormationStep
from syncer.controller.topology import RedisNode, TopologyOptions, bootstrap
from syncer.controller.topology_converge import converge
from tests.integration.topology.servers import RedisServers, free_ports, shards_of

pytestmark = pytest.mark.integration

S = FormationStep


def test_fresh_masters_claim_their_slots_before_they_meet(fresh_servers: RedisServers) -> None:
    nodes = fresh_servers.start(6)
    marks = FormationMarks()
    report = bootstrap(shards_of(nodes, 3), TopologyOptions(ready_timeout=30.0, told=marks.tell))
    assert report.healthy, report.summary()
    steps = [m.step for m in marks.marks]
    assert steps.index(S.SLOTS_ASSIGNED) < steps.index(S.MET) < steps.index(S.REPLICAS_TOLD)
    assert S.CLUSTER_OK in steps
    # The slot commands went to each shard's first node, before any MEET.
    first_meet = next(i for i, a in enumerate(report.actions) if "MEET" in a)
    claimed = {a.split(": ", 1)[0] for a in report.actions[:first_meet] if "ADDSLOTSRANGE" in a}
    assert claimed == {str(shard[0]) for shard in shards_of(nodes, 3)}


def test_a_pass_over_a_new_cluster_waits_for_a_server_still_starting(fresh_servers: RedisServers) -> None:
    nodes = [RedisNode("127.0.0.1", port) for port in free_ports(6)]
    fresh_servers.start_at(nodes[:5])
    late = threading.Timer(0.7, fresh_servers.start_at, args=([nodes[5]],))
    late.start()
    try:
        marks = FormationMarks()
        options = TopologyOptions(timeout=2.0, ready_timeout=30.0, start_timeout=10.0, told=marks.tell)
        result = converge(shards_of(nodes, 3), (), options)
    finally:
        late.join()
    assert result.report.healthy, (result.report.summary(), result.problems)
    assert marks.marks[0].step is S.SERVERS_ANSWER
