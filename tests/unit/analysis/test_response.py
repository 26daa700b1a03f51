"""Prometheus answers (recorded from a real Prometheus 2.42) read as one number, failing closed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from syncer.analysis import QueryAnswer, read_answer

ANSWERS = Path(__file__).parent / "answers"


def recorded(name: str) -> Any:
    return json.loads((ANSWERS / f"{name}.json").read_text())


def test_one_series_is_its_value() -> None:
    assert read_answer(recorded("vector-one")) == QueryAnswer(1.0)
    assert read_answer(recorded("vector-labelled")) == QueryAnswer(1.0)


def test_a_scalar_is_its_value() -> None:
    assert read_answer(recorded("scalar")) == QueryAnswer(1.0)


def test_no_series_is_missing() -> None:
    assert read_answer(recorded("vector-empty")) == QueryAnswer(missing="the query gives no series")


def test_nan_is_missing_never_a_value() -> None:
    assert read_answer(recorded("nan")) == QueryAnswer(missing="the value is NaN")


def test_several_series_are_missing() -> None:
    body = recorded("vector-labelled")
    body["data"]["result"] = body["data"]["result"] * 2
    answer = read_answer(body)
    assert answer.value is None
    assert answer.missing == "the query gives 2 series; a measurement needs one (aggregate it)"


def test_an_error_answer_is_an_error() -> None:
    assert read_answer(recorded("bad")) == QueryAnswer(
        error='Prometheus answered bad_data: invalid parameter "query": 1:15: parse error:'
        " unclosed left parenthesis"
    )
