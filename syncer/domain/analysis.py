"""The values of a canary analysis that travel beyond it: the counts a cluster records, and one
measurement as the pass tells it (``syncer.analysis`` judges; these only carry what it found)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class MeasurementOutcome(StrEnum):
    """What one measurement says."""

    SUCCESS = "success"
    FAILURE = "failure"
    INCONCLUSIVE = "inconclusive"
    ERROR = "error"


class AnalysisVerdict(StrEnum):
    """Where a metric's analysis stands."""

    RUNNING = "running"
    SUCCESSFUL = "successful"
    FAILED = "failed"
    INCONCLUSIVE = "inconclusive"


@dataclass(frozen=True)
class MetricCounts:
    """The measurements of one metric on one cluster so far, and when the last one was taken (epoch
    seconds; 0: none yet) with its value (None: it had none)."""

    metric: str
    taken: int = 0
    successes: int = 0
    failures: int = 0
    inconclusive: int = 0
    errors: int = 0
    consecutive_errors: int = 0
    last_at: float = 0.0
    last_value: float | None = None


@dataclass(frozen=True)
class AnalysisRecord:
    """A cluster's analysis of one revision: since when it runs and each metric's counts. Counts of
    another revision, or older than a person's ``syncer retry``, are not this analysis's."""

    revision: str = ""
    started: float = 0.0
    metrics: tuple[MetricCounts, ...] = ()

    def counts(self, metric: str) -> MetricCounts:
        return next((c for c in self.metrics if c.metric == metric), MetricCounts(metric))

    def summary(self) -> str:
        """Each metric's counts in one line, as ``syncer status`` shows them (empty: none)."""
        return "; ".join(
            f"{c.metric}: {c.taken} taken, {c.successes} ok, {c.failures} failed, "
            f"{c.inconclusive} inconclusive, {c.errors} errors"
            + ("" if c.last_value is None else f", last {c.last_value:g}")
            for c in self.metrics
        )


@dataclass(frozen=True)
class Measurement:
    """One measurement as it is told: the metric, its value (None: none), the conditions it was held
    to, what it said, where the metric's analysis stands after it, whether it is a dry run, and the
    baseline it was compared with (None: none)."""

    metric: str
    value: float | None
    threshold: str
    outcome: MeasurementOutcome
    verdict: AnalysisVerdict
    detail: str
    dry_run: bool = False
    baseline: float | None = None
