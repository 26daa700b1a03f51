"""Canary analysis: a wave judged by the fleet's metrics.

Owns the analysis policy's values (named metrics: a PromQL query template, its Prometheus, when and
how often it is measured, CEL conditions over ``result`` and ``baseline``, the limits), the checks
made when the policy is loaded (query templates parse, conditions type-check), the reading of a
Prometheus instant-query answer and of a web metric's JSON answer (``jsonpath``), and the
measurement state machine (counts and verdict).

Pure: no I/O. It must not query Prometheus, read files or know the cluster's stored state; the
engine feeds it answers and records its counts.
"""

from __future__ import annotations

from syncer.analysis.measure import Judged, advance, judge_value, next_due, verdict_of
from syncer.analysis.model import AnalysisPolicy, Baseline, MetricSpec, PrometheusSource, WebSource
from syncer.analysis.query import ARGUMENTS, QueryArgs, check_query, render_query
from syncer.analysis.response import QueryAnswer, Series, read_answer
from syncer.domain.analysis import AnalysisVerdict, MeasurementOutcome, MetricCounts

__all__ = [
    "ARGUMENTS",
    "AnalysisPolicy",
    "AnalysisVerdict",
    "Baseline",
    "Judged",
    "MeasurementOutcome",
    "MetricCounts",
    "MetricSpec",
    "PrometheusSource",
    "QueryAnswer",
    "QueryArgs",
    "Series",
    "WebSource",
    "advance",
    "check_query",
    "judge_value",
    "next_due",
    "read_answer",
    "render_query",
    "verdict_of",
]
