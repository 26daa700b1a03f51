"""Durations as people write them in syncer's files and flags: ``90s``, ``5m``, ``1h30m``, ``500ms``."""

from __future__ import annotations

import re

_PART = re.compile(r"([0-9]+)(ms|s|m|h)")
_WHOLE = re.compile(r"^(?:[0-9]+(?:ms|s|m|h))+$")
_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}


def parse_duration(value: object) -> float:
    """Seconds of ``value``: a string of numbers with units ``h``, ``m``, ``s`` or ``ms`` (as Go and the
    CRD's patterns write them, e.g. ``1h30m``), or a plain non-negative number of seconds.

    ValueError for anything else (an empty string, a bare number in a string, other units, spaces)."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        if value >= 0:
            return float(value)
    elif isinstance(value, str) and _WHOLE.match(value.strip()):
        return sum(int(n) * _UNITS[unit] for n, unit in _PART.findall(value.strip()))
    raise ValueError(f"{value!r} is not a duration like 30s, 5m or 1h30m")


def format_duration(seconds: float) -> str:
    """``seconds`` written as ``parse_duration`` reads it back: ``1h30m``, ``5m``, ``15s``, ``500ms``."""
    millis = round(seconds * 1000)
    parts = []
    for unit, size in (("h", 3_600_000), ("m", 60_000), ("s", 1000), ("ms", 1)):
        count, millis = divmod(millis, size)
        if count:
            parts.append(f"{count}{unit}")
    return "".join(parts) or "0s"
