"""The guard policy: named CEL rules on planned changes and limits on whole revisions.

The policy is the agent's own file (``policies/guards.yaml`` by default), never a file of the fleet
repository, like the trust policy. Every expression is parsed and type-checked here, at load: a bad
rule is a ``ConfigError`` naming the file, line and column, so no revision ever meets it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from syncer.config.loading import Fields, load_yaml_file
from syncer.config.shapes import parse_selector
from syncer.errors import ConfigError, Location
from syncer.guards import (
    DEFAULT_ACTIONS,
    CelProblem,
    ChangeKind,
    ChangeRule,
    GuardPolicy,
    RevisionLimit,
    compile_expression,
)

_NAME = re.compile(r"^[a-z0-9]([-a-z0-9.]{0,61}[a-z0-9])?$")
_RULE_KEYS = {"name", "description", "expression", "message", "kinds", "actions", "clusters"}
_LIMIT_KEYS = {"name", "description", "maxObjectsChanged", "maxClustersAffected", "clusters"}


@dataclass(frozen=True)
class _Mark:
    """Where a value starts in the file: 0-based line and column, and its YAML scalar style."""

    line: int = 0
    column: int = 0
    style: str | None = None
    end_line: int = 0


def _marks(text: str, section: str, key: str) -> tuple[dict[int, _Mark], dict[int, _Mark]]:
    """Per entry of the list under ``section``: where the entry starts, and where its ``key`` value
    starts. Unparsable text gives no marks (``load_yaml_file`` has reported it already)."""
    entries: dict[int, _Mark] = {}
    values: dict[int, _Mark] = {}
    try:
        root = yaml.compose(text)
    except yaml.YAMLError:
        return entries, values
    if not isinstance(root, yaml.MappingNode):
        return entries, values
    for key_node, value_node in root.value:
        if key_node.value != section or not isinstance(value_node, yaml.SequenceNode):
            continue
        for index, item in enumerate(value_node.value):
            entries[index] = _Mark(item.start_mark.line, item.start_mark.column)
            for field_key, field_value in item.value if isinstance(item, yaml.MappingNode) else ():
                if field_key.value == key and isinstance(field_value, yaml.ScalarNode):
                    mark = field_value.start_mark
                    end = field_value.end_mark.line
                    values[index] = _Mark(mark.line, mark.column, field_value.style, end)
    return entries, values


def _problem_location(path: str, lines: list[str], mark: _Mark, problem: CelProblem) -> str:
    """file:line:column and message of a CEL problem. Literal blocks (``|``) keep the expression's
    lines and a one-line value is on one line, so both are exact; YAML folds any other value spanning
    lines into one, so the file line is the value's first and CEL's place is given in the text."""
    if mark.style == "|":
        first = lines[mark.line + 1] if mark.line + 1 < len(lines) else ""
        indent = len(first) - len(first.lstrip(" "))
        return f"{path}:{mark.line + problem.line + 1}:{indent + problem.column}: {problem.message}"
    if mark.end_line <= mark.line:
        quote = 1 if mark.style in ("'", '"') else 0
        return f"{path}:{mark.line + 1}:{mark.column + quote + problem.column}: {problem.message}"
    where = f"line {problem.line}, column {problem.column} of the folded expression"
    return f"{path}:{mark.line + 1}: {problem.message} (at {where}; a literal block, |, keeps lines)"


def _names(fields: Fields, key: str, allowed: set[str] | None = None) -> frozenset[str]:
    values = fields.strings(key, ())
    if allowed is not None:
        wrong = sorted(set(values) - allowed)
        if wrong:
            raise fields.error(key, f"{', '.join(wrong)}: must be among {', '.join(sorted(allowed))}")
    return frozenset(values)


def _rule(fields: Fields, origin: str, lines: list[str], mark: _Mark, where: Location) -> ChangeRule:
    fields.reject_unknown(_RULE_KEYS)
    name = fields.string("name")
    if not _NAME.match(name):
        raise fields.error("name", f"{name!r} must be lower-case letters, digits, '-' and '.'")
    source = fields.raw("expression")
    if not isinstance(source, str) or not source.strip():
        raise fields.error("expression", "is required: a CEL expression that gives a bool")
    compiled = compile_expression(source.rstrip())
    if isinstance(compiled, tuple):
        shown = (
            _problem_location(origin, lines, mark, p).replace(": ", f": rule {name}: ", 1) for p in compiled
        )
        raise ConfigError("\n".join(shown))
    actions = _names(fields, "actions", {str(k) for k in ChangeKind}) or DEFAULT_ACTIONS
    return ChangeRule(
        name=name,
        program=compiled,
        message=fields.string("message", ""),
        kinds=_names(fields, "kinds"),
        actions=frozenset(ChangeKind(a) for a in actions),
        clusters=parse_selector(fields.child("clusters")) if fields.has("clusters") else None,
        location=where,
    )


def _bound(fields: Fields, key: str) -> int | None:
    if not fields.has(key):
        return None
    value = fields.raw(key)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise fields.error(key, f"must be a whole number of at least 0, not {value!r}")
    return value


def _limit(fields: Fields, where: Location) -> RevisionLimit:
    fields.reject_unknown(_LIMIT_KEYS)
    name = fields.string("name")
    if not _NAME.match(name):
        raise fields.error("name", f"{name!r} must be lower-case letters, digits, '-' and '.'")
    objects, clusters = _bound(fields, "maxObjectsChanged"), _bound(fields, "maxClustersAffected")
    if objects is None and clusters is None:
        raise ConfigError(f"{fields.origin}: {fields.where}: give maxObjectsChanged or maxClustersAffected")
    selector = parse_selector(fields.child("clusters")) if fields.has("clusters") else None
    return RevisionLimit(name, objects, clusters, selector, where)


def _entries(top: Fields, key: str, origin: str, text: str) -> list[tuple[Fields, Location, _Mark]]:
    """Each entry of the list under ``key`` with its place in the file (errors name file:line)."""
    starts, values = _marks(text, key, "expression")
    found = []
    for index, raw in enumerate(top.items(key)):
        start = starts.get(index, _Mark())
        where = Location(origin, start.line + 1 if index in starts else 0)
        if not isinstance(raw, Mapping):
            raise ConfigError(f"{where}: {key}[{index}]: must be a mapping, not {type(raw).__name__}")
        found.append(
            (Fields(raw, origin=str(where), where=f"{key}[{index}]"), where, values.get(index, start))
        )
    return found


def parse_guard_policy(data: Mapping[str, Any], *, origin: str, text: str = "") -> GuardPolicy:
    """Validate an already-parsed guard policy; ``text`` (the file's content) gives line numbers."""
    top = Fields(data, origin=origin)
    top.reject_unknown({"rules", "limits"})
    lines = text.splitlines()
    rules = tuple(
        _rule(f, origin, lines, mark, where) for f, where, mark in _entries(top, "rules", origin, text)
    )
    limits = tuple(_limit(f, where) for f, where, _ in _entries(top, "limits", origin, text))
    names = [r.name for r in rules] + [limit.name for limit in limits]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise ConfigError(f"{origin}: two rules or limits have the same name {twice[0]!r}")
    return GuardPolicy(rules, limits, origin)


def load_guard_policy(path: Path) -> GuardPolicy:
    """The guard policy in ``path``; ``ConfigError`` with file:line (and column for CEL) otherwise."""
    loaded = load_yaml_file(path)
    return parse_guard_policy(loaded.data, origin=str(path), text=loaded.text)
