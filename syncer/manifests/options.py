"""Options of manifest loading: size caps, YAML limits and the kinds a fleet repository may hold."""

from __future__ import annotations

from dataclasses import dataclass

from syncer.bounded.limits import YamlLimits

KIB = 1024
MIB = 1024 * KIB


@dataclass(frozen=True)
class ResourceKind:
    """A kind a fleet repository may declare, and whether its objects live in a namespace."""

    api_version: str
    kind: str
    namespaced: bool


REDIS_CLUSTER = ResourceKind("redis.syncer.dev/v1alpha1", "RedisCluster", namespaced=True)
NAMESPACE = ResourceKind("v1", "Namespace", namespaced=False)


@dataclass(frozen=True)
class LoadOptions(YamlLimits):
    """Limits that keep a hostile revision from exhausting the agent, and the allowed kinds.

    The YAML limits are ``YamlLimits`` (the same rules as the agent's own files; ``max_events``
    counts a whole revision). Sizes are in bytes of the raw files.
    """

    max_file_bytes: int = 1 * MIB
    max_total_bytes: int = 32 * MIB
    max_files: int = 5000
    allowed_kinds: tuple[ResourceKind, ...] = (REDIS_CLUSTER, NAMESPACE)

    def kind_of(self, api_version: str, kind: str) -> ResourceKind | None:
        """The allowed kind with this ``apiVersion`` and ``kind``, or None."""
        for allowed in self.allowed_kinds:
            if allowed.api_version == api_version and allowed.kind == kind:
                return allowed
        return None
