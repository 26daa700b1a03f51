"""Shapes shared by the agent's policy files: durations and label selectors."""

from __future__ import annotations

import re

from syncer.config.loading import Fields
from syncer.domain.selectors import LabelSelector

_DURATION = re.compile(r"^(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?$")


def parse_duration(text: object) -> float:
    """Seconds of a duration like ``90s``, ``5m``, ``1h30m``; a bare number is seconds."""
    if isinstance(text, int | float) and not isinstance(text, bool) and text >= 0:
        return float(text)
    match = _DURATION.match(str(text).strip()) if isinstance(text, str) else None
    if not match or not any(match.groups()):
        raise ValueError(f"{text!r} is not a duration like 30s, 5m or 1h30m")
    hours, minutes, seconds = (int(g) if g else 0 for g in match.groups())
    return float(hours * 3600 + minutes * 60 + seconds)


_OPERATORS = {"In", "NotIn", "Exists", "DoesNotExist"}


def parse_selector(fields: Fields) -> LabelSelector:
    """A label selector of an agent policy file, its shape checked here since no schema has seen it."""
    fields.reject_unknown({"matchLabels", "matchExpressions"})
    labels = fields.raw("matchLabels") or {}
    if not isinstance(labels, dict) or not all(isinstance(v, str) for v in labels.values()):
        raise fields.error("matchLabels", "must map label names to string values")
    for index in range(len(fields.items("matchExpressions"))):
        expression = fields.child("matchExpressions", index)
        expression.reject_unknown({"key", "operator", "values"})
        expression.string("key")
        if expression.string("operator") not in _OPERATORS:
            raise expression.error("operator", f"must be one of {', '.join(sorted(_OPERATORS))}")
        expression.strings("values", ())
    return LabelSelector.from_dict(
        {"matchLabels": labels, "matchExpressions": fields.items("matchExpressions")}
    )
