"""Kubernetes Events (events.k8s.io/v1) that say what syncer did, where kubectl users look for it.

An event that cannot be written is dropped and counted: telling the story must never stop the sync.
"""

from __future__ import annotations

import datetime as dt
import socket
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from syncer.errors import KubeError
from syncer.kube import KubeApi

NOTE_LIMIT = 1024


@dataclass(frozen=True)
class Regarding:
    """The object an event is about."""

    api_version: str
    kind: str
    name: str
    namespace: str = ""
    uid: str = ""

    @staticmethod
    def of(obj: Mapping[str, Any]) -> Regarding:
        meta = obj.get("metadata") or {}
        return Regarding(
            str(obj.get("apiVersion", "")),
            str(obj.get("kind", "")),
            str(meta.get("name", "")),
            str(meta.get("namespace", "")),
            str(meta.get("uid", "")),
        )


def _micro_time(now: dt.datetime) -> str:
    return now.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def event_body(
    regarding: Regarding, reason: str, note: str, *, warning: bool, controller: str, instance: str
) -> dict[str, Any]:
    """An events.k8s.io/v1 Event in the namespace of the object it is about."""
    target = {"apiVersion": regarding.api_version, "kind": regarding.kind, "name": regarding.name}
    if regarding.namespace:
        target["namespace"] = regarding.namespace
    if regarding.uid:
        target["uid"] = regarding.uid
    return {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {
            "generateName": f"{regarding.name or 'syncer'}-",
            "namespace": regarding.namespace or "default",
        },
        "eventTime": _micro_time(dt.datetime.now(dt.UTC)),
        "reportingController": controller,
        "reportingInstance": instance,
        "action": "Sync",
        "reason": reason,
        "note": note[:NOTE_LIMIT],
        "type": "Warning" if warning else "Normal",
        "regarding": target,
    }


class EventRecorder:
    """Writes events through the KubeApi seam; ``dropped`` counts those the apiserver refused."""

    def __init__(self, kube: KubeApi, controller: str = "syncer.dev/agent", instance: str = "") -> None:
        self.kube = kube
        self.controller = controller
        self.instance = instance or socket.gethostname()
        self.dropped = 0

    def emit(self, regarding: Regarding, reason: str, note: str, *, warning: bool = False) -> bool:
        body = event_body(
            regarding, reason, note, warning=warning, controller=self.controller, instance=self.instance
        )
        try:
            self.kube.create(body)
        except KubeError:
            self.dropped += 1
            return False
        return True
