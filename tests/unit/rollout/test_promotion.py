"""Manual gates decided from recorded states: who may promote which revision at which wave, how many
people a wave needs, what an abort names and what it ends."""

from __future__ import annotations

import pytest

from syncer.config.rollout import WaveGate
from syncer.config.two_person import TwoPersonRule
from syncer.domain.gates import Abort, AwaitingPromotion, PromotedBy, Promotion
from syncer.domain.selectors import LabelSelector
from syncer.domain.sync_state import ClusterSyncState, RetryRequest, SyncPhase
from syncer.errors import GateRefused, RevisionNotNamed
from syncer.rollout import Decision, Wave
from syncer.rollout.promotion import (
    abort_target,
    judge_abort,
    judge_promotion,
    people_needed,
    promotion_target,
    with_promoter,
)

REV = "3f2a9c1d" + "0" * 32
OLD = "a1b2c3d4" + "0" * 32
WAVE = Wave(1, "eu", ("eu-1", "eu-2"), WaveGate(manual=True))


def _waiting(name: str, revision: str = REV) -> ClusterSyncState:
    return ClusterSyncState(name, OLD, SyncPhase.HEALTHY, awaiting=AwaitingPromotion("eu", revision, 1.0))


def test_an_automatic_wave_is_never_held_and_a_started_one_is_not_held_again() -> None:
    states = {"eu-1": ClusterSyncState("eu-1", OLD), "eu-2": ClusterSyncState("eu-2", OLD)}
    assert judge_promotion(Wave(1, "eu", ("eu-1", "eu-2"), WaveGate()), states, REV).open
    assert not judge_promotion(WAVE, states, REV).open
    states["eu-2"] = ClusterSyncState("eu-2", REV, SyncPhase.APPLYING)
    assert judge_promotion(WAVE, states, REV).reason == "already started"


def test_only_a_promotion_of_the_wave_and_revision_counts_and_people_are_counted_once() -> None:
    other = Promotion("us", REV, (PromotedBy("alice"),))
    states = {"eu-1": ClusterSyncState("eu-1", OLD, promotion=other)}
    assert not judge_promotion(WAVE, states, REV).open
    one = Promotion("eu", REV, (PromotedBy("alice"), PromotedBy("alice")))
    states = {"eu-1": ClusterSyncState("eu-1", OLD, promotion=one)}
    check = judge_promotion(WAVE, states, REV, needed=2)
    assert (check.open, check.reason) == (
        False,
        f"waiting for promote of {REV[:12]} at wave eu (1 of 2 distinct people: alice)",
    )
    states["eu-2"] = ClusterSyncState("eu-2", OLD, promotion=Promotion("eu", REV, (PromotedBy("bob"),)))
    check = judge_promotion(WAVE, states, REV, needed=2)
    assert (check.open, check.people) == (True, ("alice", "bob"))


def test_people_needed_is_the_most_signers_of_a_cluster_rule_over_the_wave() -> None:
    prod = LabelSelector.from_dict({"matchLabels": {"tier": "prod"}})
    rules = (
        TwoPersonRule("paths", paths=("clusters/**",), signers=4),
        TwoPersonRule("prod", signers=3, clusters=prod),
    )
    assert people_needed(rules, {"eu-1": {"tier": "prod"}}) == 3
    assert people_needed(rules, {"eu-1": {"tier": "dev"}}) == 1


def test_a_promote_must_name_the_waiting_revision() -> None:
    states = {"eu-1": _waiting("eu-1"), "eu-2": _waiting("eu-2"), "us-1": ClusterSyncState("us-1", OLD)}
    assert promotion_target(states, "eu", REV[:7]) == (REV, ("eu-1", "eu-2"))
    with pytest.raises(RevisionNotNamed, match=f"wave eu waits for promote of {REV[:12]}, not {OLD[:12]}"):
        promotion_target(states, "eu", OLD[:12])
    with pytest.raises(RevisionNotNamed, match="'3f2a' does not name"):  # too short a prefix names nothing
        promotion_target(states, "eu", "3f2a")
    with pytest.raises(GateRefused, match="wave us waits for no promotion"):
        promotion_target(states, "us", REV)


def test_a_second_person_is_added_and_a_promotion_of_another_revision_replaced() -> None:
    first = with_promoter(Promotion(), "eu", REV, PromotedBy("alice", 1.0))
    second = with_promoter(first, "eu", REV, PromotedBy("bob", 2.0))
    assert second.people == ("alice", "bob")
    assert with_promoter(second, "eu", REV, PromotedBy("alice", 3.0)).people == ("bob", "alice")
    assert with_promoter(second, "eu", OLD, PromotedBy("carol")).people == ("carol",)


def test_an_abort_names_the_revision_in_flight() -> None:
    states = {
        "canary": ClusterSyncState("canary", REV, SyncPhase.HEALTHY),
        "eu-1": ClusterSyncState("eu-1", REV, SyncPhase.APPLIED),
        "us-1": ClusterSyncState("us-1", OLD, SyncPhase.HEALTHY),
    }
    assert abort_target(states) == (REV, ("canary", "eu-1"))
    assert abort_target(states, REV[:8]) == (REV, ("canary", "eu-1"))
    with pytest.raises(RevisionNotNamed, match="in flight is"):
        abort_target(states, OLD)  # healthy everywhere it is: not in flight
    states["us-1"] = _waiting("us-1", OLD)
    with pytest.raises(GateRefused, match="several revisions are in flight"):
        abort_target(states)
    with pytest.raises(GateRefused, match="no revision is in flight"):
        abort_target({"us-1": ClusterSyncState("us-1", OLD, SyncPhase.HEALTHY)})


def test_an_abort_rolls_back_the_clusters_on_it_halts_a_wave_without_them_and_a_later_retry_lifts_it() -> (
    None
):
    abort = Abort(REV, "ops", "latency", 10.0)
    states = {
        "eu-1": ClusterSyncState("eu-1", REV, SyncPhase.APPLIED, abort=abort),
        "eu-2": ClusterSyncState("eu-2", OLD, SyncPhase.HEALTHY),
    }
    verdict = judge_abort(WAVE, states, REV)
    assert verdict is not None
    assert (verdict.decision, verdict.failed, verdict.aborted) == (Decision.ROLLBACK, ("eu-1",), True)
    assert verdict.reason.startswith("aborted by ops at ")
    assert verdict.reason.endswith(": latency")
    assert judge_abort(WAVE, states, OLD) is None
    states["eu-1"] = ClusterSyncState("eu-1", OLD, SyncPhase.ROLLED_BACK, abort=abort)
    halted = judge_abort(WAVE, states, REV)
    assert halted is not None
    assert halted.decision is Decision.HALT
    before = RetryRequest(REV, "ops", "early", 5.0)
    assert judge_abort(WAVE, {"eu-1": ClusterSyncState("eu-1", abort=abort, retry=before)}, REV) is not None
    after = RetryRequest("", "ops", "fixed", 11.0)
    assert judge_abort(WAVE, {"eu-1": ClusterSyncState("eu-1", abort=abort, retry=after)}, REV) is None
