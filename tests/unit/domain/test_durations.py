"""One duration parser for the agent's flags and files and the RedisCluster spec."""

from __future__ import annotations

import pytest

from syncer.domain.durations import format_duration, parse_duration


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        ("30s", 30.0),
        ("5m", 300.0),
        ("1h30m", 5400.0),
        ("1500ms", 1.5),
        ("1m0s", 60.0),
        ("30s5m", 330.0),
        (12, 12.0),
        (0.5, 0.5),
        (0, 0.0),
    ],
)
def test_durations(value: object, seconds: float) -> None:
    assert parse_duration(value) == seconds


@pytest.mark.parametrize(
    "value", ["", "5", "1d", "m5", "5 m", "1h 30m", "-5s", "5s-", True, -1, None, [], "\uff11s"]
)
def test_anything_else_is_a_clear_error(value: object) -> None:
    with pytest.raises(ValueError, match="is not a duration like 30s, 5m or 1h30m"):
        parse_duration(value)


@pytest.mark.parametrize(
    ("seconds", "text"), [(60, "1m"), (5, "5s"), (5400, "1h30m"), (1.5, "1s500ms"), (0, "0s")]
)
def test_durations_are_written_as_they_are_read(seconds: float, text: str) -> None:
    assert format_duration(seconds) == text
    assert parse_duration(text) == seconds
