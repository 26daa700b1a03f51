"""Objects into Namespaces git declares are checked by the server the way the sync will meet them:
a Namespace that already exists without syncer's label (its objects are dry-run where they go), and
a Namespace this same revision creates (its objects are checked in another namespace, so a refusal
by the apiserver is an error of the diff and the sync writes nothing).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from syncer.errors import Invalid, NotFound
from syncer.kube import ApplyOptions
from syncer.rollout.moves import RolloutOutcome
from tests.integration.diff.sync_kit import Cluster, rc
from tests.support.waiting import eventually

pytestmark = pytest.mark.integration

ADMISSION = "admissionregistration.k8s.io/v1"


def _namespace(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}


def _objects(out: str) -> dict[str, dict[str, Any]]:
    document = json.loads(out)
    return {o["name"]: o for w in document["waves"] for c in w["clusters"] for o in c["objects"]}


def test_objects_into_a_namespace_that_exists_unlabelled_are_dry_run_where_they_go(
    target: Cluster, tmp_path: Path
) -> None:
    ns = f"{target.namespace}-pre"
    target.api.create(_namespace(ns))  # there before syncer, without its label
    taken = rc(ns, "cache", shards=3)
    target.api.apply(taken, ApplyOptions(field_manager="ops-tool"))  # and an object owned by another
    repo = target.repo(tmp_path / "r1", [_namespace(ns), rc(ns, "cache", shards=5)])

    code, out = target.diff(repo)
    objects = _objects(out)
    cache = objects["cache"]
    assert cache["action"] == "conflict", cache
    assert "ops-tool" in json.dumps(cache)
    assert code == 1

    report = target.sync(repo, "r1")
    assert report.outcome is not RolloutOutcome.APPLIED, report
    [change_set] = report.waves[0].change_sets
    assert change_set.writes == 0
    live = target.api.get(taken["apiVersion"], "RedisCluster", "cache", ns)
    assert live["spec"]["shards"] == 3


@pytest.fixture
def refuses_many_shards(target: Cluster) -> Iterator[dict[str, str]]:
    """A ValidatingAdmissionPolicy refusing more than 5 shards, bound cluster-wide but only to
    objects carrying this test's label (so no other test meets it)."""
    label = {"syncer.dev/test-admission": target.namespace[-8:]}
    name = f"few-shards-{target.namespace[-8:]}"
    policy = {
        "apiVersion": ADMISSION,
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": name},
        "spec": {
            "failurePolicy": "Fail",
            "matchConstraints": {
                "resourceRules": [
                    {
                        "apiGroups": ["redis.syncer.dev"],
                        "apiVersions": ["*"],
                        "operations": ["CREATE", "UPDATE"],
                        "resources": ["redisclusters"],
                    }
                ]
            },
            "validations": [{"expression": "object.spec.shards <= 5", "message": "at most 5 shards here"}],
        },
    }
    binding = {
        "apiVersion": ADMISSION,
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": name},
        "spec": {
            "policyName": name,
            "validationActions": ["Deny"],
            "matchResources": {"objectSelector": {"matchLabels": label}},
        },
    }
    for obj in (policy, binding):
        target.api.apply(obj, ApplyOptions(field_manager="test"))
    try:
        yield label
    finally:
        for obj in (binding, policy):
            with contextlib.suppress(NotFound):
                target.api.delete(ADMISSION, str(obj["kind"]), name)


def test_objects_into_a_namespace_the_revision_creates_are_refused_in_the_diff_as_the_server_would(
    target: Cluster, refuses_many_shards: dict[str, str], tmp_path: Path
) -> None:
    ns = f"{target.namespace}-new"
    many = rc(ns, "many", shards=7)
    many["metadata"]["labels"] = dict(refuses_many_shards)
    few = rc(ns, "few", shards=3)
    few["metadata"]["labels"] = dict(refuses_many_shards)

    def the_policy_is_loaded() -> bool:
        probe = rc(target.namespace, "probe", shards=7)
        probe["metadata"]["labels"] = dict(refuses_many_shards)
        try:
            target.api.apply(probe, ApplyOptions(field_manager="test", dry_run=True))
        except Invalid:
            return True
        return False

    eventually("the admission policy to be loaded", the_policy_is_loaded, 30, every=0.5)
    repo = target.repo(tmp_path / "r1", [_namespace(ns), many, few])

    code, out = target.diff(repo)
    objects = _objects(out)
    assert objects["many"]["action"] == "error", objects["many"]
    assert "at most 5 shards here" in objects["many"]["message"]
    assert objects["few"]["action"] == "create"
    assert objects[ns]["action"] == "create"
    assert code == 2
    assert any("at most 5 shards here" in e for e in json.loads(out)["errors"])

    report = target.sync(repo, "r1")
    assert report.outcome is not RolloutOutcome.APPLIED, report
    [change_set] = report.waves[0].change_sets
    assert change_set.writes == 0
    with pytest.raises(NotFound):
        target.api.get("v1", "Namespace", ns)  # nothing of the revision was written
