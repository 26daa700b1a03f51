"""Reading the fields of a record syncer keeps in a cluster (sync state, a person's acts): each value
checked for its type, so a record edited by hand or written by another version is refused with the
field's name instead of being half read. Pure: no client, no I/O."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


class StateFormatError(ValueError):
    """The stored state is not a state this version can read."""


def text(raw: Mapping[str, Any], key: str) -> str:
    """``raw[key]`` as a string ("" when absent)."""
    value = raw.get(key, "")
    if not isinstance(value, str):
        raise StateFormatError(f"{key} must be a string")
    return value


def number(raw: Mapping[str, Any], key: str) -> float:
    """``raw[key]`` as a number (0 when absent); a boolean is not a number."""
    value = raw.get(key, 0)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise StateFormatError(f"{key} must be a number")
    return float(value)
