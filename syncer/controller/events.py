"""Kubernetes Events about a RedisCluster, best effort: a failure to record one is logged, not raised.

Every message is scrubbed of the RedisCluster's secret values first (``scrub``): a server's refusal of
a child can echo them (a redis.conf carrying ``requirepass``). The Events are written by the one Event
writer of syncer (``syncer.kube.events.EventRecorder``), so a repeat is counted in the first Event's
series, as Kubernetes' own recorder does, instead of becoming a new Event.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from syncer.crds import shipped_sensitive_fields
from syncer.domain.secrets import redact, secret_values
from syncer.kube import KubeApi
from syncer.kube.events import EventRecorder, Regarding

log = logging.getLogger(__name__)

REPORTING_CONTROLLER = "redis.syncer.dev/controller"
"""The ``reportingController`` of every Event the controller writes."""


def scrub(obj: Mapping[str, Any], message: str) -> str:
    """``message`` with every secret value of ``obj`` masked (as ``syncer.domain.secrets`` defines
    them, with the fields the shipped CRD marks ``format: password``)."""
    return redact(message, secret_values([obj], shipped_sensitive_fields()))


class ClusterEvents:
    """The Events of the RedisClusters one controller reconciles, through ``kube``."""

    def __init__(self, kube: KubeApi, instance: str = "") -> None:
        self.recorder = EventRecorder(kube, REPORTING_CONTROLLER, instance)

    def emit(self, obj: Mapping[str, Any], warning: bool, reason: str, message: str) -> None:
        if not self.recorder.emit(Regarding.of(obj), reason, scrub(obj, message), warning=warning):
            log.warning("could not record event %s", reason)
