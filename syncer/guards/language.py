"""The CEL environments of guard rules and of analysis conditions: which variables and functions an
expression may use. One language serves both; only the variables differ.

Every expression is parsed and type-checked when the policy is loaded (``compile_expression``), so an
undeclared variable, an unknown function or a wrong argument type is found then, with its line and
column, never while a revision is rolled out. Evaluation returns a value or an error as a result;
it never raises for a problem of the expression or its inputs.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from cel_expr_python import cel
from cel_expr_python.ext import ext_math, ext_optional, ext_strings

from syncer.guards import functions

# The variables of a change rule: the object live and as the revision wants it (null on a create /
# a prune), the cluster ({name, labels}), the revision ({id, objectsChanged, clustersAffected}) and
# the change itself ({action, kind, namespace, name, subject}).
VARIABLES = ("old", "new", "cluster", "revision", "change")
# The variables of an analysis condition: the value measured now and the baseline it is compared with
# (numbers; ``result`` is a list of series ``{value, labels}`` in a condition written over several
# series: see syncer.analysis).
ANALYSIS_VARIABLES = ("result", "baseline")

_ERROR = re.compile(r"^ERROR: <input>:(\d+):(\d+): (.*)$")


@dataclass(frozen=True)
class CelProblem:
    """One problem the CEL parser or type checker found; line and column count from 1 in the text."""

    line: int
    column: int
    message: str


def _declarations(lists: bool = False) -> list[Any]:
    """The functions of the language (``lists``: also ``len(list)``, for conditions over series)."""
    dyn, string, boolean, integer = cel.Type.DYN, cel.Type.STRING, cel.Type.BOOL, cel.Type.INT
    value = cel.Type.Map(string, dyn)

    def overload(name: str, result: Any, params: list[Any], impl: Any, member: bool = False) -> Any:
        return cel.Overload(name, return_type=result, parameters=params, is_member=member, impl=impl)

    decls = [
        cel.FunctionDecl(
            "semver",
            [
                overload("semver_string", value, [string], functions.parse_semver),
                overload("semver_string_bool", value, [string, boolean], functions.parse_semver),
            ],
        ),
        cel.FunctionDecl(
            "isSemver",
            [
                overload("isSemver_string", boolean, [string], functions.is_semver),
                overload("isSemver_string_bool", boolean, [string, boolean], functions.is_semver),
            ],
        ),
        cel.FunctionDecl(
            "quantity", [overload("quantity_string", value, [string], functions.parse_quantity)]
        ),
        cel.FunctionDecl(
            "isQuantity", [overload("isQuantity_string", boolean, [string], functions.is_quantity)]
        ),
    ]
    results = {"compareTo": integer, "isLessThan": boolean, "isGreaterThan": boolean}
    for name, impl in functions.MEMBER_FUNCTIONS.items():
        if name in results:
            decls.append(
                cel.FunctionDecl(
                    name, [overload(f"map_{name}_map", results[name], [value, value], impl, True)]
                )
            )
        else:
            decls.append(cel.FunctionDecl(name, [overload(f"map_{name}", integer, [value], impl, True)]))
    if lists:
        decls.append(cel.FunctionDecl("len", [overload("len_list", integer, [cel.Type.List(dyn)], len)]))
    return decls


def _env(variables: Mapping[str, Any], lists: bool = False) -> Any:
    return cel.NewEnv(
        variables=dict(variables),
        extensions=[ext_strings.ExtStrings(), ext_optional.ExtOptional(), ext_math.ExtMath()],
        functions=_declarations(lists),
    )


_ENV = _env(dict.fromkeys(VARIABLES, cel.Type.DYN))
_ANALYSIS_ENV = _env(dict.fromkeys(ANALYSIS_VARIABLES, cel.Type.DOUBLE))
# A condition over several series: ``result`` is a list of {value: double, labels: {name: text}}.
_SERIES = cel.Type.List(cel.Type.Map(cel.Type.STRING, cel.Type.DYN))
_SERIES_ENV = _env({"result": _SERIES, "baseline": cel.Type.DOUBLE}, lists=True)
# A condition that reads ``result`` as a list (a macro, an index, its size): its problems are the
# ones of the list environment.
_READS_LIST = re.compile(r"\bresult\s*(\.|\[)|\b(size|len)\s*\(\s*result\b")


def _problems(text: str) -> tuple[CelProblem, ...]:
    """The ``ERROR: <input>:L:C: message`` lines of a CEL status message (the excerpt lines dropped)."""
    found = []
    for line in text.splitlines():
        match = _ERROR.match(line.strip().removeprefix("INVALID_ARGUMENT: "))
        if match:
            message = re.sub(r"( \(in container ''\))?( \[[A-Z_]+\])?$", "", match.group(3))
            found.append(CelProblem(int(match.group(1)), int(match.group(2)), message))
    return tuple(found) or (CelProblem(1, 1, text.strip()),)


@dataclass(frozen=True)
class Evaluation:
    """The value of an expression (``None`` with ``error`` set when it could not be evaluated)."""

    value: bool | None
    error: str = ""


@dataclass(frozen=True)
class Program:
    """A parsed and type-checked boolean expression. ``reads_list``: an analysis condition whose
    ``result`` is the list of series (``result.all(s, s.value < 0.01)``), not one number."""

    source: str
    compiled: Any = field(repr=False, compare=False)
    variables: tuple[str, ...] = VARIABLES
    reads_list: bool = False

    def evaluate(self, inputs: Mapping[str, Any]) -> Evaluation:
        data = {name: plain(inputs.get(name)) for name in self.variables}
        result = self.compiled.eval(data=data)
        kind = result.type().name()
        if kind == "BOOL":
            return Evaluation(bool(result.value()))
        if kind == "ERROR":
            return Evaluation(None, _runtime_message(str(result.value())))
        return Evaluation(None, f"the expression gave {_a(kind)}, not a bool")


def _a(kind: str) -> str:
    word = kind.lower().split("<")[0]
    return f"an {word}" if word[:1] in "aeiou" else f"a {word}"


def _runtime_message(text: str) -> str:
    """A CEL runtime status as a sentence: the status code dropped, the common cases reworded."""
    match = re.match(r'^NOT_FOUND: Key not found in map : "(.*)"$', text)
    if match:
        return f"no such key: {match.group(1)}"
    message = re.sub(r"^[A-Z_]+: ", "", text)
    if message.startswith("Applying SELECT to non-message type"):
        return "a field was read from null or from a value without fields (old is null on a create)"
    return message


# A CEL string literal (any quoting, raw or bytes; escapes skipped), or a number literal.
_LITERAL = re.compile(
    r"(?P<string>[rRbB]{0,2}(?:'''.*?'''|\"\"\".*?\"\"\"|'(?:\\.|[^'\\\n])*'|\"(?:\\.|[^\"\\\n])*\"))"
    r"|(?P<number>(?<![\w.])(?:\d+\.\d*|\.\d+|\d+)(?:[eE][+-]?\d+)?)",
    re.DOTALL,
)


def _unbounded_numbers(source: str) -> tuple[CelProblem, ...]:
    """A problem for each number literal of ``source`` that is no finite double (``1e999``, a
    5000-digit number): CEL would take it as infinity, and a condition holding it could not fail."""
    found = []
    for match in _LITERAL.finditer(source):
        number = match.group("number")
        if number is None or math.isfinite(float(number)):
            continue
        line = source.count("\n", 0, match.start()) + 1
        column = match.start() - (source.rfind("\n", 0, match.start()) + 1) + 1
        shown = number if len(number) <= 24 else f"{number[:12]}…({len(number)} characters)"
        found.append(CelProblem(line, column, f"the number {shown} is beyond a double: write a finite one"))
    return tuple(found)


def compile_expression(source: str, *, analysis: bool = False) -> Program | tuple[CelProblem, ...]:
    """A program for ``source``, or every problem the parser and the type checker found in it: a
    guard rule's, or (``analysis``) an analysis condition's over ``result`` and ``baseline``. A
    number literal beyond a double is a problem too (it would read as infinity). A condition that
    type-checks with ``result`` as a number reads one number; else one that type-checks with it as a
    list of series ``{value, labels}`` (with ``len(result)`` too) reads the list."""
    unbounded = _unbounded_numbers(source)
    if unbounded:
        return unbounded
    if not analysis:
        return _compiled(_ENV, source, "a rule", VARIABLES)
    scalar = _compiled(_ANALYSIS_ENV, source, "a condition", ANALYSIS_VARIABLES)
    if isinstance(scalar, Program):
        return scalar
    series = _compiled(_SERIES_ENV, source, "a condition", ANALYSIS_VARIABLES, reads_list=True)
    if isinstance(series, Program) or _READS_LIST.search(source):
        return series
    return scalar


def _compiled(
    env: Any, source: str, what: str, variables: tuple[str, ...], reads_list: bool = False
) -> Program | tuple[CelProblem, ...]:
    try:
        compiled = env.compile(source)
    except RuntimeError as err:
        return _problems(str(err))
    kind = compiled.return_type().name()
    if kind not in ("BOOL", "DYN"):
        return (CelProblem(1, 1, f"the expression gives {_a(kind)}; {what} must give a bool"),)
    return Program(source, compiled, variables, reads_list)


def plain(value: Any) -> Any:
    """Values as CEL takes them: dicts, lists, str, int, float, bool, None (anything else as text)."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    return str(value)
