"""The CustomResourceDefinitions syncer owns, shipped as package data.

Owns: the RedisCluster CRD file (the single schema of a RedisCluster), reading it from the installed
package, and which of its fields hold secrets (``format: password``). Must not: know how the schema is
used; manifests validation, the chart, the controller and the masking of secrets each read it from
here.
"""

from __future__ import annotations

import functools
from importlib.resources import files
from pathlib import Path
from typing import Any

import yaml

from syncer.domain.secrets import SensitiveFields, sensitive_fields

REDISCLUSTER_CRD = "redisclusters.redis.syncer.dev.yaml"


def crd_path(name: str = REDISCLUSTER_CRD) -> Path:
    """Filesystem path of a shipped CRD file (syncer is installed as a directory, never zipped)."""
    resource = files(__name__).joinpath(name)
    if not isinstance(resource, Path):
        raise RuntimeError(f"{name} is not on the filesystem; syncer must not run from a zip archive")
    return resource


def load_crd(name: str = REDISCLUSTER_CRD) -> dict[str, Any]:
    """The parsed CRD document (with libyaml's parser when PyYAML has it: the file is ours, and this
    is on the path of every ``syncer render`` and ``syncer diff``)."""
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    document = yaml.load(crd_path(name).read_text(encoding="utf-8"), Loader=loader)
    if not isinstance(document, dict):
        raise RuntimeError(f"{name} is not a YAML mapping")
    return document


@functools.cache
def shipped_sensitive_fields() -> SensitiveFields:
    """The fields the shipped CRDs mark ``format: password``: masked wherever syncer shows or records
    them (diff, render, apply results, logs, Events)."""
    return sensitive_fields(load_crd())
