"""Which REST resource serves a kind: a table of the kinds syncer touches, plus discovery for others."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ResourceType:
    """A served resource: ``group``/``version``, its ``kind`` and URL ``plural``, and whether namespaced."""

    group: str
    version: str
    kind: str
    plural: str
    namespaced: bool

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    def path(self, namespace: str = "", name: str = "") -> str:
        """The collection path (no name) or object path, namespaced when the resource is."""
        base = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        if self.namespaced and namespace:
            base += f"/namespaces/{namespace}"
        base += f"/{self.plural}"
        return f"{base}/{name}" if name else base


def _core(kind: str, plural: str, namespaced: bool = True) -> ResourceType:
    return ResourceType("", "v1", kind, plural, namespaced)


KNOWN: tuple[ResourceType, ...] = (
    _core("Namespace", "namespaces", namespaced=False),
    _core("ConfigMap", "configmaps"),
    _core("Secret", "secrets"),
    _core("Service", "services"),
    _core("ServiceAccount", "serviceaccounts"),
    _core("Pod", "pods"),
    _core("PersistentVolumeClaim", "persistentvolumeclaims"),
    _core("Event", "events"),
    _core("Node", "nodes", namespaced=False),
    ResourceType("apps", "v1", "StatefulSet", "statefulsets", True),
    ResourceType("apps", "v1", "Deployment", "deployments", True),
    ResourceType("policy", "v1", "PodDisruptionBudget", "poddisruptionbudgets", True),
    ResourceType("coordination.k8s.io", "v1", "Lease", "leases", True),
    ResourceType("events.k8s.io", "v1", "Event", "events", True),
    ResourceType(
        "apiextensions.k8s.io", "v1", "CustomResourceDefinition", "customresourcedefinitions", False
    ),
    ResourceType("rbac.authorization.k8s.io", "v1", "Role", "roles", True),
    ResourceType("rbac.authorization.k8s.io", "v1", "RoleBinding", "rolebindings", True),
    ResourceType("rbac.authorization.k8s.io", "v1", "ClusterRole", "clusterroles", False),
    ResourceType("rbac.authorization.k8s.io", "v1", "ClusterRoleBinding", "clusterrolebindings", False),
    ResourceType("redis.syncer.dev", "v1alpha1", "RedisCluster", "redisclusters", True),
)

_BY_KIND = {(r.api_version, r.kind): r for r in KNOWN}


def known(api_version: str, kind: str) -> ResourceType | None:
    return _BY_KIND.get((api_version, kind))


def from_discovery(api_version: str, kind: str, document: dict[str, object]) -> ResourceType | None:
    """Find ``kind`` in an APIResourceList (``GET /apis/<group>/<version>``); None when not served."""
    group, _, version = api_version.rpartition("/")
    resources = document.get("resources")
    if not isinstance(resources, list):
        return None
    for entry in resources:
        if not isinstance(entry, dict) or "/" in str(entry.get("name", "")):
            continue  # subresources such as redisclusters/status
        if entry.get("kind") == kind:
            return ResourceType(group, version, kind, str(entry["name"]), bool(entry.get("namespaced")))
    return None
