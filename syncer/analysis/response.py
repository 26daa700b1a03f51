"""A Prometheus instant-query answer (``/api/v1/query``) read as one number, failing closed."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class QueryAnswer:
    """One number (``value``), or why there is none: ``error`` (the query or Prometheus failed) or
    ``missing`` (no series, several series, NaN or infinity: no evidence)."""

    value: float | None = None
    error: str = ""
    missing: str = ""


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
    if len(result) > 1:
        return QueryAnswer(
            missing=f"the query gives {len(result)} series; a measurement needs one (aggregate it)"
        )
    series = result[0]
    return _number(series.get("value") if isinstance(series, Mapping) else None)
