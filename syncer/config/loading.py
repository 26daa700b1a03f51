"""Reading the agent's files and checking their shape, with errors that name the file and line.

Every file of the agent (the config, the trust, rollout and guard policies, and the key, certificate,
token and secret files they or the command line name) is read or checked through ``syncer.bounded``:
the same rules as a fleet repository's manifests. A file is read only when it is a regular file
within ``MAX_CONFIG_FILE_BYTES`` (a FIFO, a device or a directory is refused before a byte is read);
YAML is strict (a duplicate key, an integer beyond 64 bits, an alias bomb or a tag beyond JSON values
is refused with file:line).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from syncer.bounded.files import check_file, read_bounded, read_text
from syncer.bounded.limits import YamlLimits
from syncer.bounded.problems import ReadProblem
from syncer.bounded.strict_yaml import JsonPath, YamlDocument, load_yaml
from syncer.config.settings import MAX_CONFIG_FILE_BYTES, MAX_KUBECONFIG_BYTES
from syncer.errors import ConfigError, Problem


def _said(problem: Problem) -> str:
    said = "not valid YAML: " if problem.kind == ReadProblem.YAML_SYNTAX else ""
    return f"{problem.location}: {said}{problem.message}"


def config_error(problems: Sequence[Problem]) -> ConfigError:
    """One ``ConfigError`` telling every problem found in a file, each with file:line:column."""
    return ConfigError("\n".join(_said(p) for p in problems))


@dataclass(frozen=True)
class YamlConfig:
    """One YAML file of the agent, read: its top-level mapping, its text and where each node is."""

    data: Mapping[str, Any]
    text: str
    document: YamlDocument


def load_yaml_file(path: Path) -> YamlConfig:
    """The file at ``path`` as one YAML mapping; ``ConfigError`` with file:line for any problem."""
    shown = str(path)
    text = read_text(path, shown, MAX_CONFIG_FILE_BYTES)
    if isinstance(text, Problem):
        raise config_error([text])
    loaded = load_yaml(text, shown, YamlLimits(max_documents=1))
    if loaded.problems:
        raise config_error(loaded.problems)
    document = loaded.documents[0] if loaded.documents else YamlDocument(shown, 0, None, {})
    data = {} if document.data is None else document.data
    if not isinstance(data, Mapping):
        raise ConfigError(f"{path}: the top level must be a mapping, not {type(data).__name__}")
    return YamlConfig(data, text, document)


def load_yaml_mapping(path: Path) -> Mapping[str, Any]:
    """The top-level mapping of a YAML file (``load_yaml_file``)."""
    return load_yaml_file(path).data


class Fields:
    """Typed access to one mapping of a config file; every problem names the file and the key path,
    and the line and column of the key when the mapping was read from a file (``document``, with
    ``at`` the JSON path of this mapping in it)."""

    def __init__(
        self,
        data: Mapping[str, Any],
        *,
        origin: str,
        where: str = "",
        document: YamlDocument | None = None,
        at: JsonPath = (),
    ) -> None:
        self._data = data
        self.origin = origin
        self.where = where
        self._document = document
        self._at = at

    @classmethod
    def of(cls, loaded: YamlConfig) -> Fields:
        """The top level of a file read by ``load_yaml_file``."""
        return cls(loaded.data, origin=loaded.document.path, document=loaded.document)

    def located(self, *at: str | int) -> str:
        """``file:line:column`` of the node at ``at`` below this mapping (its nearest located ancestor
        when absent), or the file alone for a mapping not read from a file."""
        if self._document is None:
            return self.origin
        return str(self._document.location((*self._at, *at)))

    def error(self, key: str, problem: str) -> ConfigError:
        return ConfigError(f"{self.located(key)}: {self.path_of(key)}: {problem}")

    def path_of(self, key: str) -> str:
        return f"{self.where}.{key}" if self.where else key

    def reject_unknown(self, known: set[str]) -> None:
        unknown = sorted(str(k) for k in self._data if k not in known)
        if unknown:
            where = self.where or "top level"
            raise ConfigError(
                f"{self.located(unknown[0])}: {where}: unknown key(s) {', '.join(unknown)}"
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
        at = (*self._at, key) if index is None else (*self._at, key, index)
        if value is None and index is None:
            return Fields({}, origin=self.origin, where=label, document=self._document, at=at)
        if not isinstance(value, Mapping):
            where = self.located(*at[len(self._at) :])
            raise ConfigError(f"{where}: {label}: must be a mapping, not {type(value).__name__}")
        return Fields(value, origin=self.origin, where=label, document=self._document, at=at)

    def item(self, key: str, index: int, data: Mapping[str, Any]) -> Fields:
        """``data`` read as the item at ``index`` of the list under ``key``: a shorthand (such as a
        bare string) the caller has spelled out as a mapping."""
        label = f"{self.path_of(key)}[{index}]"
        at = (*self._at, key, index)
        return Fields(data, origin=self.origin, where=label, document=self._document, at=at)

    def read_file(self, key: str, path: Path) -> bytes:
        """The file ``path`` that ``key`` names (``read_agent_file``); errors name the key too."""
        try:
            return read_agent_file(path)
        except ConfigError as err:
            raise self.error(key, str(err)) from None

    def check_file(self, key: str, path: Path, max_bytes: int = MAX_CONFIG_FILE_BYTES) -> Path:
        """``path`` once ``check_agent_file`` passes; errors name the key too."""
        try:
            check_agent_file(path, max_bytes)
        except ConfigError as err:
            raise self.error(key, str(err)) from None
        return path


def read_agent_file(path: Path) -> bytes:
    """A file the agent is pointed at (an OpenPGP key, the webhook's secret), read within the same
    type and size rules as its config; ``ConfigError`` naming the file otherwise."""
    data = read_bounded(path, str(path), MAX_CONFIG_FILE_BYTES)
    if isinstance(data, Problem):
        raise ConfigError(f"{path}: {data.message}")
    return data


def check_kubeconfig(kubeconfig: str) -> None:
    """``check_agent_file`` for the kubeconfig a command is given ("": each file of ``$KUBECONFIG``,
    or ``~/.kube/config``), within ``MAX_KUBECONFIG_BYTES``."""
    named = [kubeconfig] if kubeconfig else os.environ.get("KUBECONFIG", "").split(os.pathsep)
    for path in [p for p in named if p] or [str(Path.home() / ".kube" / "config")]:
        check_agent_file(Path(path).expanduser(), MAX_KUBECONFIG_BYTES)


def check_agent_file(path: Path, max_bytes: int = MAX_CONFIG_FILE_BYTES) -> None:
    """Refuse a file another program reads for the agent (an SSH key, a token, a kubeconfig, a TLS
    certificate) when it exists and is not a regular file within ``max_bytes``; it is not read here,
    and a file not there yet is left to the program that reads it."""
    refused = check_file(path, str(path), max_bytes)
    if refused is not None and path.exists():
        raise ConfigError(f"{path}: {refused.message}")
