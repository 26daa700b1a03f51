"""The diff holds what the sync will hold: a wave waits as a whole for a suspended or windowed
cluster, or at its manual gate, and every later wave waits behind it; a cluster pinned to another
revision is held alone (the sync leaves it out of the revision's waves); changes stay listed."""

from __future__ import annotations

from datetime import UTC

from syncer.config.rollout import RolloutPolicy, WaveGate, WavePolicy
from syncer.config.windows import MaintenanceWindow, WindowKind
from syncer.domain.gates import PromotedBy, Promotion
from syncer.domain.objects import ClusterManifests, DesiredFleet, ObjectKey
from syncer.domain.plans import Action, Change, ClusterPlan, WavePlan
from syncer.domain.selectors import LabelSelector
from syncer.domain.sync_state import ClusterSyncState, Pin, Suspension, SyncPhase
from syncer.engine.diff_holds import hold_waves
from syncer.rollout.waves import plan_waves

REV, OLD = "b" * 40, "a" * 40
LABELS = {"canary": {"tier": "canary"}, "eu-1": {"region": "eu"}, "eu-2": {"region": "eu"}, "us-1": {}}


def _policy(manual: bool = False, windows: tuple[MaintenanceWindow, ...] = ()) -> RolloutPolicy:
    def wave(name: str, percent: float, labels: dict[str, str] | None) -> WavePolicy:
        selector = LabelSelector.from_dict({"matchLabels": labels}) if labels else None
        return WavePolicy(name, percent, selector, WaveGate(manual=manual and name == "eu"))

    waves = (wave("canary", 1, {"tier": "canary"}), wave("eu", 60, {"region": "eu"}), wave("rest", 100, None))
    return RolloutPolicy(waves, windows=windows)


def _fleet() -> DesiredFleet:
    return DesiredFleet(REV, {n: ClusterManifests.of(n, (), labels) for n, labels in LABELS.items()})


def _plans(policy: RolloutPolicy) -> tuple[WavePlan, ...]:
    waves = plan_waves(LABELS, policy)
    key = ObjectKey("", "redis.syncer.dev", "RedisCluster", "ns", "r")
    change = (Change(key, "redis.syncer.dev/v1alpha1", Action.UPDATE),)
    return tuple(WavePlan(w.name, tuple(ClusterPlan(n, change) for n in sorted(w.clusters))) for w in waves)


def _states(**changed: ClusterSyncState) -> dict[str, ClusterSyncState]:
    states = {n: ClusterSyncState(n, OLD, SyncPhase.HEALTHY, last_good=OLD) for n in LABELS}
    states["canary"] = ClusterSyncState("canary", REV, SyncPhase.HEALTHY, last_good=REV)  # passed
    return {**states, **changed}


def _held(
    policy: RolloutPolicy, states: dict[str, ClusterSyncState], now: float = 0.0
) -> dict[str, tuple[str, str]]:
    waves = hold_waves(_plans(policy), plan_waves(LABELS, policy), _fleet(), states, (policy, (), now))
    return {c.cluster: (c.hold, c.blocked) for w in waves for c in w.clusters}


def test_nothing_held_when_nothing_holds() -> None:
    assert set(_held(_policy(), _states()).values()) == {("", "")}


def test_a_suspended_cluster_holds_its_whole_wave_and_every_later_wave() -> None:
    suspended = replace_state("eu-2", suspension=Suspension("incident 7", "ops", 1.0))
    held = _held(_policy(), _states(**{"eu-2": suspended}))
    assert held["canary"] == ("", "")
    assert held["eu-2"][0] == "suspended"
    assert "incident 7" in held["eu-2"][1]
    assert held["eu-1"][0] == "wave"
    assert held["eu-1"][1].startswith("its wave waits: eu-2: suspended: suspended by ops")
    assert held["us-1"][0] == "wave"
    assert held["us-1"][1].startswith("the sync waits at wave eu: eu-2: suspended")


def test_a_cluster_pinned_to_another_revision_is_held_alone() -> None:
    pinned = replace_state("us-1", pin=Pin(OLD, "ops", "bad release", 1.0))
    held = _held(_policy(), _states(**{"us-1": pinned}))
    assert held["us-1"][0] == "pinned"
    assert (held["eu-1"], held["eu-2"]) == (("", ""), ("", ""))


def test_a_pinned_cluster_holds_neither_its_wave_nor_the_later_ones() -> None:
    # The sync leaves eu-2 out of the revision's waves (it gets its pinned revision): eu-1 and us-1
    # take the revision in the same pass.
    pinned = replace_state("eu-2", pin=Pin(OLD, "ops", "bad release", 1.0))
    held = _held(_policy(), _states(**{"eu-2": pinned}))
    assert held["eu-2"] == ("pinned", f"pinned to {OLD[:12]} by ops at 1970-01-01 00:00 UTC: bad release")
    assert {n: held[n] for n in ("canary", "eu-1", "us-1")} == dict.fromkeys(
        ("canary", "eu-1", "us-1"), ("", "")
    )
    both = replace_state("eu-2", pin=pinned.pin, suspension=Suspension("incident 7", "ops", 1.0))
    held = _held(_policy(), _states(**{"eu-2": both}))
    assert held["eu-2"][0] == "suspended", "its pinned rollback waits for the suspension"
    assert held["us-1"] == ("", "")


def test_a_manual_gate_holds_its_wave_until_promoted_and_then_not() -> None:
    held = _held(_policy(manual=True), _states())
    assert {held[n][0] for n in ("eu-1", "eu-2", "us-1")} == {"awaiting-promotion", "wave"}
    assert held["eu-1"] == (
        "awaiting-promotion",
        f"waiting for promote of {REV[:12]} at wave eu (`syncer promote`)",
    )
    promoted = replace_state("eu-1", promotion=Promotion("eu", REV, (PromotedBy("ops", 1.0),)))
    assert set(_held(_policy(manual=True), _states(**{"eu-1": promoted})).values()) == {("", "")}


def test_a_closed_window_holds_the_clusters_it_applies_to() -> None:
    # A deny window over the whole day, for the eu clusters only.
    deny = MaintenanceWindow(
        "freeze",
        WindowKind.DENY,
        "0 0 * * *",
        86400.0,
        UTC,
        LabelSelector.from_dict({"matchLabels": {"region": "eu"}}),
    )
    held = _held(_policy(windows=(deny,)), _states(), now=1_796_000_000.0)
    assert held["eu-1"][0] == "window"
    assert held["us-1"][0] == "wave"
    assert held["canary"] == ("", "")


def test_a_cluster_already_on_the_revision_holds_nothing() -> None:
    done = ClusterSyncState(
        "eu-2", REV, SyncPhase.HEALTHY, last_good=REV, suspension=Suspension("x", "ops", 1.0)
    )
    assert _held(_policy(), _states(**{"eu-2": done}))["eu-1"] == ("", "")


def replace_state(name: str, **fields: object) -> ClusterSyncState:
    from dataclasses import replace

    return replace(ClusterSyncState(name, OLD, SyncPhase.HEALTHY, last_good=OLD), **fields)  # type: ignore[arg-type]
