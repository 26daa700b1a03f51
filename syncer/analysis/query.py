"""PromQL query templates: their arguments, filled per cluster and object, checked at load.

A template names its arguments as ``${cluster}``, ``${namespace}``, ``${name}``, ``${revision}`` and
``${wave}`` (``string.Template``). At load every argument must be known and the query, filled with
sample values, must parse as PromQL (``promql_parser``, the parser of Prometheus' grammar); a query
that does not parse is a configuration error before any rollout.
"""

from __future__ import annotations

import json
import string
from collections.abc import Callable
from dataclasses import asdict, dataclass
from urllib.parse import quote

import promql_parser

ARGUMENTS = ("cluster", "namespace", "name", "revision", "wave")
MAX_QUERY_CHARS = 4096
"""The longest query template. The parser recurses on nesting and overflows its stack (killing the
process) on a query nested some ten thousand levels deep; within this length it never gets there."""
_SAMPLE = {"cluster": "cluster-a", "namespace": "default", "name": "cache", "revision": "0" * 40, "wave": "w"}


@dataclass(frozen=True)
class QueryArgs:
    """The values a template is filled with for one measurement."""

    cluster: str
    revision: str
    wave: str
    namespace: str = ""
    name: str = ""


def _quoted(value: str) -> str:
    """``value`` safe inside a PromQL double-quoted string."""
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def render_query(template: str, args: QueryArgs) -> str:
    """``template`` with its arguments filled (each escaped for a PromQL string)."""
    return string.Template(template).substitute({k: _quoted(v) for k, v in asdict(args).items()})


def check_query(template: str) -> str:
    """What is wrong with ``template`` (empty: nothing): an unknown or malformed argument, or PromQL
    that does not parse once the arguments are filled."""
    if len(template) > MAX_QUERY_CHARS:
        return f"longer than {MAX_QUERY_CHARS} characters ({len(template)})"
    parsed = string.Template(template)
    if not parsed.is_valid():
        return "a '$' that does not start an argument ${...} (write $$ for a literal '$')"
    unknown = sorted(set(parsed.get_identifiers()) - set(ARGUMENTS))
    if unknown:
        return f"unknown argument(s) {', '.join(unknown)} (known: {', '.join(ARGUMENTS)})"
    filled = parsed.substitute(_SAMPLE)
    try:
        promql_parser.parse(filled)
    except ValueError as err:
        return f"not valid PromQL: {err}"
    return ""


def fill(template: str, args: QueryArgs, escape: Callable[[str], str]) -> str:
    """``template`` (a web metric's URL or body) with its arguments filled, each through ``escape``."""
    return string.Template(template).substitute({k: escape(v) for k, v in asdict(args).items()})


def url_quoted(value: str) -> str:
    """``value`` safe anywhere in a URL's path or query."""
    return quote(value, safe="")


def json_escaped(value: str) -> str:
    """``value`` safe inside a JSON string."""
    return json.dumps(value)[1:-1]


def check_arguments(template: str) -> str:
    """What is wrong with the arguments of a web metric's URL or body (empty: nothing)."""
    parsed = string.Template(template)
    if not parsed.is_valid():
        return "a '$' that does not start an argument ${...} (write $$ for a literal '$')"
    unknown = sorted(set(parsed.get_identifiers()) - set(ARGUMENTS))
    if unknown:
        return f"unknown argument(s) {', '.join(unknown)} (known: {', '.join(ARGUMENTS)})"
    return ""


def sample(template: str) -> str:
    """``template`` filled with sample values (to check what it gives at load)."""
    return string.Template(template).substitute(_SAMPLE)


def uses_objects(template: str) -> bool:
    """Whether ``template`` is measured per object (it uses ``${namespace}`` or ``${name}``)."""
    return bool({"namespace", "name"} & set(string.Template(template).get_identifiers()))
