"""An object syncer applied whose managed-by label someone else took off, and that git no longer
wants: the diff lists it as kept ("no longer labelled"), and the sync keeps it, as the diff says."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from syncer.domain.applied import MANAGED_BY_LABEL
from syncer.kube import ApplyOptions
from tests.integration.diff.sync_kit import Cluster

pytestmark = pytest.mark.integration


def _namespace(name: str) -> dict[str, object]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}


def test_an_applied_object_whose_label_was_taken_is_kept_and_the_diff_says_so(
    target: Cluster, tmp_path: Path
) -> None:
    kept, other = f"{target.namespace}-a", f"{target.namespace}-b"
    first = target.repo(tmp_path / "r1", [_namespace(kept), _namespace(other)])
    target.sync(first, "r1")
    relabel = {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": kept, "labels": {MANAGED_BY_LABEL: "ops"}},
    }
    target.api.apply(relabel, ApplyOptions(field_manager="ops-tool", force=True))

    second = target.repo(tmp_path / "r2", [_namespace(other)])
    code, out = target.diff(second)
    objects = {o["name"]: o for w in json.loads(out)["waves"] for c in w["clusters"] for o in c["objects"]}
    assert kept in objects, sorted(objects)
    assert objects[kept]["action"] == "keep"
    assert "no longer labelled" in objects[kept]["message"]
    assert code == 0, out

    target.sync(second, "r2")
    assert target.api.get("v1", "Namespace", kept)["metadata"]["labels"][MANAGED_BY_LABEL] == "ops"
