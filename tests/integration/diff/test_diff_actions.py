"""Each action of ``syncer diff`` against a real cluster, in text and in JSON."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from click.testing import CliRunner
from kubernetes import client

from syncer.cli import cli
from syncer.domain.plans import Action
from syncer.domain.sync_state import ClusterSyncState, InventoryEntry
from syncer.engine.diff import ClusterTarget, DiffOptions, diff_fleet
from syncer.manifests import load_fleet
from syncer.plan import diff_schema
from syncer.status import StateStore
from tests.integration.conftest import FleetHandle
from tests.integration.diff.conftest import GROUP, PLURAL, VERSION, kube, redis, seed, write_repo

pytestmark = pytest.mark.integration


def _edit(api: Any, namespace: str, name: str, manager: str, spec: Any) -> None:
    """Another client changes an object with a plain (Update) patch, as kubectl edit or a tool would."""
    client.CustomObjectsApi(api).patch_namespaced_custom_object(
        GROUP, VERSION, namespace, PLURAL, name, {"spec": spec}, field_manager=manager
    )


@pytest.fixture
def scene(clean_fleet: FleetHandle, cluster: str, namespace: str, tmp_path: Path) -> Iterator[Path]:
    """Live: what a previous sync applied, then edited by others. Desired: the repository returned."""
    api = kube(clean_fleet, cluster)
    try:
        seed(
            api,
            [
                redis(namespace, "same"),
                redis(namespace, "upd", shards=3),
                redis(namespace, "gone"),
                redis(namespace, "drifted", shards=3),
                redis(namespace, "blocked"),
            ],
        )
    finally:
        api.close()
    # What that sync recorded: its inventory (what it applied), which the diff prunes from.
    api = kube(clean_fleet, cluster)
    try:
        entries = tuple(
            InventoryEntry("redis.syncer.dev/v1alpha1", "RedisCluster", namespace, name)
            for name in ("same", "upd", "gone", "drifted", "blocked")
        )
        StateStore(api, f"{namespace}-state").save(
            ClusterSyncState(cluster, revision="r1", inventory=entries)
        )
    finally:
        api.close()
    _edit(clean_fleet.api(cluster), namespace, "drifted", "kubectl-edit", {"shards": 4})
    _edit(clean_fleet.api(cluster), namespace, "blocked", "ops-tool", {"image": "redis:theirs"})
    desired = [
        redis(namespace, "same"),
        redis(namespace, "upd", shards=5),
        redis(namespace, "new"),
        redis(namespace, "drifted", shards=3),
        redis(namespace, "blocked", image="redis:mine"),
    ]
    yield write_repo(tmp_path / "repo", clean_fleet.names, {cluster: desired})
    api = kube(clean_fleet, cluster)
    try:
        api.delete("v1", "Namespace", f"{namespace}-state")
    finally:
        api.close()


def _diff(fleet: FleetHandle, repo: Path, cluster: str, output: str, namespace: str) -> tuple[int, str]:
    args = ["diff", "--repo", str(repo), "--cluster", cluster, "--kubeconfig", str(fleet.kubeconfig)]
    args += ["--state-namespace", f"{namespace}-state"]
    result = CliRunner().invoke(cli, [*args, "-o", output])
    return result.exit_code, result.stdout


def test_json_names_every_action_with_fields_and_owners(
    clean_fleet: FleetHandle, cluster: str, namespace: str, scene: Path
) -> None:
    code, out = _diff(clean_fleet, scene, cluster, "json", namespace)
    assert code == 1, out
    document = json.loads(out)
    jsonschema.Draft202012Validator(diff_schema()).validate(document)
    (wave,) = document["waves"]
    (planned,) = wave["clusters"]
    assert planned["error"] == ""
    objects = {o["name"]: o for o in planned["objects"] if o["namespace"] == namespace}
    assert {name: o["action"] for name, o in objects.items()} == {
        "same": "unchanged",
        "upd": "update",
        "gone": "prune",
        "new": "create",
        "drifted": "drift",
        "blocked": "conflict",
    }
    update = objects["upd"]
    assert update["predicted"] is True
    assert [(f["path"], f["before"], f["after"], f["owners"]) for f in update["fields"]] == [
        ("/spec/shards", 3, 5, ["syncer"])
    ]
    drift = objects["drifted"]
    assert drift["managers"] == ["kubectl-edit"]
    assert [(f["path"], f["before"], f["after"], f["owners"]) for f in drift["fields"]] == [
        ("/spec/shards", 4, 3, ["kubectl-edit"])
    ]
    conflict = objects["blocked"]
    assert conflict["managers"] == ["ops-tool"]
    assert [(f["path"], f["before"], f["after"], f["owners"]) for f in conflict["fields"]] == [
        ("/spec/image", "redis:theirs", "redis:mine", ["ops-tool"])
    ]
    # Everything the sync would write is dry-run: the update, the create and the drift repair (forced).
    # Unchanged, conflict (blocked under the report policy) and prune were decided locally.
    assert planned["dryRuns"] == 3
    assert planned["blocked"] is True
    assert "ops-tool" in planned["blockedReason"]
    assert document["summary"]["update"] == 1


def test_text_shows_each_action_and_the_owner_of_each_changed_field(
    clean_fleet: FleetHandle, cluster: str, namespace: str, scene: Path
) -> None:
    code, out = _diff(clean_fleet, scene, cluster, "text", namespace)
    assert code == 1, out
    lines = out.splitlines()

    def line_of(text: str) -> int:
        return next(i for i, line in enumerate(lines) if text in line)

    assert "update    RedisCluster/" + namespace + "/upd" in out
    assert "spec.shards: 3 -> 5  (owner: syncer)" in lines[line_of(f"{namespace}/upd") + 1]
    assert "prune     RedisCluster/" + namespace + "/gone" in out
    assert "create    RedisCluster/" + namespace + "/new" in out
    drift_line = lines[line_of(f"drift     RedisCluster/{namespace}/drifted")]
    assert "kubectl-edit" in drift_line
    assert "spec.shards: 4 -> 3  [drift]  (owner: kubectl-edit)" in lines[line_of(f"{namespace}/drifted") + 1]
    assert "ops-tool" in lines[line_of(f"conflict  RedisCluster/{namespace}/blocked")]
    assert (
        "[conflict]  (owner: ops-tool)" in lines[line_of(f"conflict  RedisCluster/{namespace}/blocked") + 1]
    )
    assert f"{namespace}/same" not in out
    _, as_json = _diff(clean_fleet, scene, cluster, "json", namespace)
    counts = json.loads(as_json)["waves"][0]["clusters"][0]["summary"]
    order = ("create", "update", "adopt", "prune", "keep", "conflict", "drift", "error", "unchanged")
    columns = [c for c in order if counts[c] or c == "unchanged"]
    summary = next(line for line in lines[line_of("summary") :] if f" {cluster} (blocked)" in line)
    assert summary.split() == ["all", cluster, "(blocked)", *(str(counts[c]) for c in columns)]
    assert all(counts[c] >= 1 for c in ("create", "update", "prune", "conflict", "drift", "unchanged"))
    assert "BLOCKED, nothing below is applied: conflicts (policy report)" in out


def test_a_diff_writes_nothing(clean_fleet: FleetHandle, cluster: str, namespace: str, scene: Path) -> None:
    _diff(clean_fleet, scene, cluster, "json", namespace)
    custom = client.CustomObjectsApi(clean_fleet.api(cluster))
    assert (
        custom.get_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, "upd")["spec"]["shards"] == 3
    )
    names = [
        i["metadata"]["name"]
        for i in custom.list_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL)["items"]
    ]
    assert sorted(names) == ["blocked", "drifted", "gone", "same", "upd"]


def test_the_diff_prunes_only_what_the_clusters_sync_state_lists(
    clean_fleet: FleetHandle, namespace: str, tmp_path: Path
) -> None:
    cluster = clean_fleet.names[0]
    api = kube(clean_fleet, cluster)
    try:
        for name in ("ours", "someone-elses"):
            seed(api, [redis(namespace, name, shards=3)])
        entry = InventoryEntry("redis.syncer.dev/v1alpha1", "RedisCluster", namespace, "ours")
        StateStore(api, f"{namespace}-state").save(
            ClusterSyncState(cluster, revision="r1", inventory=(entry,))
        )
        repo = write_repo(tmp_path / "repo", [cluster], {cluster: []})
        targets = [ClusterTarget(cluster, str(clean_fleet.kubeconfig), cluster)]
        plan = diff_fleet(load_fleet(repo, "r2"), targets, DiffOptions(state_namespace=f"{namespace}-state"))
        pruned = [c.key.name for c in plan.clusters[0].changes if c.action == Action.PRUNE]
        assert pruned == ["ours"]
    finally:
        api.delete("v1", "Namespace", f"{namespace}-state")
        api.close()
