"""The measurement state machine: each answer judged, counted, and the verdict; fail closed."""

from __future__ import annotations

from dataclasses import replace

import pytest

from syncer.analysis import (
    AnalysisVerdict,
    Baseline,
    MeasurementOutcome,
    MetricCounts,
    MetricSpec,
    QueryAnswer,
    advance,
    judge_value,
    verdict_of,
)
from syncer.analysis.measure import next_due
from syncer.guards.language import Program, compile_expression


def program(source: str) -> Program:
    compiled = compile_expression(source, analysis=True)
    assert isinstance(compiled, Program), compiled
    return compiled


LOW = MetricSpec("errors", "up", success=program("result < 0.1"), count=3, interval=10.0)


def run(metric: MetricSpec, answers: list[QueryAnswer], baseline: QueryAnswer | None = None) -> MetricCounts:
    counts = MetricCounts(metric.name)
    for at, answer in enumerate(answers):
        counts = advance(counts, judge_value(metric, answer, baseline), float(at))
    return counts


@pytest.mark.parametrize(
    ("answer", "outcome"),
    [
        (QueryAnswer(0.05), MeasurementOutcome.SUCCESS),
        (QueryAnswer(0.5), MeasurementOutcome.FAILURE),
        (QueryAnswer(missing="the query gives no series"), MeasurementOutcome.INCONCLUSIVE),
        (QueryAnswer(error="connection refused"), MeasurementOutcome.ERROR),
    ],
)
def test_each_answer_is_judged(answer: QueryAnswer, outcome: MeasurementOutcome) -> None:
    assert judge_value(LOW, answer, None).outcome is outcome


def test_neither_condition_holding_is_inconclusive() -> None:
    both = replace(LOW, failure=program("result > 0.5"))
    assert judge_value(both, QueryAnswer(0.3), None).outcome is MeasurementOutcome.INCONCLUSIVE
    assert judge_value(both, QueryAnswer(0.9), None).outcome is MeasurementOutcome.FAILURE


def test_only_a_failure_condition_succeeds_when_it_does_not_hold() -> None:
    failing = MetricSpec("errors", "up", failure=program("result > 0.5"))
    assert judge_value(failing, QueryAnswer(0.3), None).outcome is MeasurementOutcome.SUCCESS


def test_a_baseline_comparison_is_one_line_and_a_missing_baseline_is_inconclusive() -> None:
    metric = MetricSpec(
        "errors", "up", success=program("result <= baseline * 1.2 + 0.001"), baseline=Baseline.PREVIOUS
    )
    assert judge_value(metric, QueryAnswer(0.0115), QueryAnswer(0.01)).outcome is MeasurementOutcome.SUCCESS
    assert judge_value(metric, QueryAnswer(0.02), QueryAnswer(0.01)).outcome is MeasurementOutcome.FAILURE
    judged = judge_value(metric, QueryAnswer(0.001), QueryAnswer(missing="the query gives no series"))
    assert judged.outcome is MeasurementOutcome.INCONCLUSIVE
    assert judged.detail == "no baseline (previous): the query gives no series"


def test_all_good_measurements_succeed_after_count() -> None:
    counts = run(LOW, [QueryAnswer(0.0)] * 2)
    assert verdict_of(LOW, counts)[0] is AnalysisVerdict.RUNNING
    counts = run(LOW, [QueryAnswer(0.0)] * 3)
    assert verdict_of(LOW, counts) == (AnalysisVerdict.SUCCESSFUL, "3 of 3 measurement(s) succeeded")


def test_a_failure_beyond_the_limit_fails_at_once() -> None:
    counts = run(LOW, [QueryAnswer(0.0), QueryAnswer(0.9)])
    assert verdict_of(LOW, counts) == (AnalysisVerdict.FAILED, "1 failed measurement(s), 0 allowed")
    tolerant = replace(LOW, failure_limit=1)
    assert verdict_of(tolerant, counts)[0] is AnalysisVerdict.RUNNING


def test_no_series_past_the_limit_is_inconclusive_never_success() -> None:
    missing = QueryAnswer(missing="the query gives no series")
    assert verdict_of(LOW, run(LOW, [missing]))[0] is AnalysisVerdict.INCONCLUSIVE
    tolerant = replace(LOW, inconclusive_limit=5)
    assert verdict_of(tolerant, run(tolerant, [missing] * 3)) == (
        AnalysisVerdict.INCONCLUSIVE,
        "3 measurement(s) and not one success",
    )


def test_errors_in_a_row_past_the_limit_are_inconclusive_and_a_success_resets_the_row() -> None:
    down = QueryAnswer(error="connection refused")
    metric = replace(LOW, consecutive_error_limit=1, count=10)
    assert verdict_of(metric, run(metric, [down, QueryAnswer(0.0), down]))[0] is AnalysisVerdict.RUNNING
    assert verdict_of(metric, run(metric, [down, down])) == (
        AnalysisVerdict.INCONCLUSIVE,
        "2 errors in a row, 1 allowed",
    )


def test_a_condition_that_cannot_be_evaluated_is_an_error_not_a_success() -> None:
    metric = MetricSpec("errors", "up", failure=program("int(result) > 0"))
    judged = judge_value(metric, QueryAnswer(1e300), None)
    assert (judged.outcome, judged.detail) == (
        MeasurementOutcome.ERROR,
        "int(result) > 0: double out of int64 range",
    )


def test_the_next_measurement_waits_for_the_initial_delay_then_the_interval() -> None:
    metric = replace(LOW, initial_delay=30.0)
    assert next_due(metric, MetricCounts("errors"), started=100.0) == 130.0
    assert next_due(metric, MetricCounts("errors", taken=1, last_at=140.0), started=100.0) == 150.0
