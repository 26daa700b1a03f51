"""Judging a revision's planned changes against a guard policy. Pure: changes in, verdicts out."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from syncer.guards.language import VARIABLES
from syncer.guards.policy import ChangeRule, GuardPolicy, PlannedChange, RevisionLimit
from syncer.guards.verdicts import GuardOutcome, GuardReport, LimitVerdict, RuleVerdict

_STRING_LITERAL = re.compile(r"'(?:\\.|[^'\\])*'|\"(?:\\.|[^\"\\])*\"")
_PATH = re.compile(r"(?<![\w.])(" + "|".join(VARIABLES) + r")((?:\s*\.\??\s*[A-Za-z_]\w*\b(?!\s*\())*)")
_SHOWN = 80


def referenced_paths(source: str) -> tuple[str, ...]:
    """The variable paths an expression reads (``old.spec.version``), in order, without repeats.

    Taken from the text: string literals are skipped, a member call (``.size()``) ends a path."""
    text = _STRING_LITERAL.sub("''", source)
    seen: dict[str, None] = {}
    for match in _PATH.finditer(text):
        path = re.sub(r"\s+", "", match.group(0)).replace(".?", ".")
        seen.setdefault(path, None)
    return tuple(seen)


def _lookup(inputs: Mapping[str, Any], path: str) -> str:
    value: Any = inputs
    for part in path.split("."):
        if not isinstance(value, Mapping) or part not in value:
            return "<absent>"
        value = value[part]
    text = json.dumps(value, sort_keys=True, default=str)
    return text if len(text) <= _SHOWN else text[: _SHOWN - 3] + "..."


def change_inputs(change: PlannedChange, revision: Mapping[str, Any]) -> dict[str, Any]:
    """The variables a rule sees for one change."""
    return {
        "old": change.old,
        "new": change.new,
        "cluster": {"name": change.cluster, "labels": dict(change.labels)},
        "revision": dict(revision),
        "change": {
            "action": str(change.action),
            "kind": change.key.kind,
            "namespace": change.key.namespace,
            "name": change.key.name,
            "subject": change.key.subject,
        },
    }


def _judge_rule(rule: ChangeRule, change: PlannedChange, revision: Mapping[str, Any]) -> RuleVerdict:
    inputs = change_inputs(change, revision)
    result = rule.program.evaluate(inputs)
    subject = change.key.subject
    if result.value is True:
        return RuleVerdict(rule.name, change.cluster, subject, GuardOutcome.PASS)
    shown = tuple((path, _lookup(inputs, path)) for path in referenced_paths(rule.program.source))
    if result.error:
        message = f"could not be evaluated: {result.error}"
        return RuleVerdict(rule.name, change.cluster, subject, GuardOutcome.ERROR, message, shown)
    message = rule.message or f"{' '.join(rule.program.source.split())} is false"
    return RuleVerdict(rule.name, change.cluster, subject, GuardOutcome.FAIL, message, shown)


def _judge_limit(limit: RevisionLimit, changes: Sequence[PlannedChange]) -> LimitVerdict:
    counted = [c for c in changes if limit.clusters is None or limit.clusters.matches(c.labels)]
    objects, clusters = len(counted), len({c.cluster for c in counted})
    scope = " in matching clusters" if limit.clusters is not None else ""
    problems = []
    if limit.max_objects is not None and objects > limit.max_objects:
        problems.append(f"{objects} objects changed{scope}, at most {limit.max_objects} allowed")
    if limit.max_clusters is not None and clusters > limit.max_clusters:
        problems.append(f"{clusters} clusters changed{scope}, at most {limit.max_clusters} allowed")
    if problems:
        return LimitVerdict(limit.name, GuardOutcome.FAIL, "; ".join(problems))
    return LimitVerdict(
        limit.name, GuardOutcome.PASS, f"{objects} objects in {clusters} clusters changed{scope}"
    )


def judge_revision(policy: GuardPolicy, revision: str, changes: Sequence[PlannedChange]) -> GuardReport:
    """Every rule on every change it applies to, and every limit on the whole revision.

    ``changes`` are the objects the revision would create, update or prune, across the fleet.
    """
    summary = {
        "id": revision,
        "objectsChanged": len(changes),
        "clustersAffected": len({c.cluster for c in changes}),
    }
    ordered = sorted(changes, key=lambda c: c.key)
    verdicts = tuple(
        _judge_rule(rule, change, summary)
        for change in ordered
        for rule in policy.rules
        if rule.applies_to(change)
    )
    limits = tuple(_judge_limit(limit, ordered) for limit in policy.limits)
    return GuardReport(revision, verdicts, limits)
