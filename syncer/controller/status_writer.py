"""Writing a RedisCluster's status and telling what changed in it.

Owns: the status write through the status subresource (server-side apply, with the object's
resourceVersion as a precondition) and, for each condition that changed, one Event and one log
line. Must not: compute the status (``status.compute`` does) or write anything but the status.
"""

from __future__ import annotations

import logging
from typing import Any

from syncer.controller.events import ClusterEvents
from syncer.controller.formation import FormationListener, FormationStep, untold
from syncer.controller.model import API_VERSION, FIELD_MANAGER, KIND
from syncer.controller.status import is_warning, transitions
from syncer.kube import ApplyOptions, KubeApi, KubeObject

APPLY = ApplyOptions(field_manager=FIELD_MANAGER)
Log = logging.LoggerAdapter[logging.Logger]


class StatusWriter:
    """Writes statuses through ``kube`` and tells their condition changes through ``events``."""

    def __init__(self, kube: KubeApi, events: ClusterEvents) -> None:
        self._kube = kube
        self._events = events

    def write(
        self, obj: KubeObject, status: dict[str, Any], log: Log, told: FormationListener = untold
    ) -> None:
        """Write ``status``, computed from ``obj`` as the reconcile read (or last wrote) it: the
        resourceVersion is a precondition, so a status computed before another writer (a newer
        leader, the health watch's outage, a changed spec) wrote the object is refused (Conflict)
        and computed again. Each condition that changed is told; ``obj`` then carries the status
        and the new resourceVersion, so a later write in the same reconcile (a migration's
        progress) is tied to this one and tells only what changed since. ``told`` hears
        ``READY_WRITTEN`` as soon as a status that turns Ready True is stored."""
        meta = obj["metadata"]
        written = {"name": meta["name"], "namespace": meta["namespace"]}
        if meta.get("resourceVersion"):
            written["resourceVersion"] = meta["resourceVersion"]
        body = {"apiVersion": API_VERSION, "kind": KIND, "metadata": written, "status": status}
        stored = self._kube.apply_status(body, APPLY)
        version = (stored.get("metadata") or {}).get("resourceVersion")
        if version:
            meta["resourceVersion"] = version
        before, obj["status"] = obj.get("status") or {}, status
        changed = transitions(before, status)
        if any(c["type"] == "Ready" and c["status"] == "True" for c in changed):
            told(FormationStep.READY_WRITTEN)
        for condition in changed:
            warning = is_warning(condition)
            reason = f"{condition['type']}{condition['status']}"
            self._events.emit(
                obj, warning, reason, f"{condition['reason']}: {condition['message']}".rstrip(": ")
            )
            log.info(
                "%s=%s (%s) %s",
                condition["type"],
                condition["status"],
                condition["reason"],
                condition["message"],
                extra={"condition": condition["type"], "condition_status": condition["status"]},
            )
