"""Identity and content of Kubernetes objects as syncer sees them."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from syncer.errors import Location


@dataclass(frozen=True, order=True)
class ObjectKey:
    """Identifies one object in one cluster. ``group`` is empty for the core API group."""

    cluster: str
    group: str
    kind: str
    namespace: str
    name: str

    @property
    def subject(self) -> str:
        """``Kind/ns/name`` (``Kind/name`` for cluster-scoped objects), as change sets and errors name it."""
        if self.namespace:
            return f"{self.kind}/{self.namespace}/{self.name}"
        return f"{self.kind}/{self.name}"

    def __str__(self) -> str:
        return f"{self.cluster}:{self.subject}"


def api_group(api_version: str) -> str:
    """The API group of an ``apiVersion`` (``""`` for ``v1``)."""
    return api_version.rpartition("/")[0]


@dataclass(frozen=True)
class Manifest:
    """One desired object for one cluster, with where in the repository it came from."""

    key: ObjectKey
    api_version: str
    body: Mapping[str, Any]
    source: Location

    def canonical_json(self) -> str:
        return json.dumps(self.body, sort_keys=True, separators=(",", ":"))


@dataclass(frozen=True)
class ClusterManifests:
    """The desired objects of one cluster, in a deterministic order."""

    cluster: str
    manifests: tuple[Manifest, ...]
    content_hash: str = field(default="")
    labels: Mapping[str, str] = field(default_factory=dict, compare=False)

    @staticmethod
    def of(
        cluster: str, manifests: Iterable[Manifest], labels: Mapping[str, str] | None = None
    ) -> ClusterManifests:
        """Order the manifests and hash their content; the labels (from fleet.yaml) are not hashed."""
        ordered = tuple(sorted(manifests, key=lambda m: m.key))
        digest = hashlib.sha256()
        for m in ordered:
            digest.update(m.canonical_json().encode())
            digest.update(b"\n")
        return ClusterManifests(cluster, ordered, digest.hexdigest(), dict(labels or {}))


@dataclass(frozen=True)
class DesiredFleet:
    """What a revision wants: per cluster, its desired objects."""

    revision: str
    clusters: Mapping[str, ClusterManifests]
