"""The volume retention policy, applied when a RedisCluster is deleted (the ``pvc-retention``
finalizer): with ``Delete`` the StatefulSets go first (while one exists it would create the claims
again for its pods), then every claim of the cluster; with ``Retain`` claims are kept. An Event
records what happened. Through the ``KubeApi`` seam only."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Mapping
from typing import Any

from syncer.controller.events import ClusterEvents
from syncer.controller.model import FIELD_MANAGER, FINALIZER, LABEL_INSTANCE, LABEL_MANAGED_BY
from syncer.errors import NotFound
from syncer.kube import KubeApi, KubeObject

Log = logging.LoggerAdapter[logging.Logger]


def delete(kube: KubeApi, api_version: str, kind: str, obj: Mapping[str, Any]) -> None:
    """Delete ``obj``; one already gone is fine."""
    meta = obj["metadata"]
    with contextlib.suppress(NotFound):
        kube.delete(api_version, kind, meta["name"], meta["namespace"])


def finalize(kube: KubeApi, events: ClusterEvents, obj: KubeObject, log: Log) -> tuple[bool, float | None]:
    """Apply the retention policy; (True, None) once the finalizer may be removed, (False, seconds)
    while StatefulSets are still going, (False, None) when the finalizer is not ours to handle."""
    meta = obj["metadata"]
    if FINALIZER not in (meta.get("finalizers") or ()):
        return False, None
    persistence = (obj.get("spec") or {}).get("persistence") or {}
    policy = persistence.get("retentionPolicy") or "Retain"
    instance = f"{LABEL_INSTANCE}={meta['name']}"
    namespace = meta["namespace"]
    claims = kube.list("v1", "PersistentVolumeClaim", namespace=namespace, label_selector=instance).items
    if policy == "Delete":
        owned = f"{instance},{LABEL_MANAGED_BY}={FIELD_MANAGER}"
        sets = kube.list("apps/v1", "StatefulSet", namespace=namespace, label_selector=owned).items
        if sets:
            for sts in sets:
                if not sts["metadata"].get("deletionTimestamp"):
                    delete(kube, "apps/v1", "StatefulSet", sts)
            log.info("finalizing: waiting for %d StatefulSet(s) to go before deleting volumes", len(sets))
            return False, 1.0
        for claim in claims:
            delete(kube, "v1", "PersistentVolumeClaim", claim)
        message = f"deleted {len(claims)} PersistentVolumeClaim(s) (retentionPolicy Delete)"
    else:
        message = f"kept {len(claims)} PersistentVolumeClaim(s) (retentionPolicy Retain)"
    log.info("finalizing: %s", message)
    events.emit(obj, False, "VolumesDeleted" if policy == "Delete" else "VolumesRetained", message)
    return True, None
