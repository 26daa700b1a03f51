"""Kubernetes-style label selectors over cluster labels (matchLabels and matchExpressions)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any


class Operator(StrEnum):
    IN = "In"
    NOT_IN = "NotIn"
    EXISTS = "Exists"
    DOES_NOT_EXIST = "DoesNotExist"


@dataclass(frozen=True)
class Requirement:
    """One ``matchExpressions`` entry."""

    key: str
    operator: Operator
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        if self.operator is Operator.EXISTS:
            return self.key in labels
        if self.operator is Operator.DOES_NOT_EXIST:
            return self.key not in labels
        if self.operator is Operator.IN:
            return self.key in labels and labels[self.key] in self.values
        return self.key not in labels or labels[self.key] not in self.values


@dataclass(frozen=True)
class LabelSelector:
    """Selects the clusters whose labels satisfy every term; the empty selector selects all."""

    match_labels: tuple[tuple[str, str], ...] = ()
    match_expressions: tuple[Requirement, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        return all(labels.get(key) == value for key, value in self.match_labels) and all(
            requirement.matches(labels) for requirement in self.match_expressions
        )

    @staticmethod
    def from_dict(raw: Mapping[str, Any]) -> LabelSelector:
        """A selector from its YAML form, which the fleet schema has already validated."""
        return LabelSelector(
            tuple(sorted(raw.get("matchLabels", {}).items())),
            tuple(
                Requirement(e["key"], Operator(e["operator"]), tuple(e.get("values", ())))
                for e in raw.get("matchExpressions", ())
            ),
        )
