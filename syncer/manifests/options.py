"""Options of manifest loading: size caps, YAML limits and the kinds a fleet repository may hold."""

from __future__ import annotations

from dataclasses import dataclass

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
class LoadOptions:
    """Limits that keep a hostile revision from exhausting the agent, and the allowed kinds.

    Sizes are in bytes of the raw files; ``max_aliases`` counts alias nodes per file,
    ``max_nodes`` and ``max_depth`` bound each YAML document with every alias expanded,
    ``max_documents`` the documents of one file and ``max_events`` the YAML parser events of a whole
    revision (the work parsing it may cost, whatever its shape).
    """

    max_file_bytes: int = 1 * MIB
    max_total_bytes: int = 32 * MIB
    max_files: int = 5000
    max_aliases: int = 100
    max_nodes: int = 100_000
    max_depth: int = 64
    max_documents: int = 1000
    max_events: int = 1_000_000
    allowed_kinds: tuple[ResourceKind, ...] = (REDIS_CLUSTER, NAMESPACE)

    def kind_of(self, api_version: str, kind: str) -> ResourceKind | None:
        """The allowed kind with this ``apiVersion`` and ``kind``, or None."""
        for allowed in self.allowed_kinds:
            if allowed.api_version == api_version and allowed.kind == kind:
                return allowed
        return None


class EventBudget:
    """The YAML events one revision may still cost; shared by every file of the revision."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.used = 0

    def spend(self) -> bool:
        """Count one event; False once the budget is exceeded."""
        self.used += 1
        return self.used <= self.limit
