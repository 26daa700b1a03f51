"""The kinds of problem reading a file can find, before anything knows what the file means."""

from __future__ import annotations

from enum import StrEnum

from syncer.errors import Location, Problem


class ReadProblem(StrEnum):
    """What is wrong with a file as a file, as text or as YAML; printed as the ``kind`` of a
    ``file:line:col: kind: message`` line."""

    FILE_TYPE = "file-type"
    FILE_TOO_LARGE = "file-too-large"
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


def problem(kind: str, message: str, path: str, line: int = 0, column: int = 0) -> Problem:
    return Problem(kind, message, Location(path, line, column))
