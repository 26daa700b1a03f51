"""The measurement state machine of one metric: each answer judged, counted, and the verdict.

Fail closed: no answer, no series, NaN, a baseline that cannot be had, or a condition that cannot be
evaluated is never a success. The counts are plain values so that the engine can record them in the
cluster's state and a restarted agent goes on from them.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from syncer.analysis.model import Baseline, MetricSpec
from syncer.analysis.response import QueryAnswer
from syncer.domain.analysis import AnalysisVerdict, MeasurementOutcome, MetricCounts
from syncer.guards.language import Program


@dataclass(frozen=True)
class Judged:
    """One measurement judged: its outcome, the value (None: none) and why, for people."""

    outcome: MeasurementOutcome
    value: float | None
    detail: str
    baseline: float | None = None


# How many series a measurement's detail shows.
SHOWN_SERIES = 5


def _holds(program: Program, answer: QueryAnswer, baseline: float | None) -> bool | str:
    """Whether ``program`` holds, or why it could not be evaluated."""
    result: object = [s.as_cel() for s in answer.series] if program.reads_list else answer.value
    evaluation = program.evaluate({"result": result, "baseline": baseline})
    if evaluation.value is None:
        return f"{program.source}: {evaluation.error}"
    return evaluation.value


def _misfit(metric: MetricSpec, answer: QueryAnswer) -> str:
    """Why a condition of ``metric`` cannot read ``answer`` (empty: each can): one over a number
    given several series, or one over the list of series given a scalar."""
    for program in (metric.failure, metric.success):
        if program is None:
            continue
        if program.reads_list and not answer.series:
            return f"the query gives a scalar; {program.source} reads result as a list of series"
        if not program.reads_list and answer.value is None:
            return (
                f"{answer.missing}; or write the condition over every series, "
                f"e.g. result.all(s, s.value < 0.01)"
            )
    return ""


def _shown(answer: QueryAnswer) -> str:
    if answer.value is not None:
        return f"{answer.value:g}"
    values = ", ".join(
        f"{s.value:g} {{{', '.join(f'{k}={v}' for k, v in s.labels)}}}" for s in answer.series[:SHOWN_SERIES]
    )
    more = f", ... ({len(answer.series)} series)" if len(answer.series) > SHOWN_SERIES else ""
    return f"[{values}{more}]"


def judge_value(metric: MetricSpec, answer: QueryAnswer, baseline: QueryAnswer | None) -> Judged:
    """One measurement of ``metric`` judged from its answer and (when it uses one) its baseline's.
    A condition over a number reads the one number; one over the list of series reads every series."""
    if answer.error:
        return Judged(MeasurementOutcome.ERROR, None, answer.error)
    if answer.value is None and not answer.series:
        return Judged(MeasurementOutcome.INCONCLUSIVE, None, answer.missing or "no value")
    misfit = _misfit(metric, answer)
    if misfit:
        return Judged(MeasurementOutcome.INCONCLUSIVE, answer.value, misfit)
    base: float | None = None
    if metric.baseline is not Baseline.NONE:
        if baseline is None or baseline.value is None:
            why = "none measured" if baseline is None else baseline.error or baseline.missing
            return Judged(
                MeasurementOutcome.INCONCLUSIVE, answer.value, f"no baseline ({metric.baseline}): {why}"
            )
        base = baseline.value
    said = f"result {_shown(answer)}" + (f", baseline {base:g}" if base is not None else "")
    for program, outcome in (
        (metric.failure, MeasurementOutcome.FAILURE),
        (metric.success, MeasurementOutcome.SUCCESS),
    ):
        if program is None:
            continue
        holds = _holds(program, answer, base)
        if isinstance(holds, str):
            return Judged(MeasurementOutcome.ERROR, answer.value, holds)
        if holds:
            return Judged(outcome, answer.value, f"{said}: {program.source}", base)
    if metric.success is not None and metric.failure is None:
        return Judged(MeasurementOutcome.FAILURE, answer.value, f"{said}: not {metric.success.source}", base)
    if metric.failure is not None and metric.success is None:
        return Judged(MeasurementOutcome.SUCCESS, answer.value, f"{said}: not {metric.failure.source}", base)
    return Judged(MeasurementOutcome.INCONCLUSIVE, answer.value, f"{said}: neither condition holds", base)


def advance(counts: MetricCounts, judged: Judged, at: float) -> MetricCounts:
    """``counts`` with one more measurement, taken at ``at``."""
    errors = judged.outcome is MeasurementOutcome.ERROR
    return replace(
        counts,
        taken=counts.taken + 1,
        successes=counts.successes + (judged.outcome is MeasurementOutcome.SUCCESS),
        failures=counts.failures + (judged.outcome is MeasurementOutcome.FAILURE),
        inconclusive=counts.inconclusive + (judged.outcome is MeasurementOutcome.INCONCLUSIVE),
        errors=counts.errors + errors,
        consecutive_errors=counts.consecutive_errors + 1 if errors else 0,
        last_at=at,
        last_value=judged.value,
    )


def verdict_of(metric: MetricSpec, counts: MetricCounts) -> tuple[AnalysisVerdict, str]:
    """The verdict on ``metric`` after ``counts``, and why. A metric that ends without one success
    is inconclusive, never successful."""
    if counts.failures > metric.failure_limit:
        return (
            AnalysisVerdict.FAILED,
            f"{counts.failures} failed measurement(s), {metric.failure_limit} allowed",
        )
    if counts.inconclusive > metric.inconclusive_limit:
        return (
            AnalysisVerdict.INCONCLUSIVE,
            f"{counts.inconclusive} inconclusive measurement(s), {metric.inconclusive_limit} allowed",
        )
    if counts.consecutive_errors > metric.consecutive_error_limit:
        return (
            AnalysisVerdict.INCONCLUSIVE,
            f"{counts.consecutive_errors} errors in a row, {metric.consecutive_error_limit} allowed",
        )
    if counts.taken < metric.count:
        return AnalysisVerdict.RUNNING, f"{counts.taken} of {metric.count} measurement(s) taken"
    if counts.successes == 0:
        return AnalysisVerdict.INCONCLUSIVE, f"{counts.taken} measurement(s) and not one success"
    return AnalysisVerdict.SUCCESSFUL, f"{counts.successes} of {counts.taken} measurement(s) succeeded"


def next_due(metric: MetricSpec, counts: MetricCounts, started: float) -> float:
    """When the next measurement of ``metric`` is due (epoch seconds)."""
    if counts.taken == 0:
        return started + metric.initial_delay
    return counts.last_at + metric.interval
