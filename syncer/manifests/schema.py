"""Validation of objects against JSON schemas, with every error located in the YAML it came from.

RedisCluster objects are validated against the ``openAPIV3Schema`` of the shipped CRD, translated to
the JSON Schema draft 4 that OpenAPI v3.0 builds on: ``x-kubernetes-int-or-string`` becomes an
``anyOf`` of integer and string, ``x-kubernetes-preserve-unknown-fields`` leaves an object open, and
every other object with ``properties`` is closed, so a field the apiserver would silently prune is
reported instead. ``default`` is not applied (the apiserver applies it). CEL rules are not evaluated.

Values are judged with the apiserver's semantics, not Python's: a ``pattern`` is an RE2 expression
(``\\d`` is ASCII only, ``$`` matches only at the very end), matched with RE2 itself; an ``integer``
may be written as a whole-number float (``3.0``), as the apiserver accepts it.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from typing import Any

import re2  # type: ignore[import-untyped]
from jsonschema import Draft4Validator, Draft202012Validator, ValidationError, validators
from jsonschema.protocols import Validator

from syncer.bounded.strict_yaml import JsonPath, YamlDocument
from syncer.crds import load_crd
from syncer.errors import Problem
from syncer.manifests.problems import ProblemKind

_SUBSCHEMA_MAPS = ("properties", "patternProperties")
_SUBSCHEMA_LISTS = ("allOf", "anyOf", "oneOf")
_SUBSCHEMAS = ("items", "additionalProperties", "not")
_DOCUMENTATION = ("description", "default", "example", "externalDocs", "format")
MAX_MESSAGE = 240


def kube_to_json_schema(node: Mapping[str, Any], *, in_value_validation: bool = False) -> dict[str, Any]:
    """A JSON Schema (draft 4) equivalent of a Kubernetes structural schema node."""
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in _SUBSCHEMA_MAPS:
            out[key] = {
                name: kube_to_json_schema(sub, in_value_validation=in_value_validation)
                for name, sub in value.items()
            }
        elif key in _SUBSCHEMA_LISTS:
            out[key] = [kube_to_json_schema(sub, in_value_validation=True) for sub in value]
        elif key in _SUBSCHEMAS and isinstance(value, Mapping):
            out[key] = kube_to_json_schema(value, in_value_validation=in_value_validation or key == "not")
        elif key == "nullable" or key.startswith("x-kubernetes-") or key in _DOCUMENTATION:
            continue
        else:
            out[key] = value
    if node.get("nullable") and "type" in out:
        out["type"] = [out["type"], "null"]
    if node.get("x-kubernetes-int-or-string") and "anyOf" not in out:
        out["anyOf"] = [{"type": "integer"}, {"type": "string"}]
    closed = not node.get("x-kubernetes-preserve-unknown-fields") and "additionalProperties" not in node
    if "properties" in node and closed and not in_value_validation:
        out["additionalProperties"] = False
    return out


@functools.cache
def _re2(pattern: str) -> Any:
    return re2.compile(pattern)


def _pattern(
    validator: Validator, pattern: str, instance: Any, schema: Mapping[str, Any]
) -> Iterable[ValidationError]:
    """``pattern`` as the apiserver (Go's RE2) matches it."""
    if validator.is_type(instance, "string") and _re2(pattern).search(instance) is None:
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


def _integer(checker: Any, instance: Any) -> bool:
    """An integer, or a float with no fractional part (``3.0``), as the apiserver takes either."""
    if isinstance(instance, bool):
        return False
    return isinstance(instance, int) or (isinstance(instance, float) and instance.is_integer())


def _like_the_apiserver(base: Any) -> Any:
    """``base`` with the apiserver's pattern and integer semantics."""
    return validators.extend(  # type: ignore[no-untyped-call]
        base,
        validators={"pattern": _pattern},
        type_checker=base.TYPE_CHECKER.redefine("integer", _integer),
    )


_KubeValidator = _like_the_apiserver(Draft4Validator)
_OwnValidator = _like_the_apiserver(Draft202012Validator)


@functools.cache
def crd_validators() -> Mapping[tuple[str, str], Validator]:
    """A validator per (apiVersion, kind) served by the shipped CRDs (their translation is checked
    against the draft 4 meta-schema by a unit test, not on each start)."""
    crd = load_crd()
    spec = crd["spec"]
    served: dict[tuple[str, str], Validator] = {}
    for version in spec["versions"]:
        schema = kube_to_json_schema(version["schema"]["openAPIV3Schema"])
        served[(f"{spec['group']}/{version['name']}", spec["names"]["kind"])] = _KubeValidator(schema)
    return served


def json_schema_validator(schema: Mapping[str, Any]) -> Validator:
    """A validator for one of syncer's own file formats (JSON Schema 2020-12).

    The schemas are syncer's own and fixed, so they are not checked against the meta-schema on each
    start (that costs more than validating a whole repository); a unit test checks each of them."""
    return _OwnValidator(schema)  # type: ignore[no-any-return]


def dotted(path: Iterable[str | int]) -> str:
    """``spec.rolloutStrategy.steps[0].pause`` for a JSON path."""
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else part)
    return text


def _shorten(message: str) -> str:
    return message if len(message) <= MAX_MESSAGE else message[: MAX_MESSAGE - 3] + "..."


def _error_problems(
    error: ValidationError, document: YamlDocument, kind: ProblemKind, base: JsonPath
) -> list[Problem]:
    path: JsonPath = (*base, *error.absolute_path)
    schema = error.schema if isinstance(error.schema, Mapping) else {}
    if error.validator == "additionalProperties" and schema.get("additionalProperties") is False:
        instance = error.instance if isinstance(error.instance, Mapping) else {}
        known = schema.get("properties", {})
        extras = [key for key in instance if key not in known]
        return [
            Problem(kind, f"unknown field {dotted((*path, key))}", document.location((*path, key)))
            for key in extras
        ]
    where = f"{dotted(path)}: " if path else ""
    return [Problem(kind, _shorten(where + _message(error)), document.location(path))]


def _message(error: ValidationError) -> str:
    """jsonschema's message, except for a ``oneOf`` of ``required`` lists, which reads better as a rule."""
    options = error.validator_value if error.validator == "oneOf" else None
    if isinstance(options, list) and all(isinstance(o, Mapping) and set(o) == {"required"} for o in options):
        names = [name for option in options for name in option["required"]]
        return f"set exactly one of {', '.join(names)}"
    return error.message


def schema_problems(
    validator: Validator, instance: Any, document: YamlDocument, kind: ProblemKind, base: JsonPath = ()
) -> list[Problem]:
    """Every schema error in ``instance`` (found at ``base`` of ``document``), located; none about a
    value the YAML loader found unusable (it has told that problem)."""
    problems: list[Problem] = []
    errors = sorted(validator.iter_errors(instance), key=lambda e: [str(p) for p in e.absolute_path])
    for error in errors:
        if (*base, *error.absolute_path) not in document.unusable:
            problems.extend(_error_problems(error, document, kind, base))
    return problems
