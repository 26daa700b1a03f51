"""Waves across the real 3-cluster fleet: order, gates, halt and rollback, resume from cluster states.

No RedisCluster controller runs in these tests: Namespaces are healthy once they exist, and a
RedisCluster that nobody reconciles never becomes Ready, which is exactly the failing canary the gate
must catch.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from syncer.config.rollout import RolloutPolicy, WaveGate
from syncer.domain.objects import DesiredFleet
from syncer.domain.progress import PassEvent
from syncer.domain.sync_state import SyncPhase
from syncer.engine.diff import DiffOptions
from syncer.engine.rollout import FleetRollout
from syncer.engine.rollout_model import RolloutOptions
from syncer.errors import NotFound
from syncer.kube import ClusterClient
from syncer.rollout import Decision
from syncer.rollout.moves import RolloutOutcome
from syncer.status import StateStore
from tests.support.fleet_repo import FleetRepo, canary_then_rest
from tests.support.unfenced import UNFENCED_HOOKS

pytestmark = pytest.mark.integration


def policy(bake: float = 1.0, timeout: float = 60.0) -> RolloutPolicy:
    return canary_then_rest(WaveGate(max_concurrent=2, health_timeout=timeout, bake=bake))


class Repo(FleetRepo):
    """The fleet repository of these tests: the prefix's Namespace, and a RedisCluster on demand."""

    def write(self, revision: str, *, redis: bool) -> DesiredFleet:
        return self.write_documents(revision, [self.namespace(), *([self.redis_cluster()] if redis else [])])


def rollout(
    clients: dict[str, ClusterClient], prefix: str, rollout_policy: RolloutPolicy, log: list[PassEvent]
) -> FleetRollout:
    options = RolloutOptions(
        rollout=rollout_policy, diff=DiffOptions(), state_namespace=f"{prefix}-state", health_poll=0.5
    )
    return FleetRollout(clients, options, listener=log.append, hooks=UNFENCED_HOOKS)


def test_the_canary_is_applied_healthy_and_baked_before_the_next_wave(
    clients: dict[str, ClusterClient], prefix: str, tmp_path: Path
) -> None:
    repo = Repo(tmp_path / "repo", prefix)
    desired = repo.write("rev-1", redis=False)
    log: list[PassEvent] = []
    report = rollout(clients, prefix, policy(bake=2.0), log).sync(desired)
    assert report.outcome is RolloutOutcome.APPLIED, report
    assert [(w.name, sorted(w.clusters), w.decision) for w in report.waves] == [
        ("canary", ["canary"], Decision.PROCEED),
        ("rest", ["eu-1", "us-1"], Decision.PROCEED),
    ]
    states = {n: StateStore(c, f"{prefix}-state").load().state for n, c in clients.items()}
    assert all(
        s.revision == "rev-1" and s.phase is SyncPhase.HEALTHY and s.last_good == "rev-1"
        for s in states.values()
    )
    canary = states["canary"]
    for name in ("eu-1", "us-1"):
        assert states[name].applied_at >= canary.healthy_since + 2.0, (
            "the next wave started before the canary baked"
        )
    steps = [(p.wave, p.cluster, p.step) for p in log if p.step in {"applying", "gate-proceed"}]
    assert steps[:2] == [("canary", "canary", "applying"), ("canary", "", "gate-proceed")]


def test_a_second_sync_of_the_same_revision_writes_nothing(
    clients: dict[str, ClusterClient], prefix: str, tmp_path: Path
) -> None:
    desired = Repo(tmp_path / "repo", prefix).write("rev-1", redis=False)
    first = rollout(clients, prefix, policy(bake=0), []).sync(desired)
    assert first.outcome is RolloutOutcome.APPLIED
    log: list[PassEvent] = []
    again = rollout(clients, prefix, policy(bake=0), log).sync(desired)
    assert again.outcome is RolloutOutcome.UNCHANGED
    # Every wave passed before: its clusters are only looked at, not applied or judged again.
    assert {p.cluster for p in log if p.step == "health-checked"} == {"canary", "eu-1", "us-1"}
    assert not [p for p in log if p.step in {"applying", "already-applied", "gate-proceed"}]


def test_a_canary_that_never_becomes_ready_halts_and_rolls_back(
    clients: dict[str, ClusterClient], prefix: str, tmp_path: Path
) -> None:
    repo = Repo(tmp_path / "repo", prefix)
    good = repo.write("rev-good", redis=False)
    assert rollout(clients, prefix, policy(bake=0), []).sync(good).outcome is RolloutOutcome.APPLIED
    bad = repo.write("rev-bad", redis=True)

    log: list[PassEvent] = []
    report = rollout(clients, prefix, policy(bake=0, timeout=3), log).sync(bad, last_good=good)
    assert report.outcome is RolloutOutcome.ROLLED_BACK, report
    assert [w.name for w in report.waves] == ["canary"], "later waves must not start"
    assert "canary: not healthy 3s after apply" in report.message
    assert "rolled back to rev-good" in report.message

    canary = StateStore(clients["canary"], f"{prefix}-state").load().state
    assert canary.revision == "rev-good"
    assert canary.phase is SyncPhase.ROLLED_BACK
    assert "rev-bad" in canary.bad_revisions
    with pytest.raises(NotFound):
        clients["canary"].get("redis.syncer.dev/v1alpha1", "RedisCluster", "sessions", prefix)
    for name in ("eu-1", "us-1"):
        state = StateStore(clients[name], f"{prefix}-state").load().state
        assert (state.revision, state.phase) == ("rev-good", SyncPhase.HEALTHY)
        with pytest.raises(NotFound):
            clients[name].get("redis.syncer.dev/v1alpha1", "RedisCluster", "sessions", prefix)

    retry = rollout(clients, prefix, policy(bake=0, timeout=3), []).sync(bad, last_good=good)
    assert retry.outcome is RolloutOutcome.HALTED
    assert retry.message.startswith("canary: refused: failed before (content): not healthy 3s after apply")
    # The same objects under another commit id (a re-signed or re-wrapped commit) are refused too.
    rewrapped = replace(bad, revision="rev-bad-rewrapped")
    again = rollout(clients, prefix, policy(bake=0, timeout=3), []).sync(rewrapped, last_good=good)
    assert again.outcome is RolloutOutcome.HALTED
    assert again.message.startswith("canary: refused: failed before (content): not healthy 3s after apply")
    assert StateStore(clients["canary"], f"{prefix}-state").load().state.revision == "rev-good"


def test_without_rollback_a_failed_wave_halts_and_stays(
    clients: dict[str, ClusterClient], prefix: str, tmp_path: Path
) -> None:
    repo = Repo(tmp_path / "repo", prefix)
    good = repo.write("rev-good", redis=False)
    rollout(clients, prefix, policy(bake=0), []).sync(good)
    bad = repo.write("rev-bad", redis=True)
    no_rollback = replace(policy(bake=0, timeout=2), rollback=False)
    report = rollout(clients, prefix, no_rollback, []).sync(bad, last_good=good)
    assert report.outcome is RolloutOutcome.HALTED
    canary = StateStore(clients["canary"], f"{prefix}-state").load().state
    assert (canary.revision, canary.phase) == ("rev-bad", SyncPhase.FAILED)
    clients["canary"].get("redis.syncer.dev/v1alpha1", "RedisCluster", "sessions", prefix)
