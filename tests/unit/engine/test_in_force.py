"""The one revision in force of sharded replicas (``syncer.engine.in_force``): the record only moves
forward, a replica behind it takes the newer revision or waits saying why, revisions on two lines of
history wait, and replicas that run different rollout policies roll nothing out. The record is kept
in an in-memory home cluster; the decisions are syncer's own."""

from __future__ import annotations

from collections.abc import Mapping

from syncer.config.rollout import RolloutPolicy
from syncer.engine.in_force import InForce, policy_fingerprint
from syncer.engine.revision import PreparedRevision
from syncer.status.revision_record import RevisionRecord
from tests.support.memory_kube import MemoryKube
from tests.support.memory_revisions import prepared
from tests.unit.engine.test_fleet_pass import fleet

ORDER = ["rev-1", "rev-2", "rev-3"]  # one line of history, oldest first
POLICY = policy_fingerprint(RolloutPolicy.single_wave())


def descends(revision: str, ancestor: str) -> bool:
    if revision not in ORDER or ancestor not in ORDER:
        return False
    return ORDER.index(ancestor) < ORDER.index(revision)


def replica(home: MemoryKube, identity: str, peers: Mapping[str, str] | None = None) -> InForce:
    record = RevisionRecord(home, "syncer-system", identity)
    return InForce(record, POLICY, lambda: dict(peers or {identity: POLICY}))


def rev(name: str) -> PreparedRevision:
    return prepared(fleet(name))


def test_the_first_replica_records_its_revision_and_a_later_one_moves_it_forward() -> None:
    home = MemoryKube("home")
    a, b = replica(home, "a"), replica(home, "b")
    assert a.settle(rev("rev-1"), descends, lambda: None)[1] == ""
    assert b.settle(rev("rev-2"), descends, lambda: None)[1] == ""
    seen = a.record.read()
    assert seen is not None
    assert (seen.revision, seen.set_by, seen.policy) == ("rev-2", "b", POLICY)


def test_a_replica_behind_the_revision_in_force_takes_the_newer_one_or_waits_saying_why() -> None:
    home = MemoryKube("home")
    replica(home, "b").settle(rev("rev-2"), descends, lambda: None)
    a = replica(home, "a")
    taken, why = a.settle(rev("rev-1"), descends, lambda: rev("rev-2"))
    assert (taken.revision, why) == ("rev-2", "")
    stuck, why = a.settle(rev("rev-1"), descends, lambda: rev("rev-1"))
    assert stuck.revision == "rev-1"
    assert why.startswith("the fleet's revision in force is rev-2 (set by b); this replica has rev-1")
    record = a.record.read()
    assert record is not None
    assert record.revision == "rev-2", "an older revision never moves the record back"


def test_a_newer_tip_taken_while_following_moves_the_record_on() -> None:
    home = MemoryKube("home")
    replica(home, "b").settle(rev("rev-2"), descends, lambda: None)
    a = replica(home, "a")
    taken, why = a.settle(rev("rev-1"), descends, lambda: rev("rev-3"))
    assert (taken.revision, why) == ("rev-3", "")
    record = a.record.read()
    assert record is not None
    assert record.revision == "rev-3"


def test_revisions_on_two_lines_of_history_wait() -> None:
    home = MemoryKube("home")
    replica(home, "b").settle(rev("rev-2"), descends, lambda: None)
    _, why = replica(home, "a").settle(rev("rewritten"), descends, lambda: None)
    assert "are not on one line of history" in why


def test_replicas_that_run_different_rollout_policies_roll_nothing_out() -> None:
    home = MemoryKube("home")
    a = replica(home, "a", {"a": POLICY, "b": "0123456789abcdef"})
    taken, why = a.settle(rev("rev-1"), descends, lambda: None)
    assert taken.revision == "rev-1"
    assert why.startswith("replica(s) b (0123456789abcdef) run another rollout policy than this one")
    assert a.record.read() is None, "nothing is recorded while the replicas disagree"


def test_a_policy_fingerprint_changes_with_the_policy() -> None:
    single = RolloutPolicy.single_wave()
    assert policy_fingerprint(single) == policy_fingerprint(RolloutPolicy.single_wave())
    assert policy_fingerprint(single) != policy_fingerprint(RolloutPolicy(single.waves, rollback=False))


def test_a_record_naming_a_commit_the_repository_does_not_hold_is_replaced_not_followed() -> None:
    home = MemoryKube("home")
    forged = "f" * 40
    replica(home, "x").record.write(forged, POLICY, None)  # written by hand: a commit nobody pushed
    a = replica(home, "a")
    _, why = a.settle(rev("rev-1"), descends, lambda: None)
    assert "are not on one line of history" in why, "while the repository is said to hold it"
    taken, why = a.settle(rev("rev-1"), descends, lambda: None, holds=lambda r: r != forged)
    assert (taken.revision, why) == ("rev-1", "")
    record = a.record.read()
    assert record is not None
    assert (record.revision, record.set_by) == ("rev-1", "a")
