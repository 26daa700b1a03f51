"""A failed wave's rollback meets a person's hold, through in-memory clusters: a cluster a person
suspended, or pinned to another revision, while its wave was in flight is not rolled back (the one
decision ``held_now``, asked by every writer), and the report and events say so instead of telling
a rollback that did not happen; a window that closed meanwhile does not hold a rollback."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC

from syncer.config.windows import MaintenanceWindow, WindowKind
from syncer.domain.progress import PassEvent, Step
from syncer.domain.selectors import LabelSelector
from syncer.domain.sync_state import Pin, Suspension, SyncPhase
from syncer.errors import ServerError
from syncer.rollout.moves import RolloutOutcome
from syncer.status.acts import PersonActs
from tests.support.unfenced import unfenced_pass
from tests.unit.engine.test_fleet_pass import STATE_NAMESPACE, Rig, fleet, options


def acts(rig: Rig, cluster: str) -> PersonActs:
    return PersonActs(rig.clusters[cluster], STATE_NAMESPACE)


def test_a_canary_suspended_while_its_wave_fails_is_not_rolled_back_and_the_report_says_so() -> None:
    rig = Rig()
    rig.revisions.push(fleet("rev-1"))
    assert rig.run().synced

    def tell(event: PassEvent) -> None:
        rig.events.append(event)
        if (event.step, event.cluster, event.revision) == (Step.APPLIED, "canary", "rev-2"):
            # Freeze for an incident while the canary's gate waits for its health.
            acts(rig, "canary").record_suspension(Suspension("INC-1", "ops", 1.8e9))

    rig.fleet_pass.listener = tell
    rig.revisions.push(fleet("rev-2", never_ready=True))
    before = rig.applies()
    result = rig.run()

    assert result.report is not None
    assert result.report.outcome is RolloutOutcome.HALTED, result.report
    assert "canary: not rolled back while suspended: canary: suspended by ops" in result.report.message
    # rev-2's own apply went out before the suspension; nothing after it, a rollback neither.
    assert rig.applies() == {**before, "canary": before["canary"] + 1}
    assert rig.steps(Step.ROLLED_BACK, Step.ROLLING_BACK) == []
    assert ("canary", "canary", Step.CLUSTER_SUSPENDED) in rig.steps(Step.CLUSTER_SUSPENDED)
    state = rig.state("canary")
    assert (state.revision, state.phase) == ("rev-2", SyncPhase.FAILED)


def test_a_pinned_revision_that_fails_is_not_rolled_back_to_the_revision_it_was_pinned_away_from() -> None:
    rig = Rig()
    rig.revisions.push(fleet("rev-1"))
    assert rig.run().synced
    rig.revisions.push(fleet("rev-2"))
    assert rig.run().synced
    acts(rig, "eu-1").record_pin(Pin("rev-1", "ops", "orders latency", 1.8e9))
    rig.clusters["eu-1"].fail[("apply", "Namespace", "app")] = ServerError("the apiserver is overloaded")
    rig.run()

    state = rig.state("eu-1")
    assert (state.revision, state.phase) == ("rev-1", SyncPhase.FAILED)
    assert rig.clusters["eu-1"].count("apply", "Namespace", "app") == 2 + 3, "rev-1 tried, rev-2 never again"
    assert [e.reason for e in rig.events if e.step is Step.ROLLED_BACK] == []
    assert [e.cluster for e in rig.events if e.step is Step.CLUSTER_PINNED].count("eu-1") >= 2


def test_a_rollback_is_not_held_by_a_window_that_closed_since_its_wave_started() -> None:
    # A window is no person's hold: the rollback undoes a change made while the window was open.
    canary_frozen = MaintenanceWindow(
        "freeze",
        WindowKind.DENY,
        "* * * * *",
        180.0,
        UTC,
        LabelSelector.from_dict({"matchLabels": {"tier": "canary"}}),
    )
    rig = Rig()
    chosen = replace(options(), rollout=replace(options().rollout, windows=(canary_frozen,)))
    rig.fleet_pass = unfenced_pass(rig.revisions, rig.clusters.__getitem__, chosen, rig.events.append)
    acts(rig, "canary").record_window_override("release", 4e9)
    rig.revisions.push(fleet("rev-1"))
    assert rig.run().synced

    def tell(event: PassEvent) -> None:
        rig.events.append(event)
        if (event.step, event.cluster, event.revision) == (Step.APPLIED, "canary", "rev-2"):
            acts(rig, "canary").record_window_override("", 0.0)  # the override is cleared mid-wave

    rig.fleet_pass.listener = tell
    rig.revisions.push(fleet("rev-2", never_ready=True))
    result = rig.run()
    assert result.report is not None
    assert result.report.outcome is RolloutOutcome.ROLLED_BACK, result.report
    state = rig.state("canary")
    assert (state.revision, state.phase) == ("rev-1", SyncPhase.ROLLED_BACK)
