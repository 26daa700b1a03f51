"""A scale-out to a master that serves no slot yet, on real redis-fresh_servers, with redis-py's cluster
client writing throughout: the new master gets one slot alone before any other slot is opened
towards it, and the client, whose map was made while the master served nothing, sees no error.

redis-py fails a command that an ASK sends to a master missing from its map (CLUSTER SLOTS lists
only masters that serve a slot). Moving the first slot alone keeps that window to one slot's keys."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import ClassVar

import pytest
from redis.cluster import ClusterNode, RedisCluster

from syncer.controller import topology_converge
from syncer.controller.topology import TopologyOptions
from syncer.controller.topology_client import Connections
from syncer.controller.topology_model import RedisNode
from tests.integration.topology.servers import RedisServers, client, cluster_command, master_and_newcomer

pytestmark = pytest.mark.integration


class RecordingConnections(Connections):
    """Real connections that remember every pipeline's node and commands, in order."""

    sent: ClassVar[list[tuple[RedisNode, list[tuple[str, ...]]]]] = []

    def pipeline(self, node: RedisNode, commands: Sequence[Sequence[str | int | bytes]]) -> list[object]:
        self.sent.append((node, [tuple(str(part) for part in c[:5]) for c in commands]))
        return super().pipeline(node, commands)


def _index_of(commands: list[tuple[str, ...]]) -> int:
    return next(i for i, (_node, sent) in enumerate(RecordingConnections.sent) if sent is commands)


def setslots(commands: list[tuple[str, ...]], state: str) -> list[int]:
    return [int(c[2]) for c in commands if c[:2] == ("CLUSTER", "SETSLOT") and c[3] == state]


def test_a_master_serving_nothing_gets_one_slot_alone_first_and_a_client_sees_no_error(
    fresh_servers: RedisServers, monkeypatch: pytest.MonkeyPatch
) -> None:
    options = TopologyOptions(timeout=5.0, ready_timeout=30.0)
    a, b = master_and_newcomer(fresh_servers, 20000, options)

    # The client's map is made now, while b serves nothing.
    writer = RedisCluster(startup_nodes=[ClusterNode(a.host, a.port)], socket_timeout=5)
    errors: list[str] = []
    writes = 0
    stop = threading.Event()

    def write() -> None:
        nonlocal writes
        i = 0
        while not stop.is_set():
            try:
                writer.set(f"key:{i % 20000}", "w")
                writes += 1
            except Exception as err:  # every error is a finding: the test names it
                errors.append(f"{type(err).__name__}: {err}")
            i += 7

    RecordingConnections.sent = []
    monkeypatch.setattr(topology_converge, "Connections", RecordingConnections)
    thread = threading.Thread(target=write, daemon=True)
    thread.start()
    try:
        result = topology_converge.converge([[a], [b]], (), options)
    finally:
        stop.set()
        thread.join(10)
        writer.close()

    assert not result.problems, result.problems
    assert result.report.healthy, result.report.summary()
    b_id = cluster_command(b, "MYID")
    towards_b = [
        cmds for node, cmds in RecordingConnections.sent if node == b and setslots(cmds, "IMPORTING")
    ]
    assert len(towards_b) > 2
    first = setslots(towards_b[0], "IMPORTING")
    assert len(first) == 1, f"the first group opened towards the new master had {len(first)} slots"
    assert len(setslots(towards_b[1], "IMPORTING")) == options.slot_group
    # That slot was bound to b (on b, then on a) before the next group was opened.
    order = [
        (node, slot, state)
        for node, cmds in RecordingConnections.sent
        for state in ("IMPORTING", "NODE")
        for slot in setslots(cmds, state)
    ]
    bound = order.index((b, first[0], "NODE"))
    second = order.index((b, setslots(towards_b[1], "IMPORTING")[0], "IMPORTING"))
    assert bound < second
    assert any(
        node == a and slot == first[0] and state == "NODE" for node, slot, state in order[bound:second]
    )
    # Within a group, a slot is bound as soon as its keys moved, before the group's last MIGRATE:
    # a key is asked for only while its own slot moves.
    third = order.index((b, setslots(towards_b[2], "IMPORTING")[0], "IMPORTING"))
    group_two = RecordingConnections.sent[_index_of(towards_b[1]) : _index_of(towards_b[2])]
    migrates = [
        i for i, (node, cmds) in enumerate(group_two) if node == a and any(c[0] == "MIGRATE" for c in cmds)
    ]
    binds_on_b = [i for i, (node, cmds) in enumerate(group_two) if node == b and setslots(cmds, "NODE")]
    assert len(migrates) > 1
    assert len(binds_on_b) > 1
    assert binds_on_b[0] < migrates[-1]
    assert second < third
    assert b_id in cluster_command(a, "NODES")
    assert writes > 0
    assert errors == []
    with client(a) as ca, client(b) as cb:
        assert int(ca.dbsize()) + int(cb.dbsize()) == 20000
