"""The steps the engine tells for people to be notified, through in-memory clusters: a rollout's start
and end (once each, however many passes it takes), each cluster rolled back, and a suspension's
beginning and end as the clusters record them."""

from __future__ import annotations

from syncer.domain.progress import Step
from tests.unit.engine.test_fleet_pass import Rig, fleet
from tests.unit.engine.test_suspension_pass import suspend


def test_a_rollout_is_told_started_before_its_first_wave_and_finished_after_its_last() -> None:
    rig = Rig()
    rig.revisions.push(fleet("rev-1"))
    rig.run()
    told = [
        (e.step, e.wave, e.revision)
        for e in rig.events
        if e.step in {Step.ROLLOUT_STARTED, Step.ROLLOUT_FINISHED}
    ]
    assert told == [(Step.ROLLOUT_STARTED, "canary", "rev-1"), (Step.ROLLOUT_FINISHED, "", "rev-1")]
    assert rig.events.index(next(e for e in rig.events if e.step is Step.ROLLOUT_STARTED)) < rig.events.index(
        next(e for e in rig.events if e.step is Step.APPLYING)
    )
    finished = next(e for e in rig.events if e.step is Step.ROLLOUT_FINISHED)
    assert finished.reason == "2 wave(s) healthy"
    # A pass with nothing to do tells neither again.
    rig.run()
    assert rig.steps(Step.ROLLOUT_STARTED, Step.ROLLOUT_FINISHED) == []


def test_a_rollout_that_spans_passes_is_told_started_once_and_finished_once() -> None:
    rig = Rig()
    rig.revisions.push(fleet("rev-1"))
    suspend(rig, "eu-1")
    rig.run()
    assert rig.steps(Step.ROLLOUT_STARTED, Step.ROLLOUT_FINISHED) == [("canary", "", Step.ROLLOUT_STARTED)]
    suspend(rig, "eu-1", "")
    rig.run()
    assert rig.steps(Step.ROLLOUT_STARTED, Step.ROLLOUT_FINISHED) == [("", "", Step.ROLLOUT_FINISHED)]


def test_each_cluster_rolled_back_is_told_with_the_revision_it_is_back_on() -> None:
    rig = Rig()
    rig.revisions.push(fleet("rev-1"))
    rig.run()
    rig.revisions.push(fleet("rev-2", never_ready=True))
    rig.run()
    back = [e for e in rig.events if e.step is Step.ROLLED_BACK]
    assert [(e.wave, e.cluster, e.revision) for e in back] == [("canary", "canary", "rev-1")]
    assert back[0].reason.startswith("back from rev-2: ")
    assert rig.steps(Step.ROLLOUT_FINISHED) == []


def test_a_suspension_is_told_when_it_begins_and_ends_not_at_the_first_read() -> None:
    rig = Rig()
    rig.revisions.push(fleet("rev-1"))
    suspend(rig, "us-1")
    rig.run()
    assert rig.steps(Step.SUSPENSION_STARTED, Step.SUSPENSION_ENDED) == []  # learnt, not a change
    suspend(rig, "us-1", "")
    suspend(rig, "eu-1", "freeze")
    rig.run()
    told = {
        (e.cluster, e.step): e.reason
        for e in rig.events
        if e.step in {Step.SUSPENSION_STARTED, Step.SUSPENSION_ENDED}
    }
    assert set(told) == {("us-1", Step.SUSPENSION_ENDED), ("eu-1", Step.SUSPENSION_STARTED)}
    assert told[("eu-1", Step.SUSPENSION_STARTED)].endswith(": freeze")
    rig.run()
    assert rig.steps(Step.SUSPENSION_STARTED, Step.SUSPENSION_ENDED) == []
