"""What a diff costs the apiservers: counted in ``apiserver_request_total`` before and after."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from kubernetes import client

from syncer.domain import Action
from syncer.engine.diff import ClusterTarget, diff_fleet
from syncer.manifests import load_fleet
from tests.integration.conftest import FleetHandle
from tests.integration.diff.conftest import (
    Counts,
    kube,
    redis,
    request_counts,
    seed,
    still_terminating,
    write_repo,
)

pytestmark = pytest.mark.integration

OBJECTS = 200


@pytest.fixture
def shared_namespace(clean_fleet: FleetHandle) -> Iterator[str]:
    """One namespace of the same name in every cluster of the fleet."""
    name = f"noop-{uuid.uuid4().hex[:8]}"
    for cluster in clean_fleet.names:
        client.CoreV1Api(clean_fleet.api(cluster)).create_namespace({"metadata": {"name": name}})
    yield name
    for cluster in clean_fleet.names:
        client.CoreV1Api(clean_fleet.api(cluster)).delete_namespace(name)


def _delta(before: Counts, after: Counts, resource: str, namespaced: bool = True) -> Counts:
    """Requests on ``resource`` between two snapshots; ``namespaced=False`` sets aside namespace-scoped
    ones, which syncer's diff never makes (it lists across namespaces and addresses objects by name).
    Watches are set aside too: syncer's diff never watches, while the fleet's own controllers re-open
    theirs at any time."""
    return Counts(
        {
            k: after[k] - before.get(k, 0)
            for k in after
            if k[1] == resource
            and k[0] != "WATCH"
            and after[k] != before.get(k, 0)
            and (namespaced or k[2] != "namespace")
        }
    )


def _snapshot(fleet: FleetHandle) -> dict[str, Counts]:
    counts = {}
    for name in fleet.names:
        api = kube(fleet, name)
        try:
            counts[name] = request_counts(api)
        finally:
            api.close()
    return counts


def test_a_no_op_diff_of_three_clusters_lists_once_per_kind_and_never_dry_runs(
    clean_fleet: FleetHandle, shared_namespace: str, tmp_path: Path
) -> None:
    bodies = [redis(shared_namespace, f"rc-{i:03d}", shards=1 + i % 5) for i in range(OBJECTS)]
    for name in clean_fleet.names:
        api = kube(clean_fleet, name)
        try:
            seed(api, bodies)
        finally:
            api.close()
    repo = write_repo(tmp_path / "repo", clean_fleet.names, dict.fromkeys(clean_fleet.names, bodies))
    targets = [ClusterTarget(n, str(clean_fleet.kubeconfig), n) for n in clean_fleet.names]
    fleet = load_fleet(repo, "local")
    busy = still_terminating(clean_fleet)

    before = _snapshot(clean_fleet)
    plan = diff_fleet(fleet, targets)
    after = _snapshot(clean_fleet)

    assert not plan.has_changes
    assert not plan.has_errors
    assert len(plan.clusters) == 3
    for cluster in plan.clusters:
        assert cluster.count(Action.UNCHANGED) == OBJECTS
        assert cluster.dry_runs == 0
    for name in clean_fleet.names:
        redis_requests = _delta(before[name], after[name], "redisclusters", name not in busy)
        assert redis_requests == Counts({("LIST", "redisclusters", "cluster", ""): 1}), name
        namespace_requests = _delta(before[name], after[name], "namespaces")
        assert namespace_requests == Counts({("LIST", "namespaces", "cluster", ""): 1}), name

    # One changed object per cluster costs exactly one dry-run apply there, and still no write.
    changed = {n: [redis(shared_namespace, "rc-000", shards=9), *bodies[1:]] for n in clean_fleet.names}
    fleet = load_fleet(write_repo(tmp_path / "changed", clean_fleet.names, changed), "local")
    before = _snapshot(clean_fleet)
    plan = diff_fleet(fleet, targets)
    after = _snapshot(clean_fleet)
    for cluster in plan.clusters:
        (update,) = [c for c in cluster.changes if c.action != Action.UNCHANGED]
        assert update.action == Action.UPDATE
        assert [(f.path, f.before, f.after) for f in update.fields] == [("/spec/shards", 1, 9)]
        assert cluster.dry_runs == 1
    for name in clean_fleet.names:
        assert _delta(before[name], after[name], "redisclusters", name not in busy) == Counts(
            {("LIST", "redisclusters", "cluster", ""): 1, ("APPLY", "redisclusters", "resource", "All"): 1}
        ), name
