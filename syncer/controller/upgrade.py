"""Canary rollouts over StatefulSet partitions: a state machine. Pure: no I/O, time passed in.

A rollout starts when the pod template the spec asks for (its hash) differs from the template the
StatefulSets run. Each step lowers the partition of every shard's StatefulSet so that a given number of
pods per shard (the highest ordinals first) run the new template; the step is done when every shard
has that many updated pods and all its pods Ready, and then bakes for its pause. A final step to all
pods is implied. A step not done within the step timeout fails the rollout: later pods keep the old
template and, when the strategy says so, the template is reverted to the one the shard ran before.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

from syncer.controller.model import Strategy


class Phase(StrEnum):
    PROGRESSING = "Progressing"
    BAKING = "Baking"
    COMPLETE = "Complete"
    FAILED = "Failed"
    REVERTED = "Reverted"


class TemplateChoice(StrEnum):
    """Which pod template the StatefulSets get: the spec's, the one they run now, or their previous one."""

    DESIRED = "desired"
    LIVE = "live"
    REVERT = "revert"


def format_time(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_time(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


@dataclass(frozen=True)
class RolloutState:
    """Where a rollout is; kept in ``status.rollout`` so a restarted controller carries on."""

    template_hash: str
    phase: Phase
    step: int  # index into the step list, from 0
    steps: int
    partition: int
    step_started: float
    step_ready: float | None = None
    message: str = ""

    def to_status(self) -> dict[str, Any]:
        found: dict[str, Any] = {
            "templateHash": self.template_hash,
            "phase": self.phase.value,
            "step": self.step + 1,
            "steps": self.steps,
            "partition": self.partition,
            "stepStartedTime": format_time(self.step_started),
            "message": self.message,
        }
        if self.step_ready is not None:
            found["stepReadyTime"] = format_time(self.step_ready)
        return found

    @classmethod
    def from_status(cls, raw: Any) -> RolloutState | None:
        if not isinstance(raw, dict) or not raw.get("templateHash") or not raw.get("stepStartedTime"):
            return None
        try:
            return cls(
                template_hash=str(raw["templateHash"]),
                phase=Phase(raw.get("phase", Phase.PROGRESSING)),
                step=max(int(raw.get("step", 1)) - 1, 0),
                steps=int(raw.get("steps", 1)),
                partition=int(raw.get("partition", 0)),
                step_started=parse_time(str(raw["stepStartedTime"])),
                step_ready=parse_time(str(raw["stepReadyTime"])) if raw.get("stepReadyTime") else None,
                message=str(raw.get("message", "")),
            )
        except ValueError:
            return None

    @property
    def in_progress(self) -> bool:
        return self.phase in (Phase.PROGRESSING, Phase.BAKING)

    @property
    def failed(self) -> bool:
        return self.phase in (Phase.FAILED, Phase.REVERTED)


@dataclass(frozen=True)
class ShardObservation:
    """A shard's StatefulSet as last seen; ``exists`` False when it has not been created yet."""

    exists: bool
    template_hash: str = ""
    settled: bool = False  # status.observedGeneration == metadata.generation
    replicas: int = 0
    updated: int = 0
    ready: int = 0


@dataclass(frozen=True)
class UpgradeDecision:
    """What to do now: the template and partition to apply, the new state, when to look again."""

    template: TemplateChoice
    partition: int
    state: RolloutState | None
    requeue_after: float | None = None
    event: tuple[str, str] | None = None


def step_counts(strategy: Strategy, pods: int) -> list[tuple[int, float]]:
    """(updated pods per shard, pause) for each step, ending with every pod; counts never go down."""
    found: list[tuple[int, float]] = []
    for step in strategy.steps:
        count = step.pods if step.pods else math.ceil(pods * step.percent / 100)
        count = min(max(count, found[-1][0] if found else 1), pods)
        if found and found[-1][0] == count:
            found[-1] = (count, max(found[-1][1], step.pause))
        else:
            found.append((count, step.pause))
    if not found or found[-1][0] < pods:
        found.append((pods, 0.0))
    return found


def _step_done(shards: Sequence[ShardObservation], count: int, pods: int) -> bool:
    return all(s.exists and s.settled and s.updated >= count and s.ready >= pods for s in shards)


def decide(
    strategy: Strategy,
    desired_hash: str,
    *,
    pods: int,
    state: RolloutState | None,
    shards: Sequence[ShardObservation],
    now: float,
    redis_ready: bool = True,
) -> UpgradeDecision:
    """The next move of the rollout of ``desired_hash`` over ``shards`` of ``pods`` pods each.

    ``redis_ready`` False (the Redis cluster itself is not healthy) keeps a step from counting as
    done, whatever the pods say."""
    if state is not None and state.template_hash == desired_hash:
        if state.phase == Phase.REVERTED:
            return UpgradeDecision(TemplateChoice.LIVE, 0, state)
        if state.phase == Phase.FAILED:
            return UpgradeDecision(TemplateChoice.DESIRED, state.partition, state)
        if state.in_progress:
            return _progress(strategy, pods, state, shards, now, redis_ready=redis_ready)
        return UpgradeDecision(TemplateChoice.DESIRED, 0, state)
    existing = [s for s in shards if s.exists]
    if not existing or all(s.template_hash == desired_hash for s in existing):
        # The StatefulSets already run what the spec asks for: a rollout of another template is over.
        return UpgradeDecision(TemplateChoice.DESIRED, 0, None)
    counts = step_counts(strategy, pods)
    partition = pods - counts[0][0]
    started = RolloutState(desired_hash, Phase.PROGRESSING, 0, len(counts), partition, now)
    event = (
        "RolloutStarted",
        f"step 1/{len(counts)}: partition {partition}, {counts[0][0]} pod(s) per shard",
    )
    return UpgradeDecision(TemplateChoice.DESIRED, partition, started, _poll(strategy.step_timeout), event)


def _poll(remaining: float) -> float:
    return max(min(remaining, 5.0), 0.05)


def _progress(
    strategy: Strategy,
    pods: int,
    state: RolloutState,
    shards: Sequence[ShardObservation],
    now: float,
    *,
    redis_ready: bool,
) -> UpgradeDecision:
    counts = step_counts(strategy, pods)
    index = min(state.step, len(counts) - 1)
    count, pause = counts[index]
    partition = pods - count
    done = _step_done(shards, count, pods) and redis_ready
    label = f"step {index + 1}/{len(counts)}"
    if state.phase == Phase.BAKING and done and state.step_ready is not None:
        if now < state.step_ready + pause:
            return UpgradeDecision(
                TemplateChoice.DESIRED, partition, state, _poll(state.step_ready + pause - now)
            )
        if index == len(counts) - 1:
            complete = replace(state, phase=Phase.COMPLETE, partition=0, message="all pods updated and Ready")
            return UpgradeDecision(
                TemplateChoice.DESIRED, 0, complete, None, ("RolloutComplete", "all pods updated")
            )
        next_count = counts[index + 1][0]
        moved = RolloutState(
            state.template_hash, Phase.PROGRESSING, index + 1, len(counts), pods - next_count, now
        )
        message = (
            f"step {index + 2}/{len(counts)}: partition {pods - next_count}, {next_count} pod(s) per shard"
        )
        return UpgradeDecision(
            TemplateChoice.DESIRED,
            pods - next_count,
            moved,
            _poll(strategy.step_timeout),
            ("RolloutStep", message),
        )
    if done:
        baking = replace(
            state, phase=Phase.BAKING, step_ready=now, partition=partition, message=f"{label} baking"
        )
        return UpgradeDecision(TemplateChoice.DESIRED, partition, baking, 0.0 if pause <= 0 else _poll(pause))
    if now - state.step_started >= strategy.step_timeout:
        why = f"{label} (partition {partition}) did not get its pods Ready within {strategy.step_timeout:g}s"
        if strategy.revert_on_failure:
            reverted = replace(state, phase=Phase.REVERTED, partition=0, message=f"{why}; template reverted")
            return UpgradeDecision(
                TemplateChoice.REVERT, 0, reverted, None, ("RolloutReverted", reverted.message)
            )
        failed = replace(
            state, phase=Phase.FAILED, partition=partition, message=f"{why}; later pods left untouched"
        )
        return UpgradeDecision(
            TemplateChoice.DESIRED, partition, failed, None, ("RolloutFailed", failed.message)
        )
    # Not done: also covers a step whose pods fell out of Ready while baking; its timeout still runs.
    waiting = replace(state, phase=Phase.PROGRESSING, step_ready=None, partition=partition, message=label)
    return UpgradeDecision(
        TemplateChoice.DESIRED, partition, waiting, _poll(state.step_started + strategy.step_timeout - now)
    )
