"""Going back is as fast as the clusters become healthy, on the real 3-cluster fleet: a failed wave's
automatic rollback and a person's pin (``syncer rollback``) wait for health alone, not the waves'
bake and analysis, unless the policy asks for them (``rollbackChecks``). The waves bake 24 s here (8 s
in a person's pin); no RedisCluster controller runs (a RedisCluster never becomes Ready: the failing
revision)."""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path

import pytest

from syncer.config.rollout import RolloutPolicy, WaveGate
from syncer.domain.progress import PassEvent, Step
from syncer.domain.sync_state import Pin, SyncPhase
from syncer.engine.pinned import roll_pins
from syncer.engine.rollout import FleetRollout
from syncer.engine.rollout_model import RolloutOptions
from syncer.kube import ClusterClient
from syncer.rollout.moves import RolloutOutcome
from syncer.status.acts import PersonActs
from tests.integration.engine.test_failed_before import Repo, clients, prefix, state
from tests.support.fleet_repo import canary_then_rest
from tests.support.unfenced import UNFENCED_HOOKS

pytestmark = pytest.mark.integration
__all__ = ["clients", "prefix"]  # fixtures

# Long enough that a rollback which baked is told from one that did not (that one takes a few seconds).
BAKE = 24.0


def rollout(
    clients: dict[str, ClusterClient], prefix: str, *, bake: float, checks: bool = False, log: list[PassEvent]
) -> FleetRollout:
    policy: RolloutPolicy = canary_then_rest(WaveGate(max_concurrent=2, health_timeout=2, bake=bake))
    options = RolloutOptions(
        rollout=replace(policy, rollback_checks=checks), state_namespace=f"{prefix}-state", health_poll=0.5
    )
    return FleetRollout(clients, options, listener=log.append, hooks=UNFENCED_HOOKS)


def test_a_failed_waves_rollback_waits_for_health_not_for_the_bake(
    clients: dict[str, ClusterClient], prefix: str, tmp_path: Path
) -> None:
    repo = Repo(tmp_path / "repo", prefix)
    log: list[PassEvent] = []
    first = repo.write("rev-1")
    assert rollout(clients, prefix, bake=0, log=log).sync(first).outcome is RolloutOutcome.APPLIED
    bad = repo.write("rev-2", redis=True)  # never Ready: fails after the 2 s health timeout

    started = time.monotonic()
    report = rollout(clients, prefix, bake=BAKE, log=log).sync(bad, last_good=first)
    took = time.monotonic() - started
    assert report.outcome is RolloutOutcome.ROLLED_BACK, report
    assert took < BAKE / 2, f"the rollback took {took:.1f}s: it baked"
    assert (state(clients["canary"], prefix).revision, state(clients["canary"], prefix).phase) == (
        "rev-1",
        SyncPhase.ROLLED_BACK,
    )
    [going] = [e for e in log if e.step is Step.ROLLING_BACK]
    assert going.reason == "health only: no bake, no analysis"


def test_a_persons_rollback_waits_for_health_unless_the_policy_asks_for_checks(
    clients: dict[str, ClusterClient], prefix: str, tmp_path: Path
) -> None:
    repo = Repo(tmp_path / "repo", prefix)
    log: list[PassEvent] = []
    first, second = repo.write("rev-1"), repo.write("rev-2")  # the Namespace's label differs
    fleets = {"rev-1": first, "rev-2": second}
    for fleet in (first, second):
        assert rollout(clients, prefix, bake=0, log=log).sync(fleet).outcome is RolloutOutcome.APPLIED
    pins = dict.fromkeys(clients, "rev-1")

    def pin(to: Pin) -> None:
        for name in pins:
            PersonActs(clients[name], f"{prefix}-state").record_pin(to)

    def pinned_back(checks: bool) -> float:
        going = rollout(clients, prefix, bake=BAKE / 3, checks=checks, log=log)
        going.read_states()
        started = time.monotonic()
        roll_pins(going, pins, fleets.get)
        took = time.monotonic() - started
        assert {n: state(c, prefix).revision for n, c in clients.items()} == pins
        return took

    pin(Pin("rev-1", "ops", "bad release", time.time()))
    fast = pinned_back(checks=False)
    assert fast < BAKE / 3, f"the pinned rollback took {fast:.1f}s: it baked"
    pin(Pin())  # resumed: back on rev-2 for the second measurement
    assert rollout(clients, prefix, bake=0, log=log).sync(second).outcome is RolloutOutcome.APPLIED
    pin(Pin("rev-1", "ops", "again", time.time()))
    slow = pinned_back(checks=True)
    assert slow >= 2 * BAKE / 3, f"with rollbackChecks the pinned rollback bakes each wave: {slow:.1f}s"
