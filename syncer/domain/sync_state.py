"""What each cluster records about its own sync, so that any agent can resume from the clusters."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from enum import StrEnum

from syncer.domain.applied import Inventory, InventorySource
from syncer.domain.objects import ObjectKey

# How many rejected revisions a cluster remembers (oldest forgotten first).
BAD_REVISIONS_KEPT = 20


class SyncPhase(StrEnum):
    """``applying``: an apply of ``revision`` started; ``applied``: it finished, health pending;
    ``healthy``: the gate saw it healthy; ``failed``: apply or health failed; ``rolled-back``: the
    cluster was put back on the last good revision."""

    NEVER = "never"
    APPLYING = "applying"
    APPLIED = "applied"
    HEALTHY = "healthy"
    FAILED = "failed"
    ROLLED_BACK = "rolled-back"


@dataclass(frozen=True, order=True)
class InventoryEntry:
    """One object syncer applied: enough to find it again and to know it is the same object."""

    api_version: str
    kind: str
    namespace: str
    name: str
    uid: str = ""

    def key(self, cluster: str) -> ObjectKey:
        return ObjectKey(cluster, self.api_version.rpartition("/")[0], self.kind, self.namespace, self.name)


@dataclass(frozen=True)
class ClusterSyncState:
    """The sync state one cluster keeps (in a ConfigMap in the agent's namespace).

    Times are seconds since the epoch (0 when never). ``revision`` is what was last applied (or being
    applied), ``last_good`` the last revision that was applied and healthy, ``bad_revisions`` those
    that failed here and are not retried until a newer revision arrives. ``rebuilt`` and ``stored``
    say how the state was read: rebuilt from labelled objects (the stored one was unreadable), or
    not stored at all (``stored=False``: the cluster has no sync state). ``window_override`` is an
    operator's reason to change the cluster outside its maintenance windows until
    ``window_override_until`` (``syncer override-window``); ``window`` says why a change to it waits
    for its maintenance window (empty when none waits).
    """

    cluster: str
    revision: str = ""
    phase: SyncPhase = SyncPhase.NEVER
    wave: str = ""
    inventory: tuple[InventoryEntry, ...] = ()
    health: str = ""
    health_detail: str = ""
    last_good: str = ""
    bad_revisions: tuple[str, ...] = ()
    bad_contents: tuple[str, ...] = ()
    last_error: str = ""
    applied_at: float = 0.0
    healthy_since: float = 0.0
    updated_at: float = 0.0
    window: str = ""
    window_override: str = ""
    window_override_until: float = 0.0
    rebuilt: bool = field(default=False, compare=False)
    stored: bool = field(default=True, compare=False)

    def with_bad(self, revision: str, content: str = "") -> ClusterSyncState:
        kept = tuple(r for r in self.bad_revisions if r != revision)[-(BAD_REVISIONS_KEPT - 1) :]
        contents = self.bad_contents
        if content:
            contents = (*tuple(c for c in contents if c != content)[-(BAD_REVISIONS_KEPT - 1) :], content)
        return replace(self, bad_revisions=(*kept, revision), bad_contents=contents)

    def refuses(self, revision: str, content: str) -> bool:
        """Whether ``revision`` (or, by its content hash, the same objects under another id) failed here."""
        return revision in self.bad_revisions or (bool(content) and content in self.bad_contents)

    def inventory_keys(self) -> frozenset[ObjectKey]:
        return frozenset(entry.key(self.cluster) for entry in self.inventory)

    def applied_inventory(self) -> Inventory:
        """What syncer applied here, and how far that record can be trusted for pruning."""
        if not self.stored:
            return Inventory.missing(self.cluster)
        source = InventorySource.REBUILT if self.rebuilt else InventorySource.RECORDED
        return Inventory.of(self.cluster, self.inventory_keys(), self.revision, source)
