"""A Prometheus instant-query answer (``/api/v1/query``) read as one number or as its series,
failing closed."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Series:
    """One series of an instant vector: its value and its labels (sorted name, value pairs)."""

    value: float
    labels: tuple[tuple[str, str], ...] = ()

    def as_cel(self) -> dict[str, object]:
        """The series as a condition reads it: ``{value, labels}``."""
        return {"value": self.value, "labels": dict(self.labels)}


@dataclass(frozen=True)
class QueryAnswer:
    """One number (``value``), or why there is none: ``error`` (the query or Prometheus failed) or
    ``missing`` (no series, several series, NaN or infinity: no evidence). ``series``: every series
    of an instant vector (one or more, each a finite number); with several, ``value`` is None and
    ``missing`` says so, and only a condition over the list of series can judge them."""

    value: float | None = None
    error: str = ""
    missing: str = ""
    series: tuple[Series, ...] = ()


def _number(pair: Any) -> QueryAnswer:
    if not isinstance(pair, list) or len(pair) != 2:
        return QueryAnswer(error=f"a sample that is not [time, value]: {pair!r:.80}")
    try:
        value = float(pair[1])
    except (TypeError, ValueError):
        return QueryAnswer(error=f"a sample value that is not a number: {pair[1]!r:.80}")
    if math.isnan(value) or math.isinf(value):
        return QueryAnswer(missing=f"the value is {pair[1]}")
    return QueryAnswer(value=value)


def read_answer(body: Mapping[str, Any]) -> QueryAnswer:
    """The number a decoded ``/api/v1/query`` response body holds (a scalar, or a vector of exactly
    one series); anything else is an error or missing, never a value."""
    if body.get("status") != "success":
        kind, said = body.get("errorType", "error"), body.get("error", "no status: success")
        return QueryAnswer(error=f"Prometheus answered {kind}: {said}")
    data = body.get("data")
    if not isinstance(data, Mapping):
        return QueryAnswer(error="the answer holds no data")
    kind, result = data.get("resultType"), data.get("result")
    if kind == "scalar":
        return _number(result)
    if kind != "vector" or not isinstance(result, list):
        return QueryAnswer(
            error=f"the query gives a {kind}; a measurement needs a scalar or an instant vector"
        )
    if not result:
        return QueryAnswer(missing="the query gives no series")
    found = []
    for series in result:
        if not isinstance(series, Mapping):
            return QueryAnswer(error=f"a series that is not an object: {series!r:.80}")
        number = _number(series.get("value"))
        if number.value is None:
            return number
        found.append(Series(number.value, _labels(series.get("metric"))))
    if len(found) > 1:
        said = f"the query gives {len(found)} series; a condition over one number needs one (aggregate it)"
        return QueryAnswer(missing=said, series=tuple(found))
    return QueryAnswer(found[0].value, series=tuple(found))


def _labels(metric: Any) -> tuple[tuple[str, str], ...]:
    if not isinstance(metric, Mapping):
        return ()
    return tuple(sorted((str(k), str(v)) for k, v in metric.items()))
