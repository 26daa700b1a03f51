"""Prometheus answers (recorded from a real Prometheus 2.42) read as one number, failing closed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from syncer.analysis import QueryAnswer, Series, read_answer

ANSWERS = Path(__file__).parent / "answers"


def recorded(name: str) -> Any:
    return json.loads((ANSWERS / f"{name}.json").read_text())


def test_one_series_is_its_value_and_its_series() -> None:
    one = read_answer(recorded("vector-one"))
    assert (one.value, len(one.series), one.series[0].value) == (1.0, 1, 1.0)
    labelled = read_answer(recorded("vector-labelled"))
    assert labelled.value == 1.0
    assert labelled.series == (Series(1.0, tuple(sorted(recorded_labels("vector-labelled").items()))),)


def recorded_labels(name: str) -> dict[str, str]:
    return dict(recorded(name)["data"]["result"][0]["metric"])


def test_a_scalar_is_its_value() -> None:
    assert read_answer(recorded("scalar")) == QueryAnswer(1.0)


def test_no_series_is_missing() -> None:
    assert read_answer(recorded("vector-empty")) == QueryAnswer(missing="the query gives no series")


def test_nan_is_missing_never_a_value() -> None:
    assert read_answer(recorded("nan")) == QueryAnswer(missing="the value is NaN")


def test_several_series_are_no_number_but_each_is_kept_with_its_labels() -> None:
    body = recorded("vector-labelled")
    first = body["data"]["result"][0]
    body["data"]["result"] = [
        {**first, "metric": {**first["metric"], "pod": pod}, "value": [first["value"][0], value]}
        for pod, value in (("a", "0.5"), ("b", "2"))
    ]
    answer = read_answer(body)
    assert answer.value is None
    assert answer.missing == "the query gives 2 series; a condition over one number needs one (aggregate it)"
    assert [(s.value, dict(s.labels)["pod"]) for s in answer.series] == [(0.5, "a"), (2.0, "b")]


def test_a_series_among_several_that_is_nan_is_missing_never_judged() -> None:
    body = recorded("vector-labelled")
    first = body["data"]["result"][0]
    body["data"]["result"] = [first, {**first, "value": [first["value"][0], "NaN"]}]
    assert read_answer(body) == QueryAnswer(missing="the value is NaN")


def test_an_error_answer_is_an_error() -> None:
    assert read_answer(recorded("bad")) == QueryAnswer(
        error='Prometheus answered bad_data: invalid parameter "query": 1:15: parse error:'
        " unclosed left parenthesis"
    )
