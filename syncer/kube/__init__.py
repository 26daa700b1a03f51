"""The only package that imports the kubernetes client.

Owns: a narrow KubeApi seam (list, get, server-side apply, create, replace, delete, watch) over the
official client, one ClusterClient per kubeconfig context with pooled connections, a QPS limit and
bounded concurrency, kubeconfigs read through the strict reader at every client (``kubeconfig``),
and the translation of every client or HTTP error into ``syncer.errors``
(NotFound, Conflict naming the other field managers, Forbidden, Invalid with field causes,
TooManyRequests with Retry-After, ServerError), and the one writer of Kubernetes Events (``events``,
repeats folded into a series). Must not: hold policy, plan or rollout logic.

The kubernetes client itself is imported only when ``ClusterClient`` is first used, so that commands
which contact no cluster (render, an offline diff) do not pay for it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from syncer.domain.applied import FIELD_MANAGER
from syncer.kube.api import (
    ApplyOptions,
    ClientOptions,
    KubeApi,
    KubeObject,
    ListResult,
    WatchEvent,
)
from syncer.kube.kubeconfig import read_kubeconfig
from syncer.kube.resources import ResourceType
from syncer.lazy import lazy_getattr

if TYPE_CHECKING:
    from syncer.kube.client import ClusterClient

__getattr__ = lazy_getattr(__name__, {"client": ("ClusterClient",)})


__all__ = [
    "FIELD_MANAGER",
    "ApplyOptions",
    "ClientOptions",
    "ClusterClient",
    "KubeApi",
    "KubeObject",
    "ListResult",
    "ResourceType",
    "WatchEvent",
    "read_kubeconfig",
]
