"""Reading kubeconfigs through the strict reader (``syncer.bounded``), at every client made: each
file a regular file within ``KUBECONFIG_BYTES`` (a FIFO is never waited on), strict bounded YAML (no
alias bombs, one document, a mapping). The kubernetes client gets the data, never the file.

The files are those kubectl reads: each file given, else each file ``$KUBECONFIG`` lists (missing ones
skipped; the first to name a cluster, context or user, and to set ``current-context``, wins), else
``~/.kube/config``. File paths inside a file are made absolute against the file's folder, as kubectl
resolves them.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from syncer.bounded.files import read_text
from syncer.bounded.limits import KUBECONFIG_BYTES, YamlLimits
from syncer.bounded.strict_yaml import load_yaml
from syncer.errors import ConfigError, Problem

_SECTIONS = (("clusters", "cluster"), ("contexts", "context"), ("users", "user"))
_FILE_KEYS = ("certificate-authority", "client-certificate", "client-key", "tokenFile")


def kubeconfig_files(kubeconfig: str) -> list[Path]:
    """The files a client of ``kubeconfig`` (one path, or several joined as in ``$KUBECONFIG``; ""
    for ``$KUBECONFIG`` or ``~/.kube/config``) reads."""
    named = kubeconfig or os.environ.get("KUBECONFIG", "")
    listed = [Path(p).expanduser() for p in named.split(os.pathsep) if p]
    if listed:
        found = [p for p in listed if p.exists()]
        return found or listed[:1]
    return [Path.home() / ".kube" / "config"]


def _read_one(path: Path) -> dict[str, Any]:
    text = read_text(path, str(path), KUBECONFIG_BYTES)
    if isinstance(text, Problem):
        raise ConfigError(f"kubeconfig {path}: {text.message}")
    loaded = load_yaml(text, str(path), YamlLimits())
    if loaded.problems:
        raise ConfigError(f"kubeconfig {loaded.problems[0]}")
    if len(loaded.documents) != 1 or not isinstance(loaded.documents[0].data, dict):
        raise ConfigError(f"kubeconfig {path}: must be one YAML mapping (clusters, contexts, users)")
    data: dict[str, Any] = loaded.documents[0].data
    for section, key in _SECTIONS:
        for entry in data.get(section) or []:
            inner = entry.get(key) if isinstance(entry, dict) else None
            if not isinstance(inner, dict):
                continue
            for name in _FILE_KEYS:
                value = inner.get(name)
                if isinstance(value, str) and value and not os.path.isabs(value):
                    inner[name] = str(path.parent / value)
    return data


def read_kubeconfig(kubeconfig: str) -> dict[str, Any]:
    """The kubeconfig data a client of ``kubeconfig`` uses (see the module docstring);
    ``ConfigError`` naming the file and what is wrong otherwise."""
    merged: dict[str, Any] = {}
    for path in kubeconfig_files(kubeconfig):
        data = _read_one(path)
        if not merged:
            merged = {**data, **{section: [] for section, _ in _SECTIONS}}
            merged.pop("current-context", None)
        for section, _ in _SECTIONS:
            known = {e.get("name") for e in merged[section] if isinstance(e, dict)}
            merged[section] += [
                e for e in data.get(section) or [] if not (isinstance(e, dict) and e.get("name") in known)
            ]
        if data.get("current-context") and not merged.get("current-context"):
            merged["current-context"] = data["current-context"]
    return merged
