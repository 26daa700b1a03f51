"""The JSON path of a web metric: where in the endpoint's JSON answer its number is.

A minimal subset of JSONPath, documented in docs/analysis.md: ``$`` (the whole document) followed
by ``.name`` (a key of letters, digits, ``_`` and ``-``), ``['any key']`` and ``[N]`` (an index of a
list, ``-1`` the last), e.g. ``$.data.result[0].value``. No wildcards, filters or recursion: one
path names one value, so a measurement is never a silent choice among several.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

_STEP = re.compile(r"\.([A-Za-z0-9_-]+)|\[(-?\d+)\]|\['([^'\\]*)'\]")

Path = tuple[str | int, ...]


def parse_path(text: str) -> Path:
    """The steps of ``text``; ``ValueError`` saying where it stops being the subset."""
    if not text.startswith("$"):
        raise ValueError(f"{text!r} must start with $ (e.g. $.data.value)")
    steps: list[str | int] = []
    at = 1
    while at < len(text):
        match = _STEP.match(text, at)
        if match is None:
            raise ValueError(
                f"{text!r}: at character {at + 1}, expected .name, ['key'] or [N] "
                "(no wildcards, filters or ..)"
            )
        name, index, quoted = match.groups()
        steps.append(int(index) if index is not None else name if name is not None else quoted)
        at = match.end()
    return tuple(steps)


def show(path: Path) -> str:
    """``path`` written as ``parse_path`` reads it."""
    return "$" + "".join(f"[{s}]" if isinstance(s, int) else f".{s}" for s in path)


def pick(document: Any, path: Path) -> tuple[float | None, str]:
    """The number at ``path`` in ``document`` (a number, or a string holding one), or None and why
    not: a step that finds nothing, or a value that is not a finite number."""
    value = document
    for depth, step in enumerate(path):
        where = show(path[: depth + 1])
        if isinstance(step, int):
            if not isinstance(value, list) or not -len(value) <= step < len(value):
                return None, f"nothing at {where}"
            value = value[step]
        else:
            if not isinstance(value, Mapping) or step not in value:
                return None, f"nothing at {where}"
            value = value[step]
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        return None, f"the value at {show(path)} is {type(value).__name__}, not a number"
    try:
        number = float(value)
    except ValueError:
        return None, f"the value at {show(path)} is {str(value)[:40]!r}, not a number"
    if math.isnan(number) or math.isinf(number):
        return None, f"the value at {show(path)} is {value}"
    return number, ""
