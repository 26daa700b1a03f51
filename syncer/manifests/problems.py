"""The kinds of problem manifest loading reports, and helpers to build them."""

from __future__ import annotations

from enum import StrEnum

from syncer.errors import Location, Problem


class ProblemKind(StrEnum):
    """What is wrong; printed as the ``kind`` of a ``file:line:col: kind: message`` line."""

    LAYOUT = "layout"
    FLEET = "fleet"
    UNKNOWN_CLUSTER = "unknown-cluster"
    SYMLINK_ESCAPE = "symlink-escape"
    SYMLINK = "symlink"
    FILE_TYPE = "file-type"
    FILE_TOO_LARGE = "file-too-large"
    REPO_TOO_LARGE = "repo-too-large"
    ENCODING = "encoding"
    YAML_SYNTAX = "yaml-syntax"
    YAML_DUPLICATE_KEY = "yaml-duplicate-key"
    YAML_KEY = "yaml-key"
    YAML_TAG = "yaml-tag"
    YAML_VALUE = "yaml-value"
    YAML_ALIAS_LIMIT = "yaml-alias-limit"
    YAML_EXPANSION_LIMIT = "yaml-expansion-limit"
    YAML_DEPTH_LIMIT = "yaml-depth-limit"
    YAML_DOCUMENT_LIMIT = "yaml-document-limit"
    YAML_EVENT_LIMIT = "yaml-event-limit"
    HIDDEN_CHARACTER = "hidden-character"
    NOT_AN_OBJECT = "not-an-object"
    MISSING_FIELD = "missing-field"
    INVALID_FIELD = "invalid-field"
    KIND_NOT_ALLOWED = "kind-not-allowed"
    DUPLICATE_OBJECT = "duplicate-object"
    SCHEMA = "schema"
    OVERLAY = "overlay"
    OVERLAY_TARGET = "overlay-target"


def problem(kind: ProblemKind, message: str, path: str, line: int = 0, column: int = 0) -> Problem:
    return Problem(kind, message, Location(path, line, column))


def sort_problems(problems: list[Problem]) -> list[Problem]:
    """Problems by file, line and column, so a revision always reports in the same order."""
    unique = dict.fromkeys(problems)
    return sorted(
        unique,
        key=lambda p: (p.location.path, p.location.line, p.location.column, p.kind, p.message),
    )
