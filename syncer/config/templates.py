"""Analysis templates of the rollout policy: metrics defined once with arguments, used by waves.

A template is named, declares its arguments (``args``: each a ``name`` and an optional default
``value``) and holds ``metrics`` written like a wave's, where ``{{args.NAME}}`` stands for an
argument's value in any text (a query, a condition, a duration). Templates come from the policy's
``analysisTemplates`` and from the file its ``analysisTemplatesFile`` names (relative to the
policy's folder; a file whose top level is ``analysisTemplates``). A wave's (or the defaults')
``analysis.templates`` uses them: ``- {name: error-rate, args: {threshold: 0.05}}``.

Everything is checked at load, each problem with file:line:column: a reference to an argument the
template does not declare, an unknown template, an argument the template does not take, one it
needs and is not given, and each metric once filled (its query and conditions as a wave's are).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from syncer.config.loading import Fields, load_yaml_file
from syncer.errors import ConfigError

TEMPLATES_KEY = "analysisTemplates"
FILE_KEY = "analysisTemplatesFile"
_NAME = re.compile(r"^[a-z0-9]([-a-z0-9_]{0,61}[a-z0-9])?$")
_ARG_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,62}$")
_REFERENCE = re.compile(r"\{\{\s*args\.([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")
_BRACES = re.compile(r"\{\{(.*?)\}\}")


@dataclass(frozen=True)
class Arg:
    """One argument of a template; ``default`` None: a wave must give it."""

    name: str
    default: Any = None


@dataclass(frozen=True)
class Template:
    """A template as read: its name, arguments and the located mapping holding its ``metrics``."""

    name: str
    args: tuple[Arg, ...]
    fields: Fields

    def metrics(self) -> list[Any]:
        return self.fields.items("metrics")


def _references(value: Any) -> list[str]:
    """Every ``{{...}}`` in the text of ``value`` (strings of nested mappings and lists)."""
    if isinstance(value, str):
        return _BRACES.findall(value)
    if isinstance(value, Mapping):
        return [r for v in value.values() for r in _references(v)]
    if isinstance(value, list):
        return [r for v in value for r in _references(v)]
    return []


def _args(fields: Fields) -> tuple[Arg, ...]:
    found: list[Arg] = []
    for index in range(len(fields.items("args"))):
        arg = fields.child("args", index)
        arg.reject_unknown({"name", "value"})
        name = arg.string("name")
        if not _ARG_NAME.match(name):
            raise arg.error("name", f"{name!r} must be letters, digits and '_' (not starting with a digit)")
        if name in {a.name for a in found}:
            raise arg.error("name", f"argument {name} is declared twice")
        found.append(Arg(name, arg.raw("value")))
    return tuple(found)


def _template(fields: Fields) -> Template:
    fields.reject_unknown({"name", "args", "metrics"})
    name = fields.string("name")
    if not _NAME.match(name):
        raise fields.error("name", f"{name!r} must be lower-case letters, digits, '-' and '_'")
    args = _args(fields)
    if not fields.items("metrics"):
        raise fields.error("metrics", f"template {name} needs at least one metric")
    declared = {a.name for a in args}
    for index, metric in enumerate(fields.items("metrics")):
        item = fields.child("metrics", index)
        for key in sorted(metric):
            for inside in _references(metric[key]):
                match = _REFERENCE.fullmatch("{{" + inside + "}}")
                if match is None:
                    raise item.error(key, f"{{{{{inside}}}}} is not an argument: write {{{{args.NAME}}}}")
                if match.group(1) not in declared:
                    known = ", ".join(sorted(declared)) or "none"
                    raise item.error(
                        key, f"template {name} declares no argument {match.group(1)} (args: {known})"
                    )
    return Template(name, args, fields)


def _add(found: dict[str, Template], template: Template) -> None:
    if template.name in found:
        raise template.fields.error("name", f"template {template.name} is defined twice")
    found[template.name] = template


def parse_templates(top: Fields, base: Path | None) -> dict[str, Template]:
    """The templates of the policy (``top``) and of the file it names, by name."""
    found: dict[str, Template] = {}
    for index in range(len(top.items(TEMPLATES_KEY))):
        _add(found, _template(top.child(TEMPLATES_KEY, index)))
    if top.has(FILE_KEY):
        named = Path(top.string(FILE_KEY))
        path = top.check_file(FILE_KEY, base / named if base is not None else named)
        other = Fields.of(load_yaml_file(path))
        other.reject_unknown({TEMPLATES_KEY})
        for index in range(len(other.items(TEMPLATES_KEY))):
            _add(found, _template(other.child(TEMPLATES_KEY, index)))
    return found


def _fill(value: Any, values: Mapping[str, Any]) -> Any:
    """``value`` with each ``{{args.NAME}}`` replaced; a text that is one reference alone takes the
    argument's value as it was written (a number stays a number)."""
    if isinstance(value, str):
        whole = _REFERENCE.fullmatch(value.strip())
        if whole is not None:
            return values[whole.group(1)]
        return _REFERENCE.sub(lambda m: _text(values[m.group(1)]), value)
    if isinstance(value, Mapping):
        return {k: _fill(v, values) for k, v in value.items()}
    if isinstance(value, list):
        return [_fill(v, values) for v in value]
    return value


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


@dataclass(frozen=True)
class Use:
    """One use of a template by a wave: the template, the values of its arguments, and where the use
    is written (for the problems of the metrics once filled)."""

    template: Template
    values: Mapping[str, Any]
    fields: Fields

    def metrics(self) -> list[Fields]:
        """The template's metrics filled with the values, each located where the template writes it."""
        return [
            self.template.fields.item("metrics", index, _fill(metric, self.values))
            for index, metric in enumerate(self.template.metrics())
        ]

    def told(self, err: ConfigError) -> ConfigError:
        """``err`` (a problem of a filled metric) saying which use of the template it came from."""
        given = ", ".join(f"{k}={_text(v)}" for k, v in sorted(self.values.items())) or "no arguments"
        return ConfigError(
            f"{err} (template {self.template.name} as used at {self.fields.located('name')}"
            f" by {self.fields.where} with {given})"
        )


def parse_uses(fields: Fields, templates: Mapping[str, Template]) -> list[Use]:
    """The ``templates`` list of an ``analysis`` mapping (``fields``): each a ``name`` and ``args``."""
    uses: list[Use] = []
    for index in range(len(fields.items("templates"))):
        use = fields.child("templates", index)
        use.reject_unknown({"name", "args"})
        name = use.string("name")
        template = templates.get(name)
        if template is None:
            known = ", ".join(sorted(templates)) or "none"
            raise use.error("name", f"no analysis template {name} (defined: {known})")
        given = use.raw("args") or {}
        if not isinstance(given, Mapping):
            raise use.error(
                "args", f"must be a mapping of argument names to values, not {type(given).__name__}"
            )
        declared = {a.name: a for a in template.args}
        unknown = sorted(str(k) for k in given if k not in declared)
        if unknown:
            raise use.error("args", f"template {name} takes no argument(s) {', '.join(unknown)}")
        for key, value in given.items():
            if value is None or isinstance(value, Mapping | list):
                raise use.error("args", f"{key} must be a string, number or boolean, not {value!r}")
        values = {a.name: given.get(a.name, a.default) for a in template.args}
        missing = sorted(k for k, v in values.items() if v is None)
        if missing:
            raise use.error("args", f"template {name} needs argument(s) {', '.join(missing)}")
        uses.append(Use(template, values, use))
    return uses
