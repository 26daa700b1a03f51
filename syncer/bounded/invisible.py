"""Invisible and bidirectional control characters: what is reviewed must be what is applied.

A fleet repository and the agent's policies are reviewed as text. Characters that render as nothing
(zero-width spaces and joiners, soft hyphens, tag characters, other format characters) or that reorder
the text around them (bidirectional overrides and isolates) let a value read one way in review and
another in effect, and control characters other than tab, line feed and carriage return have no place
in either. Each occurrence is a problem with its file, line and column, whether it is in a value, a key or a
comment, or produced by an escape sequence of a double-quoted scalar.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterator

from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from syncer.bounded.problems import ReadProblem, problem
from syncer.errors import Problem

_ALLOWED_CONTROLS = frozenset("\t\n\r")
_BIDI = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def is_hidden(ch: str) -> bool:
    """True for a control or format character (Unicode categories Cc and Cf) other than tab, line
    feed and carriage return; bidirectional controls and zero-width characters are among them."""
    if ch in _ALLOWED_CONTROLS:
        return False
    return ch in _BIDI or unicodedata.category(ch) in {"Cc", "Cf"}


def describe(ch: str) -> str:
    name = unicodedata.name(ch, "")
    kind = "a bidirectional control" if ch in _BIDI else "an invisible or control"
    return f"U+{ord(ch):04X}{f' ({name})' if name else ''}, {kind} character"


def _hidden_in(text: str, *, controls: bool = True) -> Iterator[tuple[int, str]]:
    for index, ch in enumerate(text):
        if is_hidden(ch) and (controls or unicodedata.category(ch) != "Cc"):
            yield index, ch


def text_problems(text: str, path: str, limit: int = 20) -> list[Problem]:
    """Every hidden format character of a file's text (a leading byte order mark excepted), at most
    ``limit``; raw control characters are the YAML reader's to reject."""
    body = text[1:] if text.startswith("\ufeff") else text
    offset = len(text) - len(body)
    found: list[Problem] = []
    for index, ch in _hidden_in(body, controls=False):
        at = index + offset
        line = text.count("\n", 0, at) + 1
        column = at - (text.rfind("\n", 0, at) + 1) + 1
        found.append(problem(ReadProblem.HIDDEN_CHARACTER, f"{describe(ch)}: {_WHY}", path, line, column))
        if len(found) >= limit:
            break
    return found


_WHY = "what is reviewed must be what is applied"


def escaped_problems(root: Node, text: str, path: str) -> list[Problem]:
    """Hidden characters that escape sequences of double-quoted scalars produce (each node once)."""
    found: list[Problem] = []
    seen: set[int] = set()
    stack = [root]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, ScalarNode):
            span = text[node.start_mark.index : node.end_mark.index]
            if node.style == '"' and "\\" in span:
                for _, ch in _hidden_in(node.value):
                    mark = node.start_mark
                    message = f"an escape sequence makes {describe(ch)}: {_WHY}"
                    found.append(
                        problem(ReadProblem.HIDDEN_CHARACTER, message, path, mark.line + 1, mark.column + 1)
                    )
                    break
        elif isinstance(node, MappingNode):
            stack.extend(part for pair in node.value for part in pair)
        elif isinstance(node, SequenceNode):
            stack.extend(node.value)
    return found
