"""``syncer diff`` says exactly what a sync will do: scenario by scenario on a real cluster (with the
embedded controller making RedisClusters Ready), the diff's verdict is recorded, the sync runs, and
the cluster must have changed exactly as the verdict said: listed fields to the listed values and
nothing else, creates as shown, prunes gone, kept and unchanged objects untouched, and nothing at all
written to a cluster the diff showed as blocked.

Each test is one table: a previous sync (revision r1), then out-of-band changes, then the diff and
the sync of revision r2.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client as k8s

from syncer.domain.sync_state import SyncPhase
from syncer.engine.rollout_model import RolloutReport
from syncer.errors import NotFound
from syncer.kube import ApplyOptions
from syncer.rollout.moves import RolloutOutcome
from syncer.status import StateStore
from syncer.status.state_store import STATE_CONFIGMAP, STATE_KEY
from tests.integration.conftest import FleetHandle
from tests.integration.diff.conftest import GROUP, PLURAL, VERSION, manifest, seed
from tests.integration.diff.sync_kit import (
    Body,
    Cluster,
    Key,
    mismatch,
    rc,
    running_controller,
    verdicts,
)

pytestmark = pytest.mark.integration


@dataclass(frozen=True)
class Scenario:
    """``before`` is synced as r1, ``meddle`` changes the cluster out of band, ``after`` is r2; the
    diff must give ``expected`` for ``subject`` and the sync must do just that."""

    name: str
    expected: str
    subject: str
    before: tuple[Body, ...] = ()
    after: tuple[Body, ...] = ()
    meddle: Callable[[Cluster], None] | None = None
    extra_namespaces: tuple[str, ...] = field(default=())


def meta(body: Body, **extra: dict[str, str]) -> Body:
    """``body`` with extra metadata (labels, annotations)."""
    return {**body, "metadata": {**body["metadata"], **extra}}


def _patch(cluster: Cluster, fleet: FleetHandle, name: str, manager: str, patch: Body) -> None:
    """Another client changes a RedisCluster with a plain (Update) patch, as ``kubectl edit`` does."""
    k8s.CustomObjectsApi(fleet.api(cluster.name)).patch_namespaced_custom_object(
        GROUP, VERSION, cluster.namespace, PLURAL, name, patch, field_manager=manager
    )


@dataclass
class Row:
    scenario: str
    expected: str
    verdict: str
    outcome: str


@dataclass(frozen=True)
class Result:
    """What a table run saw: the diff's exit code, its cluster and whole document, every output
    format (captured before the sync), the sync's report and the live objects after it."""

    exit: int
    cluster: Mapping[str, Any]
    report: RolloutReport
    document: dict[str, Any]
    shown: dict[str, str]
    after: dict[Key, Body]


def run_table(
    cluster: Cluster,
    tmp_path: Path,
    scenarios: list[Scenario],
    *,
    between: Callable[[Cluster], None] | None = None,
    baseline: bool = True,
    revision: str = "r2",
) -> tuple[list[Row], Result]:
    """r1, the meddling, the diff of r2 (recorded), the sync of r2, and the check of every object."""
    extra = tuple(sorted({n for s in scenarios for n in s.extra_namespaces}))
    namespaces = (cluster.namespace, *extra)
    with running_controller(cluster, namespaces):
        if baseline:
            first = cluster.sync(
                cluster.repo(tmp_path / "r1", [b for s in scenarios for b in s.before]), "r1"
            )
            assert first.outcome is RolloutOutcome.APPLIED, first
        for scenario in scenarios:
            if scenario.meddle is not None:
                scenario.meddle(cluster)
        if between is not None:
            between(cluster)
        repo = cluster.repo(tmp_path / "r2", [b for s in scenarios for b in s.after])
        code, out = cluster.diff(repo)
        document = json.loads(out)
        shown = {fmt: cluster.diff(repo, fmt)[1] for fmt in ("text", "yaml", "unified")} | {"json": out}
        found, planned = verdicts(document)
        before = cluster.snapshot(namespaces)
        report = cluster.sync(repo, revision)
        after = cluster.snapshot(namespaces)
        rows = []
        problems = []
        for scenario in scenarios:
            key: Key = next(k for k in found if k[2] == scenario.subject)
            verdict = found[key]
            wrong = mismatch(verdict, before.get(key), after.get(key), planned["blocked"])
            rows.append(Row(scenario.name, scenario.expected, verdict.action, wrong or "as the diff said"))
            if verdict.action != scenario.expected:
                problems.append(f"{scenario.name}: diff said {verdict.action}, expected {scenario.expected}")
            if wrong:
                problems.append(f"{scenario.name}: {wrong}")
        for key, verdict in found.items():
            if key[1] in namespaces or (key[0] == "Namespace" and key[2] in namespaces):
                wrong = mismatch(verdict, before.get(key), after.get(key), planned["blocked"])
                if wrong:
                    problems.append(f"{key}: {wrong}")
        unlisted = [
            k for k in set(before) | set(after) if k not in found and before.get(k) is not after.get(k)
        ]
        for key in unlisted:
            wrong = mismatch_unlisted(before.get(key), after.get(key))
            if wrong:
                problems.append(f"{key} is not in the diff but {wrong}")
    print(f"\n{'scenario':<34} {'expected':<10} {'diff':<10} sync")
    for row in rows:
        print(f"{row.scenario:<34} {row.expected:<10} {row.verdict:<10} {row.outcome}")
    assert not problems, "\n".join(problems)
    return rows, Result(code, planned, report, document, shown, after)


def mismatch_unlisted(before: Body | None, after: Body | None) -> str:
    from tests.integration.diff.sync_kit import comparable

    return "" if comparable(before) == comparable(after) else "changed"


# -- the ordinary scenarios, in one cluster and one sync --------------------------------------------


def ordinary(fleet: FleetHandle, ns: str) -> list[Scenario]:
    def kubectl_edit(c: Cluster) -> None:
        _patch(
            c,
            fleet,
            "kubectl-edit",
            "kubectl-edit",
            {"spec": {"redisConfig": {"maxmemory-policy": "volatile-lru"}}},
        )

    def forced_by_other(c: Cluster) -> None:
        body = rc(ns, "forced-by-other", redisConfig={"maxmemory-policy": "allkeys-random"})
        body["spec"] = {"redisConfig": body["spec"]["redisConfig"]}
        c.api.apply(body, ApplyOptions(field_manager="ops-tool", force=True))

    def other_field(c: Cluster) -> None:
        _patch(c, fleet, "other-field", "ops-tool", {"metadata": {"labels": {"team": "ops"}}})

    def delete(c: Cluster) -> None:
        c.api.delete("redis.syncer.dev/v1alpha1", "RedisCluster", "deleted-live", ns)
        c.wait_gone("RedisCluster", "deleted-live", ns)

    def hand_made(c: Cluster) -> None:
        k8s.CustomObjectsApi(fleet.api(c.name)).create_namespaced_custom_object(
            GROUP, VERSION, ns, PLURAL, rc(ns, "hand-made"), field_manager="kubectl-create"
        )

    config = {"maxmemory-policy": "noeviction"}
    tolerations = [{"key": "a", "operator": "Exists"}, {"key": "b", "operator": "Exists"}]
    fresh = f"{ns}-new"
    return [
        Scenario(
            "field change",
            "update",
            "field-change",
            (rc(ns, "field-change", redisConfig=config),),
            (rc(ns, "field-change", redisConfig={"maxmemory-policy": "allkeys-lru"}),),
        ),
        Scenario(
            "field removal",
            "update",
            "field-removal",
            (rc(ns, "field-removal", redisConfig=config),),
            (rc(ns, "field-removal"),),
        ),
        Scenario(
            "other manager's own field",
            "unchanged",
            "other-field",
            (rc(ns, "other-field"),),
            (rc(ns, "other-field"),),
            other_field,
        ),
        Scenario(
            "other manager forces our field",
            "drift",
            "forced-by-other",
            (rc(ns, "forced-by-other", redisConfig=config),),
            (rc(ns, "forced-by-other", redisConfig=config),),
            forced_by_other,
        ),
        Scenario(
            "kubectl edit",
            "drift",
            "kubectl-edit",
            (rc(ns, "kubectl-edit", redisConfig=config),),
            (rc(ns, "kubectl-edit", redisConfig=config),),
            kubectl_edit,
        ),
        Scenario(
            "deleted live",
            "create",
            "deleted-live",
            (rc(ns, "deleted-live"),),
            (rc(ns, "deleted-live"),),
            delete,
        ),
        Scenario(
            "server default set in git",
            "adopt",
            "defaults",
            (rc(ns, "defaults"),),
            (rc(ns, "defaults", persistence={"enabled": False, "retentionPolicy": "Retain"}),),
        ),
        Scenario(
            "quantity spelled differently",
            "update",
            "quantities",
            (rc(ns, "quantities", resources={"requests": {"memory": "1Gi"}}),),
            (rc(ns, "quantities", resources={"requests": {"memory": "1024Mi"}}),),
        ),
        Scenario(
            "list order",
            "update",
            "list-order",
            (rc(ns, "list-order", tolerations=tolerations),),
            (rc(ns, "list-order", tolerations=tolerations[::-1]),),
        ),
        Scenario(
            "empty list vs absent",
            "update",
            "empty-list",
            (rc(ns, "empty-list"),),
            (rc(ns, "empty-list", tolerations=[]),),
        ),
        Scenario(
            "label and annotation",
            "update",
            "labels",
            (meta(rc(ns, "labels"), labels={"team": "a"}),),
            (meta(rc(ns, "labels"), labels={"team": "b"}, annotations={"owner": "search"}),),
        ),
        Scenario(
            "redis ACL secret changed",
            "update",
            "secret",
            (rc(ns, "secret", redisConfig={"user": "app on >old-acl-pass ~* +@all"}),),
            (rc(ns, "secret", redisConfig={"user": "app on >new-acl-pass ~* +@all"}),),
        ),
        Scenario("no longer desired", "prune", "pruned", (rc(ns, "pruned"),), ()),
        Scenario(
            "prune opt-out",
            "keep",
            "opted-out",
            (meta(rc(ns, "opted-out"), annotations={"syncer.dev/prune": "disabled"}),),
            (),
        ),
        Scenario(
            "unlabelled object made by hand", "adopt", "hand-made", (), (rc(ns, "hand-made"),), hand_made
        ),
        Scenario(
            "namespace created by the same sync",
            "create",
            "in-new-namespace",
            (),
            (
                {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": fresh}},
                rc(fresh, "in-new-namespace"),
            ),
            extra_namespaces=(fresh,),
        ),
    ]


def test_ordinary_changes_are_applied_exactly_as_the_diff_shows(
    fleet: FleetHandle, target: Cluster, tmp_path: Path
) -> None:
    fresh = f"{target.namespace}-new"
    try:
        _, result = run_table(target, tmp_path, ordinary(fleet, target.namespace))
    finally:
        with contextlib.suppress(NotFound):
            target.api.delete("v1", "Namespace", fresh)
    assert result.exit == 1
    assert result.report.outcome is RolloutOutcome.APPLIED, result.report
    # The secret never shows in clear, in any format; its digest does.
    for output, shown in result.shown.items():
        assert "new-acl-pass" not in shown, output
        assert "old-acl-pass" not in shown, output
    assert "<masked sha256:" in result.shown["unified"]


# -- a conflict under the report policy blocks the whole cluster ------------------------------------


def test_a_conflict_blocks_the_cluster_and_the_diff_says_nothing_below_is_applied(
    target: Cluster, tmp_path: Path
) -> None:
    ns = target.namespace

    def theirs(c: Cluster) -> None:
        c.api.apply(rc(ns, "theirs"), ApplyOptions(field_manager="helm"))

    scenarios = [
        Scenario(
            "update in a blocked cluster",
            "update",
            "mine",
            (rc(ns, "mine"),),
            (rc(ns, "mine", redisConfig={"maxmemory-policy": "allkeys-lru"}),),
        ),
        Scenario(
            "unlabelled object owned by helm",
            "conflict",
            "theirs",
            (),
            (rc(ns, "theirs", version="7.2.5"),),
            theirs,
        ),
        Scenario("prune in a blocked cluster", "prune", "old", (rc(ns, "old"),), ()),
    ]
    _, result = run_table(target, tmp_path, scenarios)
    assert result.exit == 1
    assert result.cluster["blocked"] is True
    assert "helm" in result.cluster["blockedReason"]
    (change_set,) = result.report.waves[0].change_sets
    assert change_set.writes == 0
    assert change_set.error.startswith("conflicts (policy report)")
    assert "BLOCKED, nothing below is applied" in result.shown["text"]
    assert "# BLOCKED, nothing below is applied" in result.shown["unified"]


# -- creates the server would refuse: an error with exit 2, and nothing written ----------------------


def test_creates_the_server_refuses_are_errors_and_the_sync_writes_nothing(
    target: Cluster, tmp_path: Path
) -> None:
    ns = target.namespace
    dotted = f"{ns[:40]}.dotted"
    nowhere = f"{ns[:40]}-nowhere"
    scenarios = [
        Scenario(
            "update next to refused creates",
            "update",
            "steady",
            (rc(ns, "steady"),),
            (rc(ns, "steady", redisConfig={"maxmemory-policy": "allkeys-lru"}),),
        ),
        Scenario(
            "namespace name the server rejects",
            "error",
            dotted,
            (),
            ({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": dotted}},),
        ),
        Scenario("create into a missing namespace", "error", "lost", (), (rc(nowhere, "lost"),)),
    ]
    _, result = run_table(target, tmp_path, scenarios)
    assert result.exit == 2
    document = result.document
    assert document["summary"]["error"] == 2
    assert any("does not exist and this sync does not create it" in e for e in document["errors"])
    assert result.cluster["blocked"] is True
    assert result.report.waves[0].change_sets[0].writes == 0
    with pytest.raises(NotFound):
        target.api.get("v1", "Namespace", dotted)


# -- pruning needs a recorded inventory and proof of ownership ---------------------------------------


def test_without_a_recorded_sync_state_nothing_is_pruned(target: Cluster, tmp_path: Path) -> None:
    ns = target.namespace

    def applied_before_any_state(c: Cluster) -> None:
        seed(c.api, [rc(ns, "leftover"), rc(ns, "still-desired")])

    scenarios = [
        Scenario("leftover, no recorded state", "keep", "leftover", meddle=applied_before_any_state),
        Scenario(
            "desired, no recorded state", "unchanged", "still-desired", after=(rc(ns, "still-desired"),)
        ),
    ]
    _, result = run_table(target, tmp_path, scenarios, baseline=False)
    assert result.cluster["inventory"] == "missing"
    assert ("RedisCluster", ns, "leftover") in result.after


def test_a_corrupt_sync_state_does_not_prune_a_hand_made_rediscluster_carrying_our_label(
    fleet: FleetHandle, target: Cluster, tmp_path: Path
) -> None:
    ns = target.namespace

    def hand_made(c: Cluster) -> None:
        body = rc(ns, "hand-made")
        body["metadata"]["labels"] = {"app.kubernetes.io/managed-by": "syncer"}
        k8s.CustomObjectsApi(fleet.api(c.name)).create_namespaced_custom_object(
            GROUP, VERSION, ns, PLURAL, body, field_manager="kubectl-create"
        )

    def corrupt(c: Cluster) -> None:
        state = c.api.get("v1", "ConfigMap", STATE_CONFIGMAP, c.state_namespace)
        state["data"] = {STATE_KEY: '{"version": 1, "state": {"inventory": "garbled'}
        c.api.replace(state)

    scenarios = [
        Scenario("syncer's, no longer desired", "prune", "ours-old", (rc(ns, "ours-old"),), ()),
        Scenario(
            "syncer's, still desired",
            "unchanged",
            "ours-kept",
            (rc(ns, "ours-kept"),),
            (rc(ns, "ours-kept"),),
        ),
        Scenario("hand-made with our label", "keep", "hand-made", meddle=hand_made),
    ]
    _, result = run_table(target, tmp_path, scenarios, between=corrupt)
    assert result.cluster["inventory"] == "rebuilt"
    live = result.after[("RedisCluster", ns, "hand-made")]
    assert live["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "syncer"
    assert ("RedisCluster", ns, "ours-old") not in result.after
    state = StateStore(target.api, target.state_namespace).load().state
    assert state.phase in {SyncPhase.HEALTHY, SyncPhase.APPLIED}
    assert manifest(target.name, rc(ns, "ours-kept")).key in state.inventory_keys()


# -- the revision in force is kept, not just applied once --------------------------------------------


def test_a_sync_of_the_revision_in_force_repairs_drift_and_recreates_a_deleted_object(
    fleet: FleetHandle, target: Cluster, tmp_path: Path
) -> None:
    ns = target.namespace
    config = {"maxmemory-policy": "noeviction"}

    def delete(c: Cluster) -> None:
        c.api.delete("redis.syncer.dev/v1alpha1", "RedisCluster", "deleted", ns)
        c.wait_gone("RedisCluster", "deleted", ns)

    def edit(c: Cluster) -> None:
        _patch(
            c,
            fleet,
            "edited",
            "kubectl-edit",
            {"spec": {"redisConfig": {"maxmemory-policy": "volatile-lru"}}},
        )

    scenarios = [
        Scenario("deleted out of band", "create", "deleted", (rc(ns, "deleted"),), (rc(ns, "deleted"),),
                 delete),
        Scenario("edited out of band", "drift", "edited", (rc(ns, "edited", redisConfig=config),),
                 (rc(ns, "edited", redisConfig=config),), edit),
        Scenario("untouched", "unchanged", "untouched", (rc(ns, "untouched"),), (rc(ns, "untouched"),)),
    ]  # fmt: skip
    _, result = run_table(target, tmp_path, scenarios, revision="r1")
    assert result.report.outcome is RolloutOutcome.APPLIED, result.report
    state = StateStore(target.api, target.state_namespace).load().state
    assert (state.revision, state.phase, state.last_good) == ("r1", SyncPhase.HEALTHY, "r1")
    assert "r1" not in state.bad_revisions
