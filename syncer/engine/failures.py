"""The live reads that failed-before needs (``syncer.rollout.failures`` decides): the state of the
objects a live failure watches, whether a cluster was healthy before a revision was applied, and
which clusters refuse a revision now. Reads only, through the ``KubeApi`` seam; used alike by the
rollout and by ``syncer diff``, so that the diff shows what the sync will do."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from syncer.domain.applied import MANAGED_BY_SELECTOR
from syncer.domain.health import Health
from syncer.domain.objects import DesiredFleet
from syncer.domain.sync_state import ClusterSyncState, InventoryEntry
from syncer.errors import KubeError, NotFound
from syncer.health import cluster_health
from syncer.kube import KubeApi
from syncer.rollout.failures import Refusal, fingerprint, refusal, watched


def live_fingerprint(api: KubeApi, objects: Sequence[InventoryEntry], own_manager: str) -> str | None:
    """The ``fingerprint`` of ``objects`` as the cluster has them now (None: they cannot be read)."""
    live: dict[InventoryEntry, Mapping[str, Any] | None] = {}
    try:
        for entry in objects:
            try:
                live[entry] = api.get(entry.api_version, entry.kind, entry.name, entry.namespace)
            except NotFound:
                live[entry] = None
    except KubeError:
        return None
    return fingerprint(live, own_manager)


def refusals(
    clients: Mapping[str, KubeApi],
    clusters: Sequence[str],
    fleet: DesiredFleet,
    states: Mapping[str, ClusterSyncState],
    own_manager: str,
) -> tuple[Refusal, ...]:
    """The clusters of ``clusters`` that refuse ``fleet``'s revision now, each with its failure."""
    found = (
        refusal_now(
            clients[name], states[name], fleet.revision, fleet.clusters[name].content_hash, own_manager
        )
        for name in clusters
    )
    return tuple(r for r in found if r is not None)


def refusal_now(
    api: KubeApi, state: ClusterSyncState, revision: str, content: str, own_manager: str
) -> Refusal | None:
    """Whether ``state``'s cluster refuses ``revision`` now: a live failure's objects are read to
    see whether they changed."""
    objects = watched(state, revision, content)
    prints = live_fingerprint(api, objects, own_manager) if objects else None
    return refusal(state, revision, content, prints)


def health_before(api: KubeApi, state: ClusterSyncState) -> str:
    """Why the objects ``state`` records as applied are not healthy now (empty: they are, or the
    cluster runs nothing yet, or they cannot be read): asked just before a new revision is applied."""
    if not state.revision or not state.inventory:
        return ""
    kinds = sorted({(e.api_version, e.kind) for e in state.inventory})
    live = []
    try:
        for api_version, kind in kinds:
            try:
                live += api.list(api_version, kind, label_selector=MANAGED_BY_SELECTOR).items
            except NotFound:
                continue
    except KubeError:
        return ""
    subjects = [e.key(state.cluster).subject for e in state.inventory]
    health = cluster_health(state.cluster, subjects, live)
    return "" if health.health is Health.HEALTHY else f"{health.health}: {health.summary()}"
