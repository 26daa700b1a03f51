"""The only package that imports the kubernetes client.

Owns: a narrow KubeApi seam (list, get, server-side apply, create, replace, delete, watch) over the
official client, one ClusterClient per kubeconfig context with pooled connections, a QPS limit and
bounded concurrency, and the translation of every client or HTTP error into ``syncer.errors``
(NotFound, Conflict naming the other field managers, Forbidden, Invalid with field causes,
TooManyRequests with Retry-After, ServerError). Must not: hold policy, plan or rollout logic.
"""

from syncer.kube.api import FIELD_MANAGER, ApplyOptions, KubeApi, KubeObject, ListResult, WatchEvent
from syncer.kube.client import ClientOptions, ClusterClient
from syncer.kube.resources import ResourceType

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
]
