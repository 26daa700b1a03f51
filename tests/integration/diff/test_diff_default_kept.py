"""A field git drops whose value stays by the CRD's default: the diff says syncer gives up owning
it, the sync does so (ownership and the applied-fields record), and the next diff is free again."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from syncer.domain.applied import APPLIED_FIELDS_ANNOTATION
from syncer.rollout.moves import RolloutOutcome
from tests.integration.diff.sync_kit import API_VERSION, Cluster, owned_by, rc, running_controller

pytestmark = pytest.mark.integration


def _cluster_doc(out: str) -> dict[str, object]:
    (wave,) = json.loads(out)["waves"]
    (cluster,) = wave["clusters"]
    return dict(cluster)


def test_a_dropped_field_the_default_keeps_is_released_and_the_next_diff_is_free(
    target: Cluster, tmp_path: Path
) -> None:
    ns = target.namespace
    path = ("spec", "replicasPerShard")
    with running_controller(target, (ns,)):
        first = target.sync(target.repo(tmp_path / "r1", [rc(ns, "cache", replicasPerShard=1)]), "r1")
        assert first.outcome is RolloutOutcome.APPLIED, first
        live = target.api.get(API_VERSION, "RedisCluster", "cache", ns)
        assert owned_by(live, "syncer", path)

        dropped = rc(ns, "cache")
        del dropped["spec"]["replicasPerShard"]  # the CRD's default is 1: the value stays
        repo = target.repo(tmp_path / "r2", [dropped])
        code, out = target.diff(repo)
        (change,) = _cluster_doc(out)["objects"]  # type: ignore[misc]
        assert change["action"] == "update", change
        assert "syncer stops owning" in change["message"]
        assert code == 1

        second = target.sync(repo, "r2")
        assert second.outcome is RolloutOutcome.APPLIED, second
        live = target.api.get(API_VERSION, "RedisCluster", "cache", ns)
        assert live["spec"]["replicasPerShard"] == 1
        assert not owned_by(live, "syncer", path)
        assert "replicasPerShard" not in live["metadata"]["annotations"][APPLIED_FIELDS_ANNOTATION]

        code, out = target.diff(repo)
        document = _cluster_doc(out)
        assert code == 0, out
        assert document["dryRuns"] == 0
        assert [o["action"] for o in document["objects"]] == ["unchanged"]  # type: ignore[attr-defined]
