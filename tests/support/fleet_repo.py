"""A fleet repository written to a folder (fleet.yaml and shared manifests), for tests of the rollout
that need desired fleets but no git history; and the canary-then-rest rollout those tests use."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from syncer.config.rollout import RolloutPolicy, WaveGate, WavePolicy
from syncer.domain.objects import DesiredFleet
from syncer.domain.selectors import LabelSelector
from syncer.manifests import load_fleet

LABELS: Mapping[str, Mapping[str, str]] = {
    "canary": {"tier": "canary"},
    "eu-1": {"tier": "prod"},
    "us-1": {"tier": "prod"},
}
"""The clusters of the test fleet and their labels: ``canary`` is the canary."""


def canary_then_rest(gate: WaveGate, *, rollback: bool = True) -> RolloutPolicy:
    """Two waves: the clusters labelled ``tier: canary``, then all the others."""
    canary = WavePolicy("canary", 1, LabelSelector.from_dict({"matchLabels": {"tier": "canary"}}), gate)
    return RolloutPolicy((canary, WavePolicy("rest", 100, None, gate)), rollback=rollback)


class FleetRepo:
    """A fleet repository on disk for the clusters of ``labels``, with ``prefix`` as the default
    namespace; each ``write_documents`` replaces its shared manifests and loads the revision."""

    def __init__(self, root: Path, prefix: str, labels: Mapping[str, Mapping[str, str]] = LABELS) -> None:
        self.root = root
        self.prefix = prefix
        fleet_file = {
            "apiVersion": "syncer.dev/v1alpha1",
            "kind": "Fleet",
            "defaults": {"namespace": prefix},
            "clusters": [{"name": n, "labels": dict(v)} for n, v in labels.items()],
        }
        (root / "base").mkdir(parents=True)
        (root / "fleet.yaml").write_text(yaml.safe_dump(fleet_file))

    def write_documents(self, revision: str, documents: list[dict[str, Any]]) -> DesiredFleet:
        (self.root / "base" / "objects.yaml").write_text(yaml.safe_dump_all(documents))
        return load_fleet(self.root, revision)

    def namespace(self, labels: Mapping[str, str] | None = None) -> dict[str, Any]:
        """The prefix's Namespace (with ``labels``)."""
        metadata: dict[str, Any] = {"name": self.prefix}
        if labels:
            metadata["labels"] = dict(labels)
        return {"apiVersion": "v1", "kind": "Namespace", "metadata": metadata}

    def redis_cluster(self, name: str = "sessions", version: str = "7.2.4") -> dict[str, Any]:
        """A RedisCluster in the prefix's namespace (no controller runs for it unless a test starts one)."""
        return {
            "apiVersion": "redis.syncer.dev/v1alpha1",
            "kind": "RedisCluster",
            "metadata": {"name": name, "namespace": self.prefix},
            "spec": {"shards": 1, "replicasPerShard": 0, "version": version},
        }
