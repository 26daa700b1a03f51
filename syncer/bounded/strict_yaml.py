"""Strict, bounded YAML loading that remembers where every node came from.

PyYAML's safe loader does the parsing; this module narrows it to JSON values (string keys, no
duplicate keys, no application tags, finite numbers, integers within 64 bits, so that a 5000-digit
integer is a problem at its line and not an exception) and bounds what an alias can cost:
aliases are counted while composing, and each document is measured with every alias expanded before
anything walks it, so an alias bomb is rejected without ever being expanded. Merge keys (``<<``)
work as in YAML 1.1. A UTF-8 byte order mark is accepted; any other encoding is rejected.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import yaml
from yaml.composer import Composer
from yaml.constructor import SafeConstructor
from yaml.events import AliasEvent
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode
from yaml.reader import ReaderError
from yaml.resolver import Resolver

from syncer.bounded.invisible import escaped_problems, text_problems
from syncer.bounded.limits import INT64_MAX, INT64_MIN, EventBudget, YamlLimits
from syncer.bounded.problems import ReadProblem, problem
from syncer.errors import Location, Problem

JsonPath = tuple[str | int, ...]

_TAG = "tag:yaml.org,2002:"


class _Mark(Protocol):
    """Where PyYAML saw a node or event; both counted from 0."""

    line: int
    column: int


@dataclass(frozen=True)
class YamlDocument:
    """One document of a file: its data (JSON values) and the 1-based line and column of each node.

    A mapping entry is located at its key, a sequence item at the item. ``unusable`` holds the paths
    of values that are a problem already (an integer beyond 64 bits, a non-finite number): they stand
    in the data as 0 or the float read, and checks of what they mean leave them to that problem.
    """

    path: str
    index: int
    data: Any
    marks: Mapping[JsonPath, tuple[int, int]]
    unusable: frozenset[JsonPath] = frozenset()

    def location(self, at: JsonPath = ()) -> Location:
        """Where the node at ``at`` is, or its nearest located ancestor."""
        for length in range(len(at), -1, -1):
            mark = self.marks.get(at[:length])
            if mark is not None:
                return Location(self.path, mark[0], mark[1])
        return Location(self.path)


@dataclass(frozen=True)
class YamlFile:
    """The documents read from one file and the problems found in it.

    Loading stops at the first syntax error or exceeded limit; documents before it are kept.
    """

    documents: tuple[YamlDocument, ...]
    problems: tuple[Problem, ...]


class _Rejected(Exception):
    """Stops loading a file: a limit was exceeded or a tag is not allowed."""

    def __init__(self, kind: ReadProblem, message: str, mark: _Mark | None) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.mark = mark


class _PythonParser(yaml.reader.Reader, yaml.scanner.Scanner, yaml.parser.Parser):
    """PyYAML's pure-Python reader, scanner and parser, for a PyYAML built without libyaml."""

    def __init__(self, text: str) -> None:
        yaml.reader.Reader.__init__(self, text)
        yaml.scanner.Scanner.__init__(self)
        yaml.parser.Parser.__init__(self)


# libyaml's parser scans and parses in C, several times faster than PyYAML's own; either way the
# nodes are composed by PyYAML's Python composer, so that every event is counted and bounded below.
if TYPE_CHECKING:
    from yaml._yaml import CParser as _EventParser
else:
    try:
        from yaml._yaml import CParser as _EventParser
    except ImportError:
        _EventParser = _PythonParser


class _StrictLoader(Composer, _EventParser, SafeConstructor, Resolver):
    """PyYAML's safe loader building only JSON values, with alias counting and a nesting bound.

    Duplicate keys, non-string keys and non-finite numbers are recorded in ``found`` and loading goes
    on; a disallowed tag or an exceeded limit stops the file.
    """

    def __init__(self, text: str, options: YamlLimits, budget: EventBudget) -> None:
        _EventParser.__init__(self, text)
        Composer.__init__(self)
        SafeConstructor.__init__(self)
        Resolver.__init__(self)
        self.found: list[tuple[ReadProblem, str, _Mark]] = []
        self.unusable: set[int] = set()
        self._options = options
        self._budget = budget
        self._aliases = 0
        self._depth = 0

    def get_event(self) -> Any:
        event = super().get_event()
        if not self._budget.spend():
            message = f"more than {self._budget.limit} YAML events in this revision; stopped reading here"
            raise _Rejected(ReadProblem.YAML_EVENT_LIMIT, message, event.start_mark if event else None)
        return event

    def compose_node(self, parent: Node | None, index: Any) -> Node | None:
        event = self.peek_event()
        mark: _Mark | None = event.start_mark if event else None
        if isinstance(event, AliasEvent):
            self._aliases += 1
            if self._aliases > self._options.max_aliases:
                message = f"more than {self._options.max_aliases} aliases in one file"
                raise _Rejected(ReadProblem.YAML_ALIAS_LIMIT, message, mark)
        self._depth += 1
        try:
            if self._depth > self._options.max_depth:
                message = f"nesting deeper than {self._options.max_depth} levels"
                raise _Rejected(ReadProblem.YAML_DEPTH_LIMIT, message, mark)
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def construct_mapping(self, node: MappingNode, deep: bool = False) -> dict[Hashable, Any]:
        self._check_keys(node)
        return super().construct_mapping(node, deep=deep)

    def _check_keys(self, node: MappingNode) -> None:
        seen: dict[str, _Mark] = {}
        for key_node, _ in node.value:
            if key_node.tag == _TAG + "merge":
                continue
            if not isinstance(key_node, ScalarNode) or key_node.tag != _TAG + "str":
                shown = key_node.value if isinstance(key_node, ScalarNode) else key_node.id
                message = f"mapping key {shown!r} is of type {key_node.tag.removeprefix(_TAG)}, not a string"
                self.found.append((ReadProblem.YAML_KEY, message, key_node.start_mark))
                continue
            first = seen.get(key_node.value)
            if first is not None:
                message = f"duplicate key {key_node.value!r} (first at line {first.line + 1})"
                self.found.append((ReadProblem.YAML_DUPLICATE_KEY, message, key_node.start_mark))
            else:
                seen[key_node.value] = key_node.start_mark


def _scalar(node: Node) -> ScalarNode:
    if not isinstance(node, ScalarNode):
        found = "mapping" if isinstance(node, MappingNode) else "sequence"
        message = f"expected a scalar node, but found a {found}"
        raise yaml.constructor.ConstructorError(None, None, message, node.start_mark)
    return node


def _finite_float(loader: _StrictLoader, node: Node) -> float:
    value = loader.construct_yaml_float(_scalar(node))
    if not math.isfinite(value):
        loader.found.append(
            (ReadProblem.YAML_VALUE, f"{node.value!r} is not a finite number", node.start_mark)
        )
        loader.unusable.add(id(node))
    return value


# Sign, base prefix and 64 binary digits: the longest text of an integer within 64 bits.
_INT_TEXT = 67


def _bounded_int(loader: _StrictLoader, node: Node) -> int:
    scalar = _scalar(node)
    text = scalar.value.replace("_", "")
    value = 0 if len(text) > _INT_TEXT else loader.construct_yaml_int(scalar)
    if len(text) > _INT_TEXT or not INT64_MIN <= value <= INT64_MAX:
        shown = f"{text[:20]}... ({len(text)} characters)" if len(text) > 40 else repr(text)
        message = f"integer {shown} is outside the 64-bit range ({INT64_MIN} to {INT64_MAX})"
        loader.found.append((ReadProblem.YAML_VALUE, message, node.start_mark))
        loader.unusable.add(id(node))
        return 0
    return value


def _timestamp_as_string(loader: _StrictLoader, node: Node) -> str:
    return str(loader.construct_scalar(_scalar(node)))


def _reject_tag(loader: _StrictLoader, node: Node) -> None:
    message = f"tag {node.tag!r} is not allowed: these files hold JSON values only"
    raise _Rejected(ReadProblem.YAML_TAG, message, node.start_mark)


yaml.add_constructor(_TAG + "float", _finite_float, Loader=_StrictLoader)
yaml.add_constructor(_TAG + "int", _bounded_int, Loader=_StrictLoader)
yaml.add_constructor(_TAG + "timestamp", _timestamp_as_string, Loader=_StrictLoader)
for _tag in ("binary", "set", "omap", "pairs"):
    yaml.add_constructor(_TAG + _tag, _reject_tag, Loader=_StrictLoader)
yaml.add_constructor(None, _reject_tag, Loader=_StrictLoader)


def _children(node: Node) -> list[Node]:
    if isinstance(node, MappingNode):
        return [part for pair in node.value for part in pair]
    if isinstance(node, SequenceNode):
        return list(node.value)
    return []


def _check_expansion(root: Node, options: YamlLimits) -> None:
    """Reject a document whose alias-expanded size exceeds the bound, without expanding it."""
    sizes: dict[int, int] = {}
    open_nodes: set[int] = set()

    def size(node: Node) -> int:
        known = sizes.get(id(node))
        if known is not None:
            return known
        if id(node) in open_nodes:
            raise _Rejected(
                ReadProblem.YAML_EXPANSION_LIMIT, "an alias refers to a node containing it", node.start_mark
            )
        open_nodes.add(id(node))
        total = 1 + sum(size(child) for child in _children(node))
        open_nodes.discard(id(node))
        sizes[id(node)] = total
        return total

    if size(root) <= options.max_nodes:
        return
    node = root
    while True:
        bigger = next((c for c in _children(node) if sizes[id(c)] > options.max_nodes), None)
        if bigger is None:
            break
        node = bigger
    raise _Rejected(
        ReadProblem.YAML_EXPANSION_LIMIT,
        f"node expands to {sizes[id(node)]} nodes through aliases (limit {options.max_nodes})",
        node.start_mark,
    )


def _marks(
    root: Node, options: YamlLimits, unusable: set[int]
) -> tuple[dict[JsonPath, tuple[int, int]], frozenset[JsonPath]]:
    """Line and column of every node by JSON path, enforcing the depth bound with aliases expanded,
    and the paths of the ``unusable`` nodes."""
    marks: dict[JsonPath, tuple[int, int]] = {}
    unusable_paths: set[JsonPath] = set()

    def walk(path: JsonPath, node: Node, mark: _Mark) -> None:
        if len(path) > options.max_depth:
            raise _Rejected(
                ReadProblem.YAML_DEPTH_LIMIT,
                f"nesting deeper than {options.max_depth} levels once aliases are expanded",
                node.start_mark,
            )
        marks[path] = (mark.line + 1, mark.column + 1)
        if id(node) in unusable:
            unusable_paths.add(path)
        if isinstance(node, MappingNode):
            for key, value in node.value:
                walk((*path, str(key.value)), value, key.start_mark)
        elif isinstance(node, SequenceNode):
            for index, item in enumerate(node.value):
                walk((*path, index), item, item.start_mark)

    walk((), root, root.start_mark)
    return marks, frozenset(unusable_paths)


def _text_position(text: str, index: int) -> tuple[int, int]:
    line = text.count("\n", 0, index) + 1
    return line, index - (text.rfind("\n", 0, index) + 1) + 1


def _char_index(text: str, byte_offset: int) -> int:
    return len(text.encode("utf-8", errors="surrogatepass")[:byte_offset].decode("utf-8", errors="ignore"))


def load_yaml(text: str, path: str, options: YamlLimits, budget: EventBudget | None = None) -> YamlFile:
    """Every document of one file, or the problems that make it unusable. ``budget`` counts the
    events of the whole revision (a fresh one per call when not given)."""
    documents: list[YamlDocument] = []
    problems: list[Problem] = text_problems(text, path)
    loader: _StrictLoader | None = None
    try:
        loader = _StrictLoader(text, options, budget or EventBudget(options.max_events))
        while loader.check_node():
            node = loader.get_node()
            if node is None:
                continue
            if len(documents) >= options.max_documents:
                message = f"more than {options.max_documents} documents in one file"
                raise _Rejected(ReadProblem.YAML_DOCUMENT_LIMIT, message, node.start_mark)
            _check_expansion(node, options)
            problems.extend(escaped_problems(node, text, path))
            data = loader.construct_document(node)
            marks, unusable = _marks(node, options, loader.unusable)
            documents.append(YamlDocument(path, len(documents), data, marks, unusable))
    except _Rejected as e:
        line, column = (e.mark.line + 1, e.mark.column + 1) if e.mark else (0, 0)
        problems.append(problem(e.kind, e.message, path, line, column))
    except ReaderError as e:
        # libyaml counts the position in UTF-8 bytes (its encoding reads "?"), PyYAML in characters.
        index = _char_index(text, e.position) if e.encoding == "?" else e.position
        line, column = _text_position(text, index)
        code = e.character if isinstance(e.character, int) else ord(e.character)
        problems.append(
            problem(ReadProblem.ENCODING, f"character U+{code:04X} is not allowed", path, line, column)
        )
    except UnicodeEncodeError as e:
        line, column = _text_position(text, e.start)
        code = ord(text[e.start])
        problems.append(
            problem(ReadProblem.ENCODING, f"character U+{code:04X} is not allowed", path, line, column)
        )
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        line, column = (mark.line + 1, mark.column + 1) if mark else (0, 0)
        context = e.context or ""
        if e.context and e.context_mark is not None and e.context_mark is not mark:
            context += f" started at line {e.context_mark.line + 1}, column {e.context_mark.column + 1},"
        message = " ".join(part for part in (context, e.problem) if part) or "invalid YAML"
        problems.append(problem(ReadProblem.YAML_SYNTAX, message, path, line, column))
    finally:
        if loader is not None:
            problems[:0] = [
                problem(kind, message, path, mark.line + 1, mark.column + 1)
                for kind, message, mark in loader.found
            ]
            loader.dispose()
    return YamlFile(tuple(documents), tuple(problems))
