from __future__ import annotations

from syncer.controller.model import RolloutStep, Strategy
from syncer.controller.upgrade import (
    Phase,
    RolloutState,
    ShardObservation,
    TemplateChoice,
    decide,
    step_counts,
)

STRATEGY = Strategy(
    steps=(RolloutStep(pods=1, pause=10.0), RolloutStep(percent=50, pause=5.0)), step_timeout=30.0
)


def shard(hash_: str, updated: int, ready: int = 4, settled: bool = True) -> ShardObservation:
    return ShardObservation(True, hash_, settled, 4, updated, ready)


def test_step_counts_end_with_every_pod_and_never_go_down() -> None:
    assert step_counts(STRATEGY, 4) == [(1, 10.0), (2, 5.0), (4, 0.0)]
    assert step_counts(Strategy(), 3) == [(3, 0.0)]
    # 10% of 4 rounds up to one pod; a later smaller step cannot move the count back.
    odd = Strategy(
        steps=(RolloutStep(percent=10, pause=1.0), RolloutStep(pods=1, pause=3.0), RolloutStep(percent=100))
    )
    assert step_counts(odd, 4) == [(1, 3.0), (4, 0.0)]


def test_no_rollout_while_the_statefulsets_run_the_desired_template() -> None:
    decision = decide(STRATEGY, "new", pods=4, state=None, shards=[shard("new", 4)], now=0.0)
    assert (decision.template, decision.partition, decision.state) == (TemplateChoice.DESIRED, 0, None)
    created = decide(STRATEGY, "new", pods=4, state=None, shards=[ShardObservation(False)], now=0.0)
    assert created.partition == 0
    assert created.state is None


def test_a_new_template_starts_at_the_first_partition() -> None:
    decision = decide(STRATEGY, "new", pods=4, state=None, shards=[shard("old", 0)], now=100.0)
    assert decision.template == TemplateChoice.DESIRED
    assert decision.partition == 3
    assert decision.state == RolloutState("new", Phase.PROGRESSING, 0, 3, 3, 100.0)
    assert decision.event is not None
    assert decision.event[0] == "RolloutStarted"


def test_a_step_bakes_for_its_pause_before_the_next_begins() -> None:
    state = RolloutState("new", Phase.PROGRESSING, 0, 3, 3, 100.0)
    waiting = decide(STRATEGY, "new", pods=4, state=state, shards=[shard("new", 0, ready=3)], now=101.0)
    assert waiting.state is not None
    assert waiting.state.phase == Phase.PROGRESSING
    assert waiting.partition == 3

    baking = decide(STRATEGY, "new", pods=4, state=state, shards=[shard("new", 1)], now=102.0)
    assert baking.state is not None
    assert (baking.state.phase, baking.state.step_ready) == (Phase.BAKING, 102.0)
    still = decide(STRATEGY, "new", pods=4, state=baking.state, shards=[shard("new", 1)], now=111.9)
    assert still.state == baking.state
    assert still.partition == 3
    assert still.requeue_after is not None
    assert 0 < still.requeue_after <= 0.1 + 1e-9

    moved = decide(STRATEGY, "new", pods=4, state=baking.state, shards=[shard("new", 1)], now=112.0)
    assert moved.partition == 2
    assert moved.state == RolloutState("new", Phase.PROGRESSING, 1, 3, 2, 112.0)
    assert moved.event is not None
    assert moved.event[0] == "RolloutStep"


def test_a_step_is_not_done_until_every_shard_has_observed_it() -> None:
    state = RolloutState("new", Phase.PROGRESSING, 0, 3, 3, 100.0)
    shards = [shard("new", 1), shard("new", 1, settled=False)]
    decision = decide(STRATEGY, "new", pods=4, state=state, shards=shards, now=101.0)
    assert decision.state is not None
    assert decision.state.phase == Phase.PROGRESSING


def test_the_last_step_completes_the_rollout() -> None:
    state = RolloutState("new", Phase.PROGRESSING, 2, 3, 0, 100.0)
    baking = decide(STRATEGY, "new", pods=4, state=state, shards=[shard("new", 4)], now=101.0)
    assert baking.state is not None
    done = decide(STRATEGY, "new", pods=4, state=baking.state, shards=[shard("new", 4)], now=101.0)
    assert done.state is not None
    assert (done.state.phase, done.partition) == (Phase.COMPLETE, 0)
    again = decide(STRATEGY, "new", pods=4, state=done.state, shards=[shard("new", 4)], now=500.0)
    assert (again.state, again.partition, again.event) == (done.state, 0, None)


def test_a_step_past_its_timeout_reverts_when_configured() -> None:
    state = RolloutState("new", Phase.PROGRESSING, 0, 3, 3, 100.0)
    decision = decide(STRATEGY, "new", pods=4, state=state, shards=[shard("new", 1, ready=3)], now=130.0)
    assert decision.template == TemplateChoice.REVERT
    assert decision.partition == 0
    assert decision.state is not None
    assert decision.state.phase == Phase.REVERTED
    assert "step 1/3" in decision.state.message
    # Afterwards the StatefulSets keep what they run, until the spec asks for another template.
    after = decide(STRATEGY, "new", pods=4, state=decision.state, shards=[shard("old", 4)], now=999.0)
    assert (after.template, after.partition, after.state) == (TemplateChoice.LIVE, 0, decision.state)
    fixed = decide(STRATEGY, "newer", pods=4, state=decision.state, shards=[shard("old", 4)], now=999.0)
    assert fixed.state is not None
    assert (fixed.state.template_hash, fixed.state.phase, fixed.partition) == ("newer", Phase.PROGRESSING, 3)


def test_a_step_past_its_timeout_holds_the_partition_without_revert() -> None:
    strategy = Strategy(steps=STRATEGY.steps, step_timeout=30.0, revert_on_failure=False)
    state = RolloutState("new", Phase.PROGRESSING, 1, 3, 2, 100.0)
    decision = decide(strategy, "new", pods=4, state=state, shards=[shard("new", 1, ready=3)], now=131.0)
    assert decision.template == TemplateChoice.DESIRED
    assert decision.partition == 2
    assert decision.state is not None
    assert decision.state.phase == Phase.FAILED
    held = decide(strategy, "new", pods=4, state=decision.state, shards=[shard("new", 1, ready=3)], now=999.0)
    assert (held.partition, held.state, held.event) == (2, decision.state, None)


def test_going_back_to_the_running_template_ends_a_failed_rollout() -> None:
    failed = RolloutState("bad", Phase.REVERTED, 0, 3, 0, 100.0, 101.0, "timed out")
    decision = decide(STRATEGY, "old", pods=4, state=failed, shards=[shard("old", 4)], now=200.0)
    assert (decision.state, decision.partition) == (None, 0)


def test_state_round_trips_through_the_status() -> None:
    state = RolloutState("abc", Phase.BAKING, 1, 3, 2, 1700000000.25, 1700000003.5, "step 2/3 baking")
    assert RolloutState.from_status(state.to_status()) == state
    assert RolloutState.from_status({"phase": "Baking"}) is None
    assert RolloutState.from_status(None) is None


def test_a_step_is_not_done_while_redis_is_unhealthy() -> None:
    state = RolloutState("new", Phase.PROGRESSING, 2, 3, 0, 100.0)
    held = decide(
        STRATEGY, "new", pods=4, state=state, shards=[shard("new", 4)], now=101.0, redis_ready=False
    )
    assert held.state is not None
    assert held.state.phase == Phase.PROGRESSING
    done = decide(STRATEGY, "new", pods=4, state=state, shards=[shard("new", 4)], now=101.0, redis_ready=True)
    assert done.state is not None
    assert done.state.phase == Phase.BAKING
