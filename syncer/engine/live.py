"""Reading a cluster's live state for the gate: the health of a revision's objects as the cluster
has them. Reads only, through the KubeApi seam. (The managed objects a plan is made against are read
by ``syncer.engine.diff.read_live``.)"""

from __future__ import annotations

from syncer.domain.applied import MANAGED_BY_SELECTOR
from syncer.domain.health import ClusterHealth
from syncer.domain.objects import ClusterManifests
from syncer.errors import NotFound
from syncer.health import cluster_health
from syncer.kube import KubeApi


def live_health(api: KubeApi, desired: ClusterManifests) -> ClusterHealth:
    """The health of ``desired``'s objects as the cluster has them (missing ones count as missing)."""
    kinds = sorted({(m.api_version, m.key.kind) for m in desired.manifests})
    live = []
    for api_version, kind in kinds:
        try:
            live += api.list(api_version, kind, label_selector=MANAGED_BY_SELECTOR).items
        except NotFound:
            continue
    return cluster_health(desired.cluster, [m.key.subject for m in desired.manifests], live)
