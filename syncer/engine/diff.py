"""The diff of a revision against a fleet: live state in, server predictions fetched, plan out.

Per cluster: one list per kind of every syncer-managed object (label selector, all namespaces), the
inventory derived from them, the local comparison, and a server-side dry-run apply only for the objects
it cannot prove unchanged. Clusters are read in parallel; each client bounds its own concurrency.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from syncer.config.rollout import RolloutPolicy
from syncer.domain.applied import MANAGED_BY_SELECTOR, Inventory
from syncer.domain.changes import ClusterPlan, FleetPlan, WavePlan
from syncer.domain.objects import ClusterManifests, DesiredFleet, ObjectKey, api_group
from syncer.errors import Conflict, KubeError, NotFound, SyncerError
from syncer.kube import FIELD_MANAGER, ApplyOptions, ClientOptions, ClusterClient, KubeApi, KubeObject
from syncer.manifests import LoadOptions, ResourceKind
from syncer.plan import (
    ClusterState,
    DryRun,
    PlanOptions,
    Prediction,
    dry_runs_needed,
    plan_cluster,
)
from syncer.rollout import plan_waves
from syncer.status.state_store import DEFAULT_NAMESPACE, STATE_CONFIGMAP, STATE_KEY, StateFormatError, decode


@dataclass(frozen=True)
class ClusterTarget:
    """Where one cluster of the fleet is reached: a context of a kubeconfig file."""

    name: str
    kubeconfig: str
    context: str


@dataclass(frozen=True)
class DiffOptions:
    """``kinds`` are read live (every kind a fleet repository may hold, so removed kinds are pruned);
    ``workers`` bounds the dry-run applies in flight per cluster (the client bounds them too);
    ``rollout`` groups the clusters into the waves a sync would roll out in."""

    kinds: tuple[ResourceKind, ...] = LoadOptions().allowed_kinds
    client: ClientOptions = field(default_factory=ClientOptions)
    workers: int = 8
    field_manager: str = FIELD_MANAGER
    rollout: RolloutPolicy = field(default_factory=RolloutPolicy.single_wave)
    state_namespace: str = DEFAULT_NAMESPACE


def object_key(cluster: str, obj: Mapping[str, Any]) -> ObjectKey:
    meta = obj.get("metadata") or {}
    return ObjectKey(
        cluster,
        api_group(str(obj.get("apiVersion", ""))),
        str(obj.get("kind", "")),
        str(meta.get("namespace", "")),
        str(meta.get("name", "")),
    )


def read_live(api: KubeApi, kinds: Sequence[ResourceKind]) -> dict[ObjectKey, KubeObject]:
    """Every syncer-managed object of ``kinds``: one label-selected list per kind, across namespaces.
    A kind the cluster does not serve (CRD not installed) has no live objects."""
    live: dict[ObjectKey, KubeObject] = {}
    for kind in kinds:
        try:
            listed = api.list(kind.api_version, kind.kind, label_selector=MANAGED_BY_SELECTOR)
        except NotFound:
            continue
        for item in listed.items:
            live[object_key(api.cluster, item)] = item
    return live


def inventory_from_live(cluster: str, live: Mapping[ObjectKey, KubeObject]) -> Inventory:
    """Until each cluster keeps its sync state, what syncer applied is what carries its label."""
    return Inventory.of(cluster, live)


def _dry_run(api: KubeApi, request: DryRun, field_manager: str) -> Prediction:
    try:
        predicted = api.apply(request.body, ApplyOptions(field_manager=field_manager, dry_run=True))
    except Conflict as err:
        return Prediction(request.key, conflicts=tuple((c.manager, c.field) for c in err.conflicts))
    except KubeError as err:
        return Prediction(request.key, error=f"dry-run apply failed: {err}")
    return Prediction(request.key, predicted=predicted)


def plan_live_cluster(
    api: KubeApi, desired: ClusterManifests, options: DiffOptions, inventory: Inventory | None = None
) -> ClusterPlan:
    """One cluster planned against its live state, with dry-run applies where the plan needs them.

    ``inventory`` is what syncer last applied to the cluster (from its sync state); without one, every
    live object carrying syncer's label counts as applied by syncer.
    """
    live = read_live(api, options.kinds)
    applied = inventory if inventory is not None else inventory_from_live(api.cluster, live)
    state = ClusterState(desired.cluster, desired.manifests, live, applied)
    plan_options = PlanOptions(field_manager=options.field_manager)
    needed = dry_runs_needed(state, plan_options)
    predictions: dict[ObjectKey, Prediction] = {}
    if needed:
        with ThreadPoolExecutor(max_workers=max(1, options.workers)) as pool:
            answers = pool.map(lambda r: _dry_run(api, r, options.field_manager), needed)
            predictions = {p.key: p for p in answers}
    return plan_cluster(state, predictions, plan_options)


def _plan_target(desired: ClusterManifests, target: ClusterTarget, options: DiffOptions) -> ClusterPlan:
    try:
        client = ClusterClient.from_kubeconfig(target.kubeconfig, target.context, target.name, options.client)
    except SyncerError as err:
        return ClusterPlan(target.name, error=str(err))
    try:
        return plan_live_cluster(client, desired, options, stored_inventory(client, options.state_namespace))
    except KubeError as err:
        return ClusterPlan(target.name, error=str(err))
    finally:
        client.close()


def stored_inventory(api: KubeApi, state_namespace: str) -> Inventory | None:
    """What the cluster's sync state says syncer applied there, so the diff prunes exactly what a sync
    would; None (every labelled object counts) when the cluster has no readable sync state."""
    try:
        configmap = api.get("v1", "ConfigMap", STATE_CONFIGMAP, state_namespace)
        state = decode(api.cluster, (configmap.get("data") or {}).get(STATE_KEY, ""))
    except (NotFound, StateFormatError):
        return None
    return Inventory.of(api.cluster, state.inventory_keys(), state.revision)


def _fleet_plan(
    fleet: DesiredFleet, plans: Sequence[ClusterPlan], policy: RolloutPolicy, offline: bool = False
) -> FleetPlan:
    """The cluster plans grouped into the rollout's waves, and every dry-run failure as an error."""
    by_name = {plan.cluster: plan for plan in plans}
    labels = {name: fleet.clusters[name].labels for name in by_name}
    waves = tuple(
        WavePlan(wave.name, tuple(by_name[name] for name in wave.clusters))
        for wave in plan_waves(labels, policy)
    )
    errors = tuple(
        f"{plan.cluster}: {change.key.subject}: {change.message}"
        for plan in plans
        for change in plan.changes
        if change.message.startswith("dry-run apply failed")
    )
    return FleetPlan(fleet.revision, waves, offline=offline, errors=errors)


def diff_fleet(
    fleet: DesiredFleet, targets: Sequence[ClusterTarget], options: DiffOptions = DiffOptions()
) -> FleetPlan:
    """The plan of ``fleet`` against the live state of each target cluster (in parallel)."""
    unknown = [t.name for t in targets if t.name not in fleet.clusters]
    if unknown:
        raise SyncerError(f"not clusters of the fleet: {', '.join(unknown)}")
    if not targets:
        return _fleet_plan(fleet, [], options.rollout)
    with ThreadPoolExecutor(max_workers=len(targets)) as pool:
        plans = list(pool.map(lambda t: _plan_target(fleet.clusters[t.name], t, options), targets))
    return _fleet_plan(fleet, plans, options.rollout)


def offline_plan(
    fleet: DesiredFleet, clusters: Sequence[str] = (), rollout: RolloutPolicy = RolloutPolicy.single_wave()
) -> FleetPlan:
    """Render and validate only: every desired object of each cluster is a create."""
    names = list(clusters) or list(fleet.clusters)
    plans = []
    for name in names:
        desired = fleet.clusters[name]
        state = ClusterState(name, desired.manifests, {}, Inventory.of(name, ()))
        plans.append(plan_cluster(state))
    return _fleet_plan(fleet, plans, rollout, offline=True)
