"""Redis' failover-auth window: when an election would be refused, which heir to ask, and the record
of elections built from the controller's requests and from config epochs seen going up. Pure."""

from __future__ import annotations

import pytest

from syncer.controller.elections import AuthWindow, Election, ElectionLog, Heir, failover_wait, order_heirs
from syncer.controller.topology_model import RedisNode
from syncer.controller.topology_parse import ClusterNodeEntry, parse_cluster_nodes

WINDOW = AuthWindow(node_timeout=5.0)  # the controller's redis.conf: cluster-node-timeout 5000
R0, R1, R2 = RedisNode("10.0.0.1", 6379), RedisNode("10.0.0.2", 6379), RedisNode("10.0.0.3", 6379)


def test_the_windows_follow_redis_from_the_node_timeout() -> None:
    assert (WINDOW.retry, WINDOW.vote) == (20.0, 10.0)
    # The retry is never under 4 s: Redis' election timeout is at least 2 s, the retry twice that.
    assert (AuthWindow(0.5).retry, AuthWindow(0.5).vote) == (4.0, 1.0)


def test_a_replica_that_started_an_election_is_refused_until_the_retry_time_passed() -> None:
    history = [Election(at=100.0, winner="r0", former="m")]
    wait, why = failover_wait(history, "r0", "x", 110.0, WINDOW)
    assert wait == pytest.approx(10.0)
    assert "started an election 10.0s ago" in why
    assert failover_wait(history, "r0", "x", 120.5, WINDOW) == (0.0, "")
    assert failover_wait(history, "r1", "x", 110.0, WINDOW) == (0.0, "")  # another replica: no wait


def test_a_replica_of_a_master_voted_about_recently_waits_for_the_vote_window() -> None:
    # r1 took over from m at 100; m took back since; now r2, a replica of m, would be refused votes.
    history = [Election(at=100.0, winner="r1", former="m")]
    wait, why = failover_wait(history, "r2", "m", 104.0, WINDOW)
    assert wait == pytest.approx(6.0)
    assert "voted for a replica of its master 4.0s ago" in why
    assert failover_wait(history, "r2", "m", 110.0, WINDOW) == (0.0, "")
    assert failover_wait(history, "r2", "", 104.0, WINDOW) == (0.0, "")  # master unknown: no vote rule


def test_the_longest_wait_of_all_elections_counts() -> None:
    history = [Election(100.0, "r0", "m"), Election(105.0, "r1", "r0"), Election(106.0, "r0", "r1")]
    wait, _ = failover_wait(history, "r0", "r1", 110.0, WINDOW)
    assert wait == pytest.approx(16.0)  # the second election of r0 at 106, not the first


def test_a_heir_redis_would_elect_now_comes_first_and_the_choice_is_told() -> None:
    heirs = [Heir(R0, 8.0, "it started an election 12.0s ago"), Heir(R1), Heir(R2, 3.0, "x")]
    order, note = order_heirs(heirs)
    assert [h.node for h in order] == [R1, R2, R0]
    assert note.startswith("10.0.0.2:6379 takes over instead of 10.0.0.1:6379: Redis would refuse")
    assert "for 8.0s more (it started an election 12.0s ago)" in note


def test_the_preferred_heir_ready_now_is_kept_without_a_note_and_none_ready_means_the_shortest_wait() -> None:
    assert order_heirs([Heir(R0), Heir(R1, 2.0, "x")]) == ([Heir(R0), Heir(R1, 2.0, "x")], "")
    order, note = order_heirs([Heir(R0, 9.0, "a"), Heir(R1, 2.0, "b")])
    assert [h.node for h in order] == [R1, R0]
    assert "instead of 10.0.0.1:6379" in note
    assert order_heirs([]) == ([], "")


def me(node_id: str, flags: str, master: str, epoch: int, slots: str = "") -> ClusterNodeEntry:
    line = f"{node_id} 10.0.0.9:6379@16379 myself,{flags} {master} 0 0 {epoch} connected {slots}"
    return parse_cluster_nodes(line.rstrip())[0]


def test_more_auth_requests_sent_since_the_last_look_is_an_election_for_the_master_followed_then() -> None:
    log = ElectionLog()
    log.observe(me("r0", "slave", "m", 1), 0, 10.0)
    log.observe(me("r0", "master", "-", 7, "0-8191"), 5, 11.0)  # won
    log.observe(me("r0", "master", "-", 7, "0-8191"), 5, 12.0)  # nothing new
    assert log.history() == (Election(11.0, "r0", "m"),)
    # Promoted and demoted again between two looks, or an election lost: the count still tells.
    log.observe(me("r1", "slave", "m", 2), 0, 10.0)
    log.observe(me("r1", "slave", "m", 9), 4, 11.0)
    assert log.history()[-1] == Election(11.0, "r1", "m")


def test_a_node_that_sent_requests_before_the_first_look_counts_as_elected_at_that_look() -> None:
    log = ElectionLog()
    log.observe(me("r0", "slave", "m", 1), 5, 30.0)  # a controller that just started cannot know when
    log.observe(me("r1", "slave", "m", 1), 0, 30.0)
    assert log.history() == (Election(30.0, "r0", "m"),)


def test_epochs_a_restart_and_the_controllers_own_request_are_not_counted_again() -> None:
    log = ElectionLog()
    # A replica's line shows its master's epoch: the master winning or taking a slot raises it.
    log.observe(me("r1", "slave", "m", 2), 3, 10.0)
    log.observe(me("r1", "slave", "m", 9), 3, 11.0)
    log.observe(me("r1", "slave", "m", 9), 0, 12.0)  # the server restarted: its count starts anew
    log.observe(me("r1", "slave", "m", 9), 0, 13.0)
    assert log.history() == (Election(10.0, "r1", "m"),)  # the first look only
    log.observe(me("r0", "slave", "m", 1), 0, 20.0)
    log.asked("r0", "m", 20.5)
    log.observe(me("r0", "master", "-", 9, "0-10"), 5, 21.0)
    assert log.history()[-1] == Election(20.5, "r0", "m")
    assert len(log.history()) == 2
