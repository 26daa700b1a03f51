"""Kubernetes Events about a RedisCluster, best effort: a failure to record one is logged, not raised.

Every message is scrubbed of the RedisCluster's secret values first (``scrub``): a server's refusal of
a child can echo them (a redis.conf carrying ``requirepass``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

from syncer.controller.model import FIELD_MANAGER
from syncer.controller.upgrade import format_time
from syncer.crds import shipped_sensitive_fields
from syncer.domain.secrets import redact, secret_values
from syncer.errors import KubeError
from syncer.kube import KubeApi

log = logging.getLogger(__name__)


def scrub(obj: Mapping[str, Any], message: str) -> str:
    """``message`` with every secret value of ``obj`` masked (as ``syncer.domain.secrets`` defines
    them, with the fields the shipped CRD marks ``format: password``)."""
    return redact(message, secret_values([obj], shipped_sensitive_fields()))


class EventRecorder:
    def __init__(self, kube: KubeApi, clock: Callable[[], float], instance: str = "") -> None:
        self._kube = kube
        self._clock = clock
        self._instance = instance or FIELD_MANAGER

    def emit(self, obj: Mapping[str, Any], warning: bool, reason: str, message: str) -> None:
        meta = obj.get("metadata") or {}
        stamp = format_time(self._clock()).split(".")[0] + "Z"
        body = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {
                "generateName": f"{meta.get('name', 'rediscluster')}.",
                "namespace": meta.get("namespace"),
            },
            "involvedObject": {
                "apiVersion": obj.get("apiVersion"),
                "kind": obj.get("kind"),
                "name": meta.get("name"),
                "namespace": meta.get("namespace"),
                "uid": meta.get("uid"),
                "resourceVersion": meta.get("resourceVersion"),
            },
            "type": "Warning" if warning else "Normal",
            "reason": reason,
            "message": scrub(obj, message)[:1024],
            "firstTimestamp": stamp,
            "lastTimestamp": stamp,
            "count": 1,
            "source": {"component": FIELD_MANAGER},
            "reportingComponent": FIELD_MANAGER,
            "reportingInstance": self._instance,
        }
        try:
            self._kube.create(body)
        except KubeError as err:
            log.warning("could not record event %s: %s", reason, err)
