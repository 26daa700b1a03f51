"""A destructive command (FLUSHALL, CLUSTER RESET HARD, and the FORGET that follows a departure) is
sent only on positive evidence: a missing, timed-out or odd answer, a view read while a node was
being met, or another node now answering at the address never empties a node.

``ScriptedRedis`` stands for the servers only to test these decisions: each command answers from a
script per node (the last answer repeats) and every command sent is recorded."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import cast

import pytest

from syncer.controller.topology_client import Connections
from syncer.controller.topology_model import NodeView, RedisNode, TopologyError, TopologyOptions
from syncer.controller.topology_volumes import (
    SelfLook,
    confirmed,
    departure_refusal,
    judge_returning,
    key_count,
    outsiders,
    retire,
)
from tests.unit.controller.test_topology_volumes import IDS, A, B, C, line, pair, view

Answer = object  # a reply, or a TopologyError to raise
TIMEOUT = TopologyError("10.0.0.3:6379", "unreachable: no answer to DBSIZE within 1.0s", unreachable=True)
DESTRUCTIVE = {"FLUSHALL", "CLUSTER RESET HARD", "CLUSTER FORGET"}


@dataclass
class ScriptedRedis:
    script: dict[tuple[RedisNode, str], list[Answer]]
    sent: list[tuple[RedisNode, str]] = field(default_factory=list)

    def call(self, node: RedisNode, *args: str | int) -> object:
        command = " ".join(str(a) for a in args)
        self.sent.append((node, command))
        answers = self.script.get((node, command)) or self.script.get((node, " ".join(map(str, args[:2]))))
        if not answers:
            return "OK"
        answer = answers.pop(0) if len(answers) > 1 else answers[0]
        if isinstance(answer, TopologyError):
            raise answer
        return answer

    def run(self, node: RedisNode, *args: str | int) -> str:
        return str(self.call(node, *args))

    def destructive(self) -> list[tuple[RedisNode, str]]:
        return [(n, c) for n, c in self.sent if any(c.startswith(d) for d in DESTRUCTIVE)]


def nodes_text(v: NodeView) -> str:
    return "\n".join(
        f"{e.node_id} {e.address}@16379 {','.join(sorted(e.flags))} {e.master_id or '-'} 0 0 "
        f"{e.config_epoch} connected {' '.join(f'{r.start}-{r.end}' for r in e.slots)}".rstrip()
        for e in v.entries
    )


def info_text(v: NodeView) -> str:
    assert v.info is not None
    return f"cluster_state:ok\r\ncluster_current_epoch:{v.info.current_epoch}\r\n"


def scripted(
    looks: Sequence[Mapping[RedisNode, NodeView]], keys: Mapping[RedisNode, list[Answer]]
) -> ScriptedRedis:
    """Servers that answer CLUSTER INFO/NODES from ``looks`` in turn (the first look is the one the
    pass already read: judging reads from the second on) and DBSIZE from ``keys``."""
    script: dict[tuple[RedisNode, str], list[Answer]] = {}
    for node in looks[0]:
        script[(node, "CLUSTER INFO")] = [info_text(look[node]) for look in looks[1:]] or ["cluster_state:ok"]
        script[(node, "CLUSTER NODES")] = [nodes_text(look[node]) for look in looks[1:]] or [""]
        script[(node, "DBSIZE")] = list(keys[node])
        script[(node, "CLUSTER MYID")] = [IDS[node]]
        script[(node, "ROLE")] = [["master", 0, []]]
        script[(node, "INFO persistence")] = [{"aof_enabled": 0}]
    return ScriptedRedis(script)


def judge(redis: ScriptedRedis, first: Mapping[RedisNode, NodeView]) -> None:
    judge_returning(cast(Connections, redis), TopologyOptions(), first, list(first))


# -- a node caught half way through being met ----------------------------------------------------


def being_met() -> dict[RedisNode, NodeView]:
    """C was met into A+B's cluster, but this look caught the gossip half way: A lists C only in
    handshake, B not yet, and C lists A only in handshake while it already counts the cluster's
    epoch and holds keys (a replica's sync or slots moving in)."""
    return {
        A: view(
            A, [line(A, "myself,master", "0-16383"), line(B, "slave", master=IDS[A]), line(C, "handshake")]
        ),
        B: view(B, [line(A, "master", "0-16383"), line(B, "myself,slave", master=IDS[A])]),
        C: view(C, [line(C, "myself,master", epoch=2), line(A, "handshake")]),
    }


def met() -> dict[RedisNode, NodeView]:
    """The same nodes a moment later: each lists the others."""
    everyone = [line(A, "master", "0-16383"), line(B, "slave", master=IDS[A]), line(C, "master")]
    return {
        node: view(
            node,
            [
                e.replace(" master ", " myself,master ", 1).replace(" slave ", " myself,slave ", 1)
                if e.startswith(IDS[node])
                else e
                for e in everyone
            ],
        )
        for node in (A, B, C)
    }


def test_a_node_seen_outside_the_cluster_in_one_look_only_is_not_emptied() -> None:
    first, second = being_met(), met()
    [judged] = outsiders(first, {A: 300, B: 300, C: 213}, [A, B, C])
    assert judged.node == C
    assert judged.wipe
    redis = scripted([first, second], {A: [300], B: [300], C: [213]})
    judge(redis, first)
    assert redis.destructive() == []


def test_an_outsider_seen_by_two_looks_is_emptied() -> None:
    alone = {**pair(), C: view(C, [line(C, "myself,master", "0-5460", epoch=7)], epoch=7)}
    redis = scripted([alone, alone], {A: [100], B: [100], C: [70000]})
    judge(redis, alone)
    assert (C, "FLUSHALL") in redis.destructive()
    assert {n for n, _ in redis.destructive()} == {C}


def test_an_outsider_is_not_emptied_when_another_node_answers_at_its_address() -> None:
    alone = {**pair(), C: view(C, [line(C, "myself,master", "0-5460", epoch=7)], epoch=7)}
    redis = scripted([alone, alone], {A: [100], B: [100], C: [70000]})
    redis.script[(C, "CLUSTER MYID")] = ["d" * 40]  # the address is another server's by now
    judge(redis, alone)
    assert redis.destructive() == []


@pytest.mark.parametrize("reply", [TIMEOUT, None, b"12", "12", True, -1], ids=repr)
def test_keys_that_were_not_counted_are_never_read_as_none(reply: Answer) -> None:
    alone = {**pair(), C: view(C, [line(C, "myself,master", "0-5460", epoch=7)], epoch=7)}
    # The group lacks no slot, so a node with keys would be emptied: an unread count must not count as 0.
    redis = scripted([alone, alone], {A: [100], B: [100], C: [reply]})
    judge(redis, alone)
    assert redis.destructive() == []
    if not isinstance(reply, TopologyError):
        assert key_count(reply) is None


def test_two_looks_must_agree_on_the_id_and_the_keys() -> None:
    alone = {**pair(), C: view(C, [line(C, "myself,master", "0-5460", epoch=7)], epoch=7)}
    [first] = outsiders(alone, {A: 1, B: 1, C: 10}, [A, B, C])
    [more] = outsiders(alone, {A: 1, B: 1, C: 11}, [A, B, C])
    sure, doubts = confirmed([first], [more])
    assert sure == []
    assert "second look found" in doubts[0]
    assert confirmed([first], [first]) == ([first], [])
    assert confirmed([first], [])[0] == []


# -- a departing node: reset only on what it says of itself at that moment --------------------------

ID = "c" * 40


@pytest.mark.parametrize(
    ("look", "expected"),
    [
        (SelfLook(None, "unknown", None, None), "gives no id"),
        (SelfLook("d" * 40, "connected", 0, 0), "answers as node dddddddddddd"),
        (SelfLook(ID, "unknown", 0, 0), "did not say whether it is a master"),
        (SelfLook(ID, "connected", 0, None), "did not say which slots"),
        (SelfLook(ID, "master", 0, 100), "still serves 100 slot(s)"),
        (SelfLook(ID, "master", 500, 0), "still holds 500 key(s)"),
        (SelfLook(ID, "master", None, 0), "did not say how many keys"),
    ],
    ids=[
        "no-answer",
        "another-node",
        "role-unknown",
        "slots-unknown",
        "serves-slots",
        "master-keys",
        "keys-unknown",
    ],
)
def test_a_departing_node_is_not_reset_without_positive_evidence(look: SelfLook, expected: str) -> None:
    assert expected in departure_refusal(C, ID, look)


def test_a_departing_replica_or_empty_master_is_reset() -> None:
    assert departure_refusal(C, ID, SelfLook(ID, "connected", 70000, 0)) == ""  # a replica's copy
    assert departure_refusal(C, ID, SelfLook(ID, "master", 0, 0)) == ""


def test_a_departing_node_a_stale_view_called_a_replica_is_not_flushed_once_it_is_a_master() -> None:
    # The pass's view said C follows A; by the time it leaves, C was failed over to and holds the keys.
    me = line(C, "myself,master", "0-16383", epoch=3)
    redis = ScriptedRedis(
        {
            (C, "CLUSTER NODES"): [me],
            (C, "ROLE"): [["master", 0, []]],
            (C, "DBSIZE"): [20300],
            (C, "CLUSTER MYID"): [IDS[C]],
        }
    )
    problem = retire(cast(Connections, redis), TopologyOptions(), C, IDS[C])
    assert redis.destructive() == []
    assert "still serves 16384 slot(s)" in problem
