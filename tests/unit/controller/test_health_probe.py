"""The health watch's judgement of one round of answers, its hysteresis, and the progress told while
slots move. Pure: node views are built from CLUSTER INFO and CLUSTER NODES text."""

from __future__ import annotations

from syncer.controller.health_probe import Debounced, HealthWatch, ProbeOptions, judge_round
from syncer.controller.progress import MigrationProgress
from syncer.controller.status import TopologyVerdict
from syncer.controller.topology_model import NodeView, RedisNode, TopologyOptions
from syncer.controller.topology_parse import parse_cluster_info, parse_cluster_nodes

A, B, C = RedisNode("10.0.0.1", 6379), RedisNode("10.0.0.2", 6379), RedisNode("10.0.0.3", 6379)
OPTIONS = ProbeOptions(interval=0.25, timeout=0.4, fail_rounds=2, recover_rounds=3)


def nodes(
    myself: RedisNode,
    b_flags: str = "master",
    b_slots: str = "8192-16383",
    epoch: int = 2,
    b_master: str = "-",
) -> str:
    lines = {
        A: "aaa 10.0.0.1:6379@16379 master - 0 0 1 connected 0-8191",
        B: f"bbb 10.0.0.2:6379@16379 {b_flags} {b_master} 0 0 {epoch} connected {b_slots}".rstrip(),
        C: "ccc 10.0.0.3:6379@16379 master - 0 0 3 connected",
    }
    text = []
    for node, line in lines.items():
        node_id, address, flags, rest = line.split(" ", 3)
        if node == myself:
            flags = f"myself,{flags}"
        text.append(f"{node_id} {address} {flags} {rest}")
    return "\n".join(text)


def view(node: RedisNode, state: str = "ok", epoch: int = 3, **flags: str) -> NodeView:
    info = parse_cluster_info(f"cluster_state:{state}\ncluster_current_epoch:{epoch}\n")
    return NodeView(node, info, parse_cluster_nodes(nodes(node, **flags)))


def silent(node: RedisNode) -> NodeView:
    return NodeView(node, error=f"{node}: unreachable: Timeout reading from socket", unreachable=True)


def test_a_healthy_round_shows_no_outage() -> None:
    assert judge_round([view(A), view(B), view(C)], 0.4) is None


def test_a_master_serving_slots_that_does_not_answer_is_an_outage_before_any_cluster_state_fails() -> None:
    found = judge_round([view(A), silent(B), view(C)], 0.4)
    assert found is not None
    assert found.reason == "MasterUnreachable"
    assert "10.0.0.2:6379 serving 8192 slot(s) does not answer within 0.4s" in found.message


def test_a_silent_node_redis_failed_over_is_a_member_down_not_a_master_outage() -> None:
    # The freshest view (highest epoch) shows B failed and without slots: its shard is served again,
    # but the node still does not answer: the shard has one copy fewer.
    stale = view(A, epoch=2)
    fresh = view(C, epoch=5, b_flags="master,fail", b_slots="")
    found = judge_round([stale, silent(B), fresh], 0.4)
    assert found is not None
    assert found.reason == "ReplicaUnreachable"
    assert found.message.startswith("master 10.0.0.2:6379 serving no slot does not answer within 0.4s (")


REPLICA = {"b_flags": "slave", "b_master": "aaa", "b_slots": ""}


def test_a_replica_that_does_not_answer_is_an_outage_naming_it_and_its_master() -> None:
    replica = [view(A, **REPLICA), silent(B), view(C, **REPLICA)]
    found = judge_round(replica, 0.4)
    assert found is not None
    assert found.reason == "ReplicaUnreachable"
    assert found.message == (
        "replica 10.0.0.2:6379 of 10.0.0.1:6379 does not answer within 0.4s "
        "(10.0.0.2:6379: unreachable: Timeout reading from socket)"
    )


def test_a_silent_master_comes_before_a_failing_cluster_state_which_comes_before_a_silent_replica() -> None:
    master_down = judge_round([silent(A), silent(B), view(C, **REPLICA)], 0.4)
    assert master_down is not None
    assert master_down.reason == "MasterUnreachable"
    failing = judge_round([view(A, **REPLICA), silent(B), view(C, state="fail", **REPLICA)], 0.4)
    assert failing is not None
    assert failing.reason == "ClusterStateFail"


def test_a_member_saying_cluster_state_fail_is_an_outage() -> None:
    found = judge_round([view(A), view(B, state="fail"), view(C)], 0.4)
    assert found == TopologyVerdict(False, "cluster_state:fail on 10.0.0.2:6379", "ClusterStateFail")


def test_nobody_answering_is_an_outage() -> None:
    found = judge_round([silent(A), silent(B)], 0.4)
    assert found is not None
    assert found.reason == "MasterUnreachable"


BAD = TopologyVerdict(False, "cluster_state:fail on x", "ClusterStateFail")
WORSE = TopologyVerdict(False, "master y does not answer", "MasterUnreachable")


def run(rounds: list[TopologyVerdict | None]) -> list[str]:
    state, seen = Debounced(), []
    for found in rounds:
        state = state.step(found, OPTIONS)
        seen.append(state.outage.reason if state.outage else "-")
    return seen


def test_an_outage_needs_two_bad_rounds_in_a_row_and_three_good_ones_to_end() -> None:
    assert run([BAD, None, BAD, None]) == ["-", "-", "-", "-"]
    assert run([BAD, BAD, None, None, None]) == [
        "-",
        "ClusterStateFail",
        "ClusterStateFail",
        "ClusterStateFail",
        "-",
    ]
    # A bad round within the recovery run starts the count again, and the latest reason is told.
    assert run([BAD, BAD, None, None, WORSE, None, None, None]) == [
        "-", "ClusterStateFail", "ClusterStateFail", "ClusterStateFail", "MasterUnreachable",
        "MasterUnreachable", "MasterUnreachable", "-",
    ]  # fmt: skip


def test_progress_is_told_at_start_end_and_at_most_once_a_second_between() -> None:
    now = [0.0]
    told: list[str] = []
    progress = MigrationProgress(lambda v: told.append(v.message), 1.0, clock=lambda: now[0])
    for done, at in ((0, 0.0), (64, 0.3), (128, 0.9), (192, 1.1), (256, 1.5), (300, 1.6)):
        now[0] = at
        progress.tell(done, 300)
    assert told == [
        "migrating slots: 0/300 moved",
        "migrating slots: 192/300 moved",
        "migrating slots: 300/300 moved",
    ]


def test_the_watch_keeps_its_state_when_tracked_again_and_drops_members_the_spec_no_longer_keeps() -> None:
    woken: list[tuple[str, str | None]] = []
    watch = HealthWatch(OPTIONS, lambda key, outage: woken.append((key, outage and outage.reason)))
    access = TopologyOptions(timeout=5.0)
    watch.track("ns/cache", [B, A, C], access)
    watch.narrow("ns/cache", [A, B])
    assert watch.outage("ns/cache") is None
    assert watch.tracked("ns/cache") == (A, B)
    watch.forget("ns/cache")
    assert watch.tracked("ns/cache") == ()
