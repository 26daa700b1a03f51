"""The formation's marks: which a reconcile tells, and the breakdown a bench draws from them."""

from __future__ import annotations

import logging

import pytest

from syncer.controller.formation import (
    FormationMark,
    FormationMarks,
    FormationStep,
    StepTiming,
    breakdown,
    worth_telling,
)
from syncer.controller.logs import ContextLogger

S = FormationStep


def test_marks_take_the_clock_at_each_step() -> None:
    ticks = iter([10.0, 10.5])
    marks = FormationMarks(clock=lambda: next(ticks))
    marks.tell(S.PODS_READY)
    marks.tell(S.MET)
    assert marks.marks == [FormationMark(S.PODS_READY, 10.0), FormationMark(S.MET, 10.5)]


def test_a_pass_that_formed_tells_every_step_once_at_its_first_mark() -> None:
    marks = [
        FormationMark(S.PODS_READY, 1.0),
        FormationMark(S.SERVERS_ANSWER, 1.1),
        FormationMark(S.MET, 1.3),
        FormationMark(S.SLOTS_ASSIGNED, 1.4),
        FormationMark(S.CLUSTER_OK, 2.9),
        FormationMark(S.CLUSTER_OK, 3.0),
        FormationMark(S.HEALTHY, 3.1),
        FormationMark(S.READY_WRITTEN, 3.2),
    ]
    told = worth_telling(marks)
    assert [m.step for m in told] == [
        S.PODS_READY, S.SERVERS_ANSWER, S.MET, S.SLOTS_ASSIGNED, S.CLUSTER_OK, S.HEALTHY, S.READY_WRITTEN,
    ]  # fmt: skip
    assert next(m.at for m in told if m.step is S.CLUSTER_OK) == 2.9


def test_a_pass_that_only_looked_tells_nothing_but_a_ready_write() -> None:
    looked = [
        FormationMark(S.PODS_READY, 1.0),
        FormationMark(S.SERVERS_ANSWER, 1.1),
        FormationMark(S.HEALTHY, 1.2),
    ]
    assert worth_telling(looked) == []
    ready = [*looked, FormationMark(S.READY_WRITTEN, 1.3)]
    assert worth_telling(ready) == [FormationMark(S.READY_WRITTEN, 1.3)]


def test_breakdown_orders_first_marks_by_time_and_times_each_from_the_one_before() -> None:
    marks = [
        FormationMark(S.MET, 101.5),
        FormationMark(S.PODS_READY, 101.0),
        FormationMark(S.PODS_READY, 99.0),  # before the start: another creation's
        FormationMark(S.READY_WRITTEN, 103.0),
        FormationMark(S.MET, 102.0),  # a later pass met again: the first counts
    ]
    spans = breakdown(100.0, marks)
    assert [s.step for s in spans] == [S.PODS_READY, S.MET, S.READY_WRITTEN]
    assert spans[0] == StepTiming(S.PODS_READY, 1.0, 1.0)
    assert (spans[1].since_start, spans[1].took) == (1.5, 0.5)
    assert (spans[2].since_start, spans[2].took) == (3.0, 1.5)
    assert breakdown(100.0, []) == []


def test_the_marks_worth_telling_are_logged_as_records_with_their_step_and_moment(
    caplog: pytest.LogCaptureFixture,
) -> None:
    ticks = iter([5.0, 5.25, 6.0])
    marks = FormationMarks(clock=lambda: next(ticks))
    for step in (S.PODS_READY, S.MET, S.READY_WRITTEN):
        marks.tell(step)
    log = ContextLogger(logging.getLogger("syncer.controller.test"), {"reconcile_id": "r1"})
    with caplog.at_level(logging.INFO, logger="syncer.controller.test"):
        marks.log(log)
    found = [(r.__dict__["formation_step"], r.__dict__["at"]) for r in caplog.records]
    assert found == [("pods-ready", 5.0), ("met", 5.25), ("ready-written", 6.0)]
