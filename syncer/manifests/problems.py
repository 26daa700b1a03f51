"""The kinds of problem manifest loading reports beyond reading files (``ReadProblem``), and their order."""

from __future__ import annotations

from enum import StrEnum

from syncer.errors import Problem


class ProblemKind(StrEnum):
    """What is wrong with a revision's layout or objects; printed as the ``kind`` of a
    ``file:line:col: kind: message`` line. What is wrong with a file as a file, as text or as YAML is
    a ``syncer.bounded.problems.ReadProblem``, shared with the agent's own files."""

    LAYOUT = "layout"
    FLEET = "fleet"
    UNKNOWN_CLUSTER = "unknown-cluster"
    SYMLINK_ESCAPE = "symlink-escape"
    SYMLINK = "symlink"
    REPO_TOO_LARGE = "repo-too-large"
    NOT_AN_OBJECT = "not-an-object"
    MISSING_FIELD = "missing-field"
    INVALID_FIELD = "invalid-field"
    KIND_NOT_ALLOWED = "kind-not-allowed"
    DUPLICATE_OBJECT = "duplicate-object"
    SCHEMA = "schema"
    OVERLAY = "overlay"
    OVERLAY_TARGET = "overlay-target"


def sort_problems(problems: list[Problem]) -> list[Problem]:
    """Problems by file, line and column, so a revision always reports in the same order."""
    unique = dict.fromkeys(problems)
    return sorted(
        unique,
        key=lambda p: (p.location.path, p.location.line, p.location.column, p.kind, p.message),
    )
