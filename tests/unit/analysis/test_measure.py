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
    Series,
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


# -- vector results: a condition over every series ----------------------------------------------


def series(*values: float) -> QueryAnswer:
    found = tuple(Series(v, (("pod", f"p{i}"),)) for i, v in enumerate(values))
    if len(found) == 1:
        return QueryAnswer(values[0], series=found)
    return QueryAnswer(missing=f"the query gives {len(found)} series; ...", series=found)


EVERY = MetricSpec("errors", "rate(x[1m])", success=program("result.all(s, s.value < 0.01)"))


def test_a_condition_over_the_list_reads_every_series_and_fails_on_one_of_three() -> None:
    assert program("result.all(s, s.value < 0.01)").reads_list
    assert not program("result < 0.01").reads_list
    passed = judge_value(EVERY, series(0.001, 0.002, 0.003), None)
    assert passed.outcome is MeasurementOutcome.SUCCESS
    failed = judge_value(EVERY, series(0.001, 0.5, 0.003), None)
    assert failed.outcome is MeasurementOutcome.FAILURE
    assert "0.5 {pod=p1}" in failed.detail, failed.detail


@pytest.mark.parametrize(
    ("source", "holds"),
    [
        ("len(result) == 3", True),
        ("size(result) == 3", True),
        ("result[0].value == 0.001", True),
        ("result.exists(s, s.labels.pod == 'p2' && s.value > 0.1)", True),
        ("result.exists(s, s.labels.pod == 'p0' && s.value > 0.1)", False),
    ],
)
def test_list_macros_length_index_and_labels(source: str, holds: bool) -> None:
    metric = MetricSpec("m", "x", success=program(source))
    want = MeasurementOutcome.SUCCESS if holds else MeasurementOutcome.FAILURE
    assert judge_value(metric, series(0.001, 0.002, 0.5), None).outcome is want


def test_one_series_is_a_list_of_one_for_a_list_condition_and_a_number_for_a_number_condition() -> None:
    assert judge_value(EVERY, series(0.001), None).outcome is MeasurementOutcome.SUCCESS
    number = MetricSpec("m", "x", success=program("result < 0.01"))
    assert judge_value(number, series(0.001), None).outcome is MeasurementOutcome.SUCCESS


def test_a_scalar_stays_a_scalar_and_a_list_condition_cannot_read_it() -> None:
    judged = judge_value(EVERY, QueryAnswer(0.001), None)
    assert judged.outcome is MeasurementOutcome.INCONCLUSIVE
    assert "reads result as a list of series" in judged.detail


def test_several_series_for_a_condition_over_one_number_are_inconclusive_and_say_how_to_judge_them() -> None:
    number = MetricSpec("m", "x", success=program("result < 0.01"))
    judged = judge_value(number, series(0.001, 0.002), None)
    assert judged.outcome is MeasurementOutcome.INCONCLUSIVE
    assert "result.all(s, s.value < 0.01)" in judged.detail


def test_no_series_is_inconclusive_for_a_list_condition_too_never_a_vacuous_success() -> None:
    judged = judge_value(EVERY, QueryAnswer(missing="the query gives no series"), None)
    assert judged.outcome is MeasurementOutcome.INCONCLUSIVE


def test_a_list_condition_compares_every_series_with_the_baseline() -> None:
    metric = MetricSpec(
        "m", "x", success=program("result.all(s, s.value <= baseline * 2.0)"), baseline=Baseline.PREVIOUS
    )
    assert judge_value(metric, series(0.1, 0.2, 0.3), QueryAnswer(0.2)).outcome is MeasurementOutcome.SUCCESS
    assert judge_value(metric, series(0.1, 0.5, 0.3), QueryAnswer(0.2)).outcome is MeasurementOutcome.FAILURE


def test_a_list_condition_with_a_mistake_is_reported_against_the_list() -> None:
    problems = compile_expression("result.all(s, s.valu < 0.01) && len(result) > 'a'", analysis=True)
    assert isinstance(problems, tuple)
    said = " ".join(p.message for p in problems)
    assert "'(int, string)'" in said, said  # not "a double cannot be the range of a comprehension"
