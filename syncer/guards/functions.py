"""The Kubernetes CEL functions a guard may call beyond standard CEL: semver and quantity.

They carry the names and call forms of the Kubernetes CEL libraries (``semver(s)``, ``isSemver(s)``,
``<semver>.isLessThan(<semver>)``, ``quantity(s)``, ``<quantity>.compareTo(<quantity>)``, ...), so a
rule reads the same in a guard policy and in a ValidatingAdmissionPolicy. The CEL runtime used here
cannot hold opaque values of a custom type, so a parsed version or quantity is a map tagged with its
kind; comparing a version with a quantity is an error, as it is in Kubernetes.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from decimal import Decimal, InvalidOperation
from typing import Any

import semver

SEMVER = "kubernetes.Semver"
QUANTITY = "kubernetes.Quantity"
_TAG = "@type"

# resource.Quantity's suffixes: binary (Ki..Ei), decimal SI (n..E) and decimal exponents (e3, E-2).
_BINARY = {"Ki": 1, "Mi": 2, "Gi": 3, "Ti": 4, "Pi": 5, "Ei": 6}
_DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_QUANTITY = re.compile(r"^([+-]?(?:\d+(?:\.\d*)?|\.\d+))(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?\d+)?$")


def _normalized_version(text: str) -> str:
    """``v7.2`` -> ``7.2.0``, ``07.02.1`` -> ``7.2.1``: the lenient form of ``semver(s, true)``."""
    body = text[1:] if text[:1] in ("v", "V") else text
    core, sep, rest = body.partition("-")
    if not sep:
        core, sep, rest = body.partition("+")
    parts = core.split(".")
    if not 1 <= len(parts) <= 3 or not all(p.isdigit() for p in parts):
        return text
    parts = [str(int(p)) for p in parts] + ["0"] * (3 - len(parts))
    return ".".join(parts) + (sep + rest if sep else "")


def _version(text: str, normalize: bool = False) -> semver.Version:
    try:
        return semver.Version.parse(_normalized_version(text) if normalize else text)
    except (ValueError, TypeError):
        raise ValueError(f"{text!r} is not a semantic version (MAJOR.MINOR.PATCH)") from None


def parse_semver(text: str, normalize: bool = False) -> dict[str, Any]:
    version = _version(text, normalize)
    return {_TAG: SEMVER, "text": str(version)}


def is_semver(text: str, normalize: bool = False) -> bool:
    try:
        _version(text, normalize)
    except ValueError:
        return False
    return True


def _quantity_value(text: str) -> Decimal:
    match = _QUANTITY.match(text.strip()) if isinstance(text, str) else None
    if not match:
        raise ValueError(f"{text!r} is not a quantity such as 10Gi, 500M or 0.5")
    number, suffix = Decimal(match.group(1)), match.group(2) or ""
    if suffix in _BINARY:
        return number * (Decimal(1024) ** _BINARY[suffix])
    if suffix in _DECIMAL:
        return number.scaleb(_DECIMAL[suffix])
    try:
        return number.scaleb(int(suffix[1:]))
    except (InvalidOperation, ValueError):
        raise ValueError(f"{text!r} is not a quantity such as 10Gi, 500M or 0.5") from None


def parse_quantity(text: str) -> dict[str, Any]:
    return {_TAG: QUANTITY, "text": text.strip(), "value": str(_quantity_value(text))}


def is_quantity(text: str) -> bool:
    try:
        _quantity_value(text)
    except ValueError:
        return False
    return True


def _kind(value: Mapping[str, Any]) -> str:
    kind = value.get(_TAG) if isinstance(value, Mapping) else None
    if kind not in (SEMVER, QUANTITY):
        raise ValueError("expects a value made by semver() or quantity()")
    return str(kind)


def compare(left: Mapping[str, Any], right: Mapping[str, Any]) -> int:
    """-1, 0 or 1; two versions by semantic version precedence, two quantities by amount."""
    kind = _kind(left)
    if _kind(right) != kind:
        raise ValueError(f"cannot compare a {kind} with a {_kind(right)}")
    if kind == SEMVER:
        return int(semver.Version.parse(str(left["text"])).compare(str(right["text"])))
    a, b = Decimal(str(left["value"])), Decimal(str(right["value"]))
    return (a > b) - (a < b)


def _semver_part(part: str) -> Callable[[Mapping[str, Any]], int]:
    def accessor(value: Mapping[str, Any]) -> int:
        if _kind(value) != SEMVER:
            raise ValueError(f"{part}() expects a value made by semver()")
        return int(getattr(semver.Version.parse(str(value["text"])), part))

    return accessor


def as_integer(value: Mapping[str, Any]) -> int:
    if _kind(value) != QUANTITY:
        raise ValueError("asInteger() expects a value made by quantity()")
    amount = Decimal(str(value["value"]))
    if amount != amount.to_integral_value():
        raise ValueError(f"{value['text']} is not a whole number")
    return int(amount)


MEMBER_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "compareTo": compare,
    "isLessThan": lambda a, b: compare(a, b) < 0,
    "isGreaterThan": lambda a, b: compare(a, b) > 0,
    "major": _semver_part("major"),
    "minor": _semver_part("minor"),
    "patch": _semver_part("patch"),
    "asInteger": as_integer,
}
