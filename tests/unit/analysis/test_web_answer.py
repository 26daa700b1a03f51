"""A web metric's JSON path (``syncer.analysis.jsonpath``) and its request's refusals
(``syncer.prom.web``) that need no endpoint."""

from __future__ import annotations

from pathlib import Path

import pytest

from syncer.analysis import QueryArgs, WebSource
from syncer.analysis.jsonpath import parse_path, pick
from syncer.prom.web import fetch_web

DOC = {"data": {"result": [{"value": "0.25"}, {"value": 3}], "odd key": True, "n": None}}


@pytest.mark.parametrize(
    ("path", "found"),
    [
        ("$.data.result[0].value", (0.25, "")),
        ("$.data.result[-1].value", (3.0, "")),
        ("$.data.result[2].value", (None, "nothing at $.data.result[2]")),
        ("$.data.missing", (None, "nothing at $.data.missing")),
        ("$.data['odd key']", (None, "the value at $.data.odd key is bool, not a number")),
        ("$.data.n", (None, "the value at $.data.n is NoneType, not a number")),
        ("$.data", (None, "the value at $.data is dict, not a number")),
    ],
)
def test_the_path_names_one_number(path: str, found: tuple[float | None, str]) -> None:
    assert pick(DOC, parse_path(path)) == found


def test_nan_and_words_are_not_numbers() -> None:
    assert pick({"v": "NaN"}, parse_path("$.v")) == (None, "the value at $.v is NaN")
    assert pick({"v": "high"}, parse_path("$.v"))[0] is None


@pytest.mark.parametrize("path", ["data.x", "$..x", "$.a[*]", "$.a[?(@.b)]", "$.a.", "$['a"])
def test_what_is_not_the_subset_does_not_parse(path: str) -> None:
    with pytest.raises(ValueError, match=r"must start with \$|expected \.name"):
        parse_path(path)


ARGS = QueryArgs("canary", "rev", "canary")


def test_a_host_resolving_to_the_metadata_address_is_not_asked_unless_allowed_by_name() -> None:
    source = WebSource("http://metrics.internal:1/x", ("v",), 1.0)
    answer = fetch_web(source, ARGS, resolve=lambda host, port: ["169.254.169.254"])
    assert answer.value is None
    assert "not asked: its host resolves to 169.254.169.254, a link-local" in answer.error
    allowed = WebSource("http://metrics.internal:1/x", ("v",), 1.0, allow_hosts=("metrics.internal",))
    answer = fetch_web(allowed, ARGS, resolve=lambda host, port: ["169.254.169.254"])
    assert "not asked" not in answer.error, "allowed by name: asked (and no answer here)"
    assert answer.error


def test_a_token_file_that_is_not_a_regular_file_at_the_request_is_an_error(tmp_path: Path) -> None:
    source = WebSource("http://127.0.0.1:1/x", ("v",), 1.0, token_file=str(tmp_path))
    answer = fetch_web(source, ARGS)
    assert answer.value is None
    assert "could not be made" in answer.error
    assert str(tmp_path) in answer.error
