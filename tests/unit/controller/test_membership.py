"""Which pods gain or lose the membership label after a topology pass, and what the status says of
a Ready pod the client Service does not list."""

from __future__ import annotations

from dataclasses import replace

from syncer.controller.children import client_service
from syncer.controller.membership import MembershipChange, changes, members_only
from syncer.controller.model import ClusterSpec
from syncer.controller.status import StallCause, TopologyVerdict
from syncer.controller.topology_link import Pod, TopologyPass, held_out
from syncer.controller.topology_members import Membership
from tests.support.memory_kube import MemoryKube

SPEC = ClusterSpec(name="cache", namespace="ns", uid="u", generation=1, version="7.2", shards=1)


def pod(ordinal: int, ip: str, *, member: bool = False, shard: int = 0) -> Pod:
    return Pod(f"cache-shard-{shard}-{ordinal}", shard, ordinal, ip, True, "h", f"uid-{ordinal}", member)


MASTER, REPLICA = pod(0, "10.0.0.1", member=True), pod(1, "10.0.0.2")


def test_a_member_gains_the_label_and_an_outsider_loses_it() -> None:
    back = pod(1, "10.0.0.2", member=True)
    judged = Membership(frozenset({MASTER.node}), frozenset({back.node}))
    assert changes(SPEC, [MASTER, back], judged) == [MembershipChange(back, False)]
    judged = Membership(frozenset({MASTER.node, REPLICA.node}))
    assert changes(SPEC, [MASTER, REPLICA], judged) == [MembershipChange(REPLICA, True)]


def test_a_pod_whose_node_was_not_judged_keeps_what_it_has() -> None:
    judged = Membership(frozenset({REPLICA.node}))
    assert changes(SPEC, [MASTER, REPLICA], judged) == [MembershipChange(REPLICA, True)]
    assert changes(SPEC, [MASTER, REPLICA], Membership()) == []


def test_departing_pods_lose_the_label_even_when_nothing_was_judged() -> None:
    beyond, other_shard = pod(2, "10.0.0.3", member=True), pod(0, "10.0.0.4", member=True, shard=1)
    judged = Membership(frozenset({beyond.node, other_shard.node, MASTER.node}))
    expected = [MembershipChange(beyond, False), MembershipChange(other_shard, False)]
    assert changes(SPEC, [MASTER, beyond, other_shard], judged) == expected
    assert changes(SPEC, [MASTER, beyond, other_shard], None) == expected


def test_a_ready_pod_held_out_is_named_and_the_cluster_is_not_ready() -> None:
    healthy = TopologyPass(TopologyVerdict(True, "cluster_state ok", "Healthy"))
    judged = Membership(frozenset({MASTER.node}), frozenset({REPLICA.node}))
    found = held_out(TopologyPass(healthy.verdict, membership=judged), [MASTER, REPLICA])
    assert not found.verdict.healthy
    assert found.verdict.reason == "TopologyUnhealthy"
    assert "not in the client Service" in found.verdict.message
    assert "cache-shard-0-1" in found.verdict.message
    assert "cache-shard-0-0" not in found.verdict.message.split("client Service")[1]
    # A node left out says so where the stall is told.
    left_out = StallCause("NodesLeftOut", "10.0.0.2 is left out")
    unhealthy = TopologyVerdict(False, "unhealthy", "NodesFailed")
    stalled = TopologyPass(unhealthy, problem=left_out, membership=judged)
    found = held_out(stalled, [MASTER, REPLICA])
    assert found.problem is not None
    assert "cache-shard-0-1" in found.problem.message
    everyone = Membership(frozenset({MASTER.node, REPLICA.node}))
    assert held_out(TopologyPass(healthy.verdict, membership=everyone), [MASTER, REPLICA]).verdict.healthy


def test_the_client_service_selects_members_once_a_pod_carries_the_label_or_when_new() -> None:
    kube = MemoryKube("c")
    spec = replace(SPEC, shards=2)
    assert members_only(kube, spec, labelled=False), "a new Service selects members from the start"
    kube.apply(client_service(spec))  # as the version before the label made it
    assert not members_only(kube, spec, labelled=False), "it would go empty: no pod carries the label"
    assert members_only(kube, spec, labelled=True)
    kube.apply(client_service(spec, members_only=True))
    assert members_only(kube, spec, labelled=False), "a Service that selects members keeps doing so"
