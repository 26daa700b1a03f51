"""Reading YAML files of the agent and checking their shape, with errors that name the file."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from syncer.errors import ConfigError


def load_yaml_mapping(path: Path) -> Mapping[str, Any]:
    """The top-level mapping of a YAML file; ``ConfigError`` naming the file when it is anything else."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror or exc}") from exc
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML: {exc}") from exc
    if data is None:
        return {}
    if not isinstance(data, Mapping):
        raise ConfigError(f"{path}: the top level must be a mapping, not {type(data).__name__}")
    return data


class Fields:
    """Typed access to one mapping of a config file; every problem names the file and the key path."""

    def __init__(self, data: Mapping[str, Any], *, origin: str, where: str = "") -> None:
        self._data = data
        self.origin = origin
        self.where = where

    def error(self, key: str, problem: str) -> ConfigError:
        return ConfigError(f"{self.origin}: {self.path_of(key)}: {problem}")

    def path_of(self, key: str) -> str:
        return f"{self.where}.{key}" if self.where else key

    def reject_unknown(self, known: set[str]) -> None:
        unknown = sorted(str(k) for k in self._data if k not in known)
        if unknown:
            raise ConfigError(
                f"{self.origin}: {self.where or 'top level'}: unknown key(s) {', '.join(unknown)}"
                f" (known: {', '.join(sorted(known))})"
            )

    def raw(self, key: str) -> Any:
        """The value under ``key`` as it is (None when absent), for shapes without an accessor here."""
        return self._data.get(key)

    def has(self, key: str) -> bool:
        return key in self._data and self._data[key] is not None

    def string(self, key: str, default: str | None = None) -> str:
        value = self._data.get(key)
        if value is None:
            if default is None:
                raise self.error(key, "is required")
            return default
        if not isinstance(value, str) or not value.strip():
            raise self.error(key, f"must be a non-empty string, not {value!r}")
        return value.strip()

    def boolean(self, key: str, default: bool) -> bool:
        value = self._data.get(key, default)
        if not isinstance(value, bool):
            raise self.error(key, f"must be true or false, not {value!r}")
        return value

    def number(self, key: str, default: float) -> float:
        value = self._data.get(key, default)
        if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
            raise self.error(key, f"must be a positive number, not {value!r}")
        return float(value)

    def items(self, key: str) -> list[Any]:
        value = self._data.get(key, [])
        if value is None:
            return []
        if not isinstance(value, list):
            raise self.error(key, f"must be a list, not {type(value).__name__}")
        return value

    def strings(self, key: str, default: tuple[str, ...]) -> tuple[str, ...]:
        if key not in self._data:
            return default
        value = self._data[key]
        if not isinstance(value, list) or not value:
            raise self.error(key, "must be a non-empty list of strings")
        for item in value:
            if not isinstance(item, str) or not item.strip():
                raise self.error(key, f"must hold non-empty strings, not {item!r}")
        return tuple(item.strip() for item in value)

    def child(self, key: str, index: int | None = None) -> Fields:
        """The mapping under ``key`` (or at ``index`` of the list under ``key``)."""
        value = self._data.get(key) if index is None else self.items(key)[index]
        label = self.path_of(key) if index is None else f"{self.path_of(key)}[{index}]"
        if value is None and index is None:
            return Fields({}, origin=self.origin, where=label)
        if not isinstance(value, Mapping):
            raise ConfigError(f"{self.origin}: {label}: must be a mapping, not {type(value).__name__}")
        return Fields(value, origin=self.origin, where=label)
