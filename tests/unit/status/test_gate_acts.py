"""The manual gate a wave waits at, kept in the state, and a person's promotion and abort, kept
beside it: each read back as written, a damaged record opening no gate and aborting nothing."""

from __future__ import annotations

import json
from dataclasses import asdict

from syncer.domain.gates import Abort, AwaitingPromotion, PromotedBy, Promotion
from syncer.domain.sync_state import ClusterSyncState, SyncPhase
from syncer.status import decode, encode
from syncer.status.acts import ABORT_KEY, PROMOTION_KEY, with_acts


def test_the_awaited_gate_is_kept_in_the_state_and_the_acts_are_not() -> None:
    state = ClusterSyncState(
        "eu-1",
        "abc",
        SyncPhase.HEALTHY,
        awaiting=AwaitingPromotion("eu", "def", 12.0),
        promotion=Promotion("eu", "def", (PromotedBy("alice", 1.0),)),
        abort=Abort("def", "ops", "latency", 2.0),
    )
    text = encode(state)
    assert "promotion" not in json.loads(text)["state"]
    assert "abort" not in json.loads(text)["state"]
    back = decode("eu-1", text)
    assert back.awaiting == AwaitingPromotion("eu", "def", 12.0)
    assert (back.promotion, back.abort) == (Promotion(), Abort())


def test_promotions_and_aborts_are_read_from_beside_the_state() -> None:
    promotion = Promotion("eu", "def", (PromotedBy("alice", 1.0, "checked"), PromotedBy("bob", 2.0)))
    abort = Abort("def", "ops", "latency", 3.0)
    configmap = {"data": {PROMOTION_KEY: json.dumps(asdict(promotion)), ABORT_KEY: json.dumps(asdict(abort))}}
    state = with_acts(ClusterSyncState("eu-1"), configmap)
    assert (state.promotion, state.abort) == (promotion, abort)
    assert state.promotion.people == ("alice", "bob")


def test_a_damaged_promotion_opens_no_gate_and_a_damaged_abort_aborts_nothing() -> None:
    damaged = {"wave": "eu", "revision": "def", "promoters": {"by": "alice"}}
    configmap = {"data": {PROMOTION_KEY: json.dumps(damaged), ABORT_KEY: "{not json"}}
    state = with_acts(ClusterSyncState("eu-1"), configmap)
    assert (state.promotion, state.abort) == (Promotion(), Abort())
