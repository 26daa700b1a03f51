"""Maintenance windows in the pass, through in-memory clusters: a wave outside its window waits as a
whole and says why, a cluster already done is not held back, an override recorded in the cluster
lets it change, and drift repair waits for the window too."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC

import pytest

from syncer.config.windows import MaintenanceWindow, WindowKind
from syncer.domain.progress import Step, Waiting
from syncer.domain.selectors import LabelSelector
from syncer.domain.sync_state import SyncPhase
from syncer.engine.fleet_pass import FleetPass
from syncer.rollout.moves import RolloutOutcome
from syncer.status.acts import PersonActs
from tests.support.unfenced import unfenced_pass
from tests.unit.engine.test_fleet_pass import STATE_NAMESPACE, Rig, fleet, options

PROD = LabelSelector.from_dict({"matchLabels": {"tier": "prod"}})
ALWAYS = MaintenanceWindow("freeze", WindowKind.DENY, "* * * * *", 180.0, UTC, PROD)
NEW_YEAR = MaintenanceWindow("new-year", WindowKind.DENY, "0 0 1 1 *", 60.0, UTC, PROD)


class WindowRig(Rig):
    def __init__(self, window: MaintenanceWindow) -> None:
        self.window = window
        super().__init__()

    def new_pass(self) -> FleetPass:
        base = options()
        rollout = replace(base.rollout, windows=(self.window,))
        return unfenced_pass(
            self.revisions, self.clusters.__getitem__, replace(base, rollout=rollout), self.events.append
        )


@pytest.fixture
def frozen() -> WindowRig:
    return WindowRig(ALWAYS)


def test_a_wave_outside_its_window_waits_and_says_why_while_earlier_waves_go_on(frozen: WindowRig) -> None:
    frozen.revisions.push(fleet("rev-1"))
    result = frozen.run()
    assert result.report is not None
    assert result.report.outcome is RolloutOutcome.WAITING, result.report
    assert result.report.message.startswith("outside maintenance window: eu-1: deny window freeze is active")
    assert frozen.applies() == {"canary": 1, "eu-1": 0, "us-1": 0}
    assert sorted(frozen.steps(Step.WINDOW_CLOSED)) == [
        ("rest", "eu-1", Step.WINDOW_CLOSED),
        ("rest", "us-1", Step.WINDOW_CLOSED),
    ]
    waits = [e for e in frozen.events if e.step is Step.GATE_WAIT and e.waiting is Waiting.WINDOW]
    assert [e.wave for e in waits] == ["rest"]
    assert frozen.state("eu-1").window.startswith("deny window freeze is active")
    assert not result.synced

    # Nothing changes while it stays closed: the same wait, no write.
    writes = frozen.writes()
    again = frozen.run()
    assert again.report is not None
    assert again.report.outcome is RolloutOutcome.WAITING
    assert frozen.writes() == writes


def test_an_override_recorded_in_the_cluster_lets_it_change_and_is_reported(frozen: WindowRig) -> None:
    frozen.revisions.push(fleet("rev-1"))
    frozen.run()
    for name in ("eu-1", "us-1"):
        PersonActs(frozen.clusters[name], STATE_NAMESPACE).record_window_override("CVE fix", 4e9)
    result = frozen.run()
    assert result.report is not None
    assert result.report.outcome is RolloutOutcome.APPLIED, result.report
    assert sorted(frozen.steps(Step.WINDOW_OVERRIDDEN)) == [
        ("rest", "eu-1", Step.WINDOW_OVERRIDDEN),
        ("rest", "us-1", Step.WINDOW_OVERRIDDEN),
    ]
    state = frozen.state("eu-1")
    assert (state.phase, state.window) == (SyncPhase.HEALTHY, "")


def test_an_override_that_ended_no_longer_counts(frozen: WindowRig) -> None:
    frozen.revisions.push(fleet("rev-1"))
    for name in ("eu-1", "us-1"):
        PersonActs(frozen.clusters[name], STATE_NAMESPACE).record_window_override("yesterday's fix", 1.0)
    result = frozen.run()
    assert result.report is not None
    assert result.report.outcome is RolloutOutcome.WAITING


def test_drift_repair_waits_for_the_window_too() -> None:
    rig = WindowRig(NEW_YEAR)  # inactive now: everything rolls out
    rig.revisions.push(fleet("rev-1"))
    assert rig.run().synced
    for cluster in rig.clusters.values():
        cluster.delete("v1", "Namespace", "app")
    rig.window = ALWAYS
    rig.fleet_pass = rig.new_pass()
    rig.events.clear()
    repaired = rig.fleet_pass.heal(rig.stop)
    assert {cs.cluster for cs in repaired} == {"canary"}
    assert sorted(rig.steps(Step.WINDOW_CLOSED)) == [
        ("", "eu-1", Step.WINDOW_CLOSED),
        ("", "us-1", Step.WINDOW_CLOSED),
    ]


def test_a_window_that_is_not_active_lets_every_wave_through() -> None:
    rig = WindowRig(NEW_YEAR)
    rig.revisions.push(fleet("rev-1"))
    result = rig.run()
    assert result.synced, result.report
    assert rig.steps(Step.WINDOW_CLOSED) == []
    assert {e.cluster for e in rig.events if e.step is Step.WINDOW_OPEN} == {"canary", "eu-1", "us-1"}


def test_every_drift_repair_path_of_a_pass_waits_for_the_window() -> None:
    """The pass's own watch of passed waves and its look at a wave's done clusters go through the
    same repair path as the drift job: outside the window, found drift waits and is said to wait."""
    rig = WindowRig(NEW_YEAR)
    rig.revisions.push(fleet("rev-1"))
    assert rig.run().synced
    for cluster in rig.clusters.values():
        cluster.delete("v1", "Namespace", "app")
    rig.window = ALWAYS
    rig.fleet_pass = rig.new_pass()
    rig.events.clear()
    result = rig.run()
    assert result.report is not None
    repaired = {e.cluster for e in rig.events if e.step is Step.DRIFT_REPAIRED}
    assert repaired == {"canary"}, "only the cluster outside every window is repaired"
    waiting = sorted(e.cluster for e in rig.events if e.step is Step.DRIFT_REPAIR_WAITING)
    assert waiting == ["eu-1", "us-1"]
    assert all(e.waiting is Waiting.WINDOW for e in rig.events if e.step is Step.DRIFT_REPAIR_WAITING)
    assert rig.applies() == {"canary": 2, "eu-1": 1, "us-1": 1}, "eu-1 and us-1 were written in a window"


def test_a_cluster_that_passed_records_its_window_as_it_opens_and_closes() -> None:
    """What ``syncer status`` shows of a window is never stale: the watch over a passed wave keeps
    each cluster's recorded window current, and tells only a change."""
    rig = WindowRig(NEW_YEAR)
    rig.revisions.push(fleet("rev-1"))
    assert rig.run().synced
    assert rig.state("eu-1").window == ""
    rig.window = ALWAYS
    rig.fleet_pass = rig.new_pass()
    rig.run()
    assert rig.state("eu-1").window.startswith("deny window freeze is active")
    assert rig.state("canary").window == ""
    rig.events.clear()
    rig.run()
    assert rig.steps(Step.WINDOW_CLOSED) == [], "an unchanged window is not told again"
    rig.window = NEW_YEAR
    rig.fleet_pass = rig.new_pass()
    rig.run()
    assert rig.state("eu-1").window == ""
