"""The diff of a revision against a fleet: live state in, server predictions fetched, plan out.

Per cluster: one list per kind of every syncer-managed object (label selector, all namespaces), the
inventory from the cluster's sync state (read exactly as a sync reads it), the local comparison, and a
server-side dry-run apply of every object the sync would write that is not provably unchanged
(creates included). Clusters are read in parallel, and so are the kinds and the dry-runs of a cluster;
each client bounds its own concurrency and rate. A cluster that refuses the revision because it failed
there before (``syncer.engine.failures``, asked as the sync asks it) is blocked with that reason, and
so are the rest of its wave and the later waves, where the sync halts; where the sync waits (a manual
gate, a suspended or pinned cluster, a closed window) the clusters are held (``diff_holds``).
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Any

from syncer.config.rollout import RolloutPolicy
from syncer.config.settings import AGENT_NAMESPACE
from syncer.config.two_person import TwoPersonRule
from syncer.crds import shipped_sensitive_fields
from syncer.domain.applied import MANAGED_BY_SELECTOR, Inventory, InventorySource
from syncer.domain.objects import ClusterManifests, DesiredFleet, ObjectKey, api_group
from syncer.domain.plans import Action, ClusterPlan, FleetPlan, LeavingCluster, WavePlan
from syncer.domain.rules import SyncRules
from syncer.domain.secrets import SensitiveFields
from syncer.domain.sync_state import ClusterSyncState
from syncer.engine.diff_holds import hold_waves
from syncer.engine.failures import refusal_now
from syncer.errors import Conflict, Invalid, KubeError, NotFound, SyncerError
from syncer.kube import FIELD_MANAGER, ApplyOptions, ClientOptions, KubeApi, KubeObject
from syncer.manifests import LoadOptions, ResourceKind
from syncer.plan import (
    ClusterState,
    DryRun,
    PlanOptions,
    Prediction,
    dry_runs_needed,
    plan_cluster,
)
from syncer.rollout.waves import plan_waves
from syncer.status.state_store import StateStore
from syncer.tracing import span


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
    ``rules`` are the sync's rules (a sync passes its own); ``rollout`` groups the clusters into the
    waves a sync would roll out in; ``two_person`` are the trust policy's two-person rules (how many
    people a manual gate waits for); ``sensitive`` marks schema fields to mask (by default the fields
    the shipped CRDs mark ``format: password``); ``pinned`` gives the desired fleet of a revision a
    person pinned clusters to (``syncer rollback``; None: it cannot be had), so that a pinned cluster
    is planned against what the sync applies there."""

    kinds: tuple[ResourceKind, ...] = LoadOptions().allowed_kinds
    client: ClientOptions = field(default_factory=ClientOptions)
    workers: int = 8
    rules: SyncRules = field(default_factory=lambda: SyncRules(field_manager=FIELD_MANAGER))
    rollout: RolloutPolicy = field(default_factory=RolloutPolicy.single_wave)
    two_person: tuple[TwoPersonRule, ...] = ()
    state_namespace: str = AGENT_NAMESPACE
    sensitive: SensitiveFields = field(default_factory=shipped_sensitive_fields)
    pinned: Callable[[str], DesiredFleet | None] | None = None

    @property
    def field_manager(self) -> str:
        return self.rules.field_manager


def object_key(cluster: str, obj: Mapping[str, Any]) -> ObjectKey:
    meta = obj.get("metadata") or {}
    return ObjectKey(
        cluster,
        api_group(str(obj.get("apiVersion", ""))),
        str(obj.get("kind", "")),
        str(meta.get("namespace", "")),
        str(meta.get("name", "")),
    )


def _list_kind(api: KubeApi, kind: ResourceKind) -> list[KubeObject]:
    try:
        return api.list(kind.api_version, kind.kind, label_selector=MANAGED_BY_SELECTOR).items
    except NotFound:
        return []


def read_live(api: KubeApi, kinds: Sequence[ResourceKind]) -> dict[ObjectKey, KubeObject]:
    """Every syncer-managed object of ``kinds``: one label-selected list per kind, across namespaces,
    the kinds read at the same time. A kind the cluster does not serve (CRD not installed) has no
    live objects."""
    live: dict[ObjectKey, KubeObject] = {}
    with ThreadPoolExecutor(max_workers=max(1, len(kinds))) as pool:
        for items in pool.map(lambda k: _list_kind(api, k), kinds):
            for item in items:
                live[object_key(api.cluster, item)] = item
    return live


_NAMESPACE_NOT_FOUND = re.compile(r'namespaces "([^"]+)" not found')


def _existed(predicted: Mapping[str, Any]) -> bool:
    """Whether a dry-run apply answered for an object that already exists: the server gives a
    dry-run create no resourceVersion, an existing object keeps its own."""
    return bool((predicted.get("metadata") or {}).get("resourceVersion"))


def _dry_run(api: KubeApi, request: DryRun, rules: SyncRules) -> tuple[Prediction, bool]:
    """The server's answer to ``request``, and whether a create found the object already there."""
    options = ApplyOptions(field_manager=rules.field_manager, dry_run=True, force=request.force)
    if request.elsewhere:
        return _checked_elsewhere(api, request, options), False
    try:
        predicted = api.apply(request.body, options)
    except Conflict as err:
        conflicts = tuple((c.manager, c.field) for c in err.conflicts)
        return Prediction(request.key, conflicts=conflicts), request.create
    except NotFound as err:
        missing = _NAMESPACE_NOT_FOUND.search(str(err))
        if request.create and missing and missing.group(1) == request.key.namespace:
            return Prediction(request.key, missing_namespace=missing.group(1)), False
        return Prediction(request.key, error=f"dry-run apply refused: {err.detail}"), False
    except KubeError as err:
        return Prediction(request.key, error=f"dry-run apply refused: {err.detail}"), False
    return Prediction(request.key, predicted=predicted), request.create and _existed(predicted)


def _checked_elsewhere(api: KubeApi, request: DryRun, options: ApplyOptions) -> Prediction:
    """Only the server's refusal of an object checked outside its namespace (``DryRun.elsewhere``):
    an object it refuses is an error; anything else (accepted, a name taken there, no such
    namespace in this cluster) says nothing about the object where it goes."""
    try:
        api.apply(request.body, options)
    except Invalid as err:
        return Prediction(request.key, error=f"dry-run apply refused: {err.detail}")
    except KubeError:
        return Prediction(request.key)
    return Prediction(request.key)


def _read_unlabelled(
    api: KubeApi,
    live: dict[ObjectKey, KubeObject],
    desired: ClusterManifests,
    inventory: Inventory,
    options: DiffOptions,
) -> None:
    """Add to ``live`` the objects syncer applied and git no longer wants that the label-selected
    lists did not return: someone took syncer's label off them. They are kept, and the plan says so
    (``kept: no longer labelled``) instead of leaving them out. Usually none: a GET for each."""
    wanted = {m.key for m in desired.manifests}
    missing = sorted(inventory.keys - wanted - live.keys())
    if not missing or inventory.source is not InventorySource.RECORDED:
        return
    versions = {(_group(k.api_version), k.kind): k.api_version for k in options.kinds}
    known = [key for key in missing if (key.group, key.kind) in versions]
    with ThreadPoolExecutor(max_workers=max(1, min(options.workers, len(known)))) as pool:
        fetched = pool.map(lambda k: _fetch(api, k, versions[(k.group, k.kind)]), known)
        for key, obj in zip(known, fetched, strict=True):
            if obj is not None:
                live[key] = obj


def _group(api_version: str) -> str:
    return api_version.rpartition("/")[0]


def _fetch(api: KubeApi, key: ObjectKey, api_version: str) -> KubeObject | None:
    try:
        return api.get(api_version, key.kind, key.name, key.namespace)
    except NotFound:
        return None


def plan_live_cluster(
    api: KubeApi,
    desired: ClusterManifests,
    options: DiffOptions,
    inventory: Inventory,
    rules: SyncRules | None = None,
    *,
    live: dict[ObjectKey, KubeObject] | None = None,
) -> ClusterPlan:
    """One cluster planned against its live state (``_plan_live_cluster``), as a span of its own."""
    with span("syncer.cluster.plan", {"syncer.cluster": desired.cluster}) as planning:
        plan = _plan_live_cluster(api, desired, options, inventory, rules, live=live)
        if plan.error:
            planning.fail(plan.error)
        return plan


def _plan_live_cluster(
    api: KubeApi,
    desired: ClusterManifests,
    options: DiffOptions,
    inventory: Inventory,
    rules: SyncRules | None = None,
    *,
    live: dict[ObjectKey, KubeObject] | None = None,
) -> ClusterPlan:
    """One cluster planned against its live state, with a dry-run apply of everything the sync
    would write. ``inventory`` is what syncer last applied there (``ClusterSyncState.applied_inventory``);
    ``rules`` are the sync's rules (default: the diff options'); ``live`` is ``read_live``'s answer
    when the caller has already read it (else it is read here).

    A create whose object turns out to exist without syncer's label is read and planned as the
    existing object it is (adopt or conflict)."""
    if live is None:
        live = read_live(api, options.kinds)
    _read_unlabelled(api, live, desired, inventory, options)
    plan_options = PlanOptions(rules=rules or options.rules, sensitive=options.sensitive)
    state = ClusterState(desired.cluster, desired.manifests, live, inventory)
    needed = dry_runs_needed(state, plan_options)
    predictions: dict[ObjectKey, Prediction] = {}
    versions = {m.key: m.api_version for m in desired.manifests}
    only_checked: set[ObjectKey] = set()  # dry-run outside their namespace, which this sync creates
    # A create that finds its object already there (without syncer's label) changes what the rest
    # needs: a Namespace found that way is not created by this sync after all, so the objects in it
    # are dry-run where they go, in one more round. Each round that goes on has found objects, so
    # the rounds end.
    while needed:
        with ThreadPoolExecutor(max_workers=max(1, options.workers)) as pool:
            answers = list(pool.map(lambda r: _dry_run(api, r, plan_options.rules), needed))
            found = [p.key for p, existed in answers if existed]
            for key, obj in zip(found, pool.map(lambda k: _fetch(api, k, versions[k]), found), strict=True):
                if obj is not None:
                    live[key] = obj
        predictions.update({p.key: p for p, _ in answers})
        only_checked |= {r.key for r in needed if r.elsewhere}
        state = ClusterState(desired.cluster, desired.manifests, live, inventory)
        needed = tuple(
            r
            for r in (dry_runs_needed(state, plan_options) if found else ())
            if r.key not in predictions or (r.key in only_checked and not r.elsewhere)
        )
        only_checked -= {r.key for r in needed}
    return plan_cluster(state, predictions, plan_options)


def _plan_target(
    desired: ClusterManifests, target: ClusterTarget, options: DiffOptions, revision: str
) -> tuple[ClusterPlan, ClusterSyncState | None]:
    """The cluster's plan, and its sync state as a sync would read it (None: it could not be read)."""
    from syncer.kube.client import ClusterClient  # the Kubernetes client, only once a cluster is contacted

    try:
        client = ClusterClient.from_kubeconfig(target.kubeconfig, target.context, target.name, options.client)
    except SyncerError as err:
        return ClusterPlan(target.name, error=str(err)), None
    try:
        # The sync state and the live lists are read at the same time: neither depends on the other.
        with ThreadPoolExecutor(max_workers=1) as pool:
            stored = pool.submit(stored_state, client, options)
            live = read_live(client, options.kinds)
            state = stored.result()
            plan = plan_live_cluster(client, desired, options, state.applied_inventory(), live=live)
            refused = refusal_now(client, state, revision, desired.content_hash, options.field_manager)
            if refused is not None:
                return replace(plan, blocked=refused.why, refused=True), state
            return plan, state
    except KubeError as err:
        return ClusterPlan(target.name, error=str(err)), None
    finally:
        client.close()


def _pinned(
    plan: ClusterPlan,
    state: ClusterSyncState | None,
    target: ClusterTarget,
    options: DiffOptions,
    revision: str,
) -> tuple[ClusterPlan, ClusterSyncState | None]:
    """A cluster a person pinned to another revision planned against that revision: what the sync
    applies there (the pin's rollback, or nothing when it is on it already). The plan as it was when
    the pinned revision cannot be had."""
    if state is None or not state.pin.active or state.pin.revision == revision or options.pinned is None:
        return plan, state
    pinned = options.pinned(state.pin.revision)
    if pinned is None or target.name not in pinned.clusters:
        return plan, state
    again, read = _plan_target(pinned.clusters[target.name], target, options, state.pin.revision)
    if again.error or again.blocked:
        return replace(again, pinned_to=state.pin.revision), read or state
    held = replace(again, pinned_to=state.pin.revision, hold="pinned", blocked=state.pin.describe())
    return held, read or state


def stored_state(api: KubeApi, options: DiffOptions) -> ClusterSyncState:
    """The cluster's stored sync state, read the way a sync reads it: its inventory says what a sync
    would prune (missing: nothing; unreadable: rebuilt, each prune still needing proof), its failures
    what the sync would refuse."""
    kinds = [(k.api_version, k.kind) for k in options.kinds]
    return StateStore(api, options.state_namespace).load(kinds).state


def _fleet_plan(
    fleet: DesiredFleet,
    plans: Sequence[ClusterPlan],
    policy: RolloutPolicy,
    offline: bool = False,
    holds: tuple[Mapping[str, ClusterSyncState], Sequence[TwoPersonRule], float] | None = None,
) -> FleetPlan:
    """The cluster plans grouped into the rollout's waves (within a wave, by name: the order the
    sync applies them in is not a promise), held where the sync stops (``holds``: the clusters'
    states, the two-person rules and the time; none offline), and every dry-run failure as an
    error."""
    by_name = {plan.cluster: plan for plan in plans}
    labels = {name: fleet.clusters[name].labels for name in by_name}
    policy_waves = plan_waves(labels, policy)
    waves = blocked_after_refusal(
        tuple(
            WavePlan(
                wave.name,
                tuple(by_name[name] for name in sorted(wave.clusters)),
                wave.gate.analysis.describe() if wave.gate.analysis.metrics else "",
            )
            for wave in policy_waves
        )
    )
    if holds is not None:
        states, two_person, now = holds
        waves = hold_waves(waves, policy_waves, fleet, states, (policy, two_person, now))
    errors = tuple(
        f"{plan.cluster}: {change.key.subject}: {change.message}"
        for plan in plans
        for change in plan.changes
        if change.action is Action.ERROR
    )
    return FleetPlan(fleet.revision, waves, offline=offline, errors=errors)


def blocked_after_refusal(waves: tuple[WavePlan, ...]) -> tuple[WavePlan, ...]:
    """``waves`` with the clusters the sync would not reach blocked: from the first wave where a
    cluster refuses the revision on, every cluster (the sync halts there, before applying it)."""
    refusing = next((w for w in waves if any(c.refused for c in w.clusters)), None)
    if refusing is None:
        return waves
    names = ", ".join(c.cluster for c in refusing.clusters if c.refused)
    why = f"the sync halts at wave {refusing.name}: {names} refuse(s) the revision"
    at = waves.index(refusing)
    return waves[:at] + tuple(
        replace(
            wave,
            clusters=tuple(c if c.refused or c.error else replace(c, blocked=why) for c in wave.clusters),
        )
        for wave in waves[at:]
    )


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
        planned = list(
            pool.map(lambda t: _plan_target(fleet.clusters[t.name], t, options, fleet.revision), targets)
        )
    by_name = {t.name: t for t in targets}
    planned = [
        _pinned(plan, state, by_name[plan.cluster], options, fleet.revision) for plan, state in planned
    ]
    states = {plan.cluster: state for plan, state in planned if state is not None}
    holds = (states, options.two_person, time.time())
    return _fleet_plan(fleet, [plan for plan, _ in planned], options.rollout, holds=holds)


def leaving_clusters(
    fleet: DesiredFleet, known: Sequence[ClusterTarget], options: DiffOptions, offline: bool = False
) -> tuple[LeavingCluster, ...]:
    """The ``known`` clusters (the agent's config) that ``fleet`` no longer lists, each with the
    number of objects its sync state records as applied (read unless ``offline``), by name."""
    leaving = sorted((t for t in known if t.name not in fleet.clusters), key=lambda t: t.name)
    if offline:
        return tuple(LeavingCluster(t.name, error="offline: not read") for t in leaving)
    return tuple(_leaving(t, options) for t in leaving)


def _leaving(target: ClusterTarget, options: DiffOptions) -> LeavingCluster:
    from syncer.kube.client import ClusterClient

    try:
        client = ClusterClient.from_kubeconfig(target.kubeconfig, target.context, target.name, options.client)
    except SyncerError as err:
        return LeavingCluster(target.name, error=str(err))
    try:
        return LeavingCluster(target.name, len(stored_state(client, options).applied_inventory().keys))
    except KubeError as err:
        return LeavingCluster(target.name, error=str(err))
    finally:
        client.close()


def offline_plan(
    fleet: DesiredFleet, clusters: Sequence[str] = (), rollout: RolloutPolicy = RolloutPolicy.single_wave()
) -> FleetPlan:
    """Render and validate only: every desired object of each cluster is a create."""
    names = list(clusters) or list(fleet.clusters)
    plans = []
    for name in names:
        desired = fleet.clusters[name]
        state = ClusterState(name, desired.manifests, {}, Inventory.of(name, ()))
        plans.append(replace(plan_cluster(state), inventory=""))
    return _fleet_plan(fleet, plans, rollout, offline=True)
