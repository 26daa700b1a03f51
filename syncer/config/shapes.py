"""Shapes shared by the agent's policy files: label selectors (durations: ``syncer.domain.durations``)."""

from __future__ import annotations

from syncer.config.loading import Fields
from syncer.domain.selectors import LabelSelector

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
