"""The plan types: per object an action and its field changes, per cluster and per wave."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from syncer.domain.objects import ObjectKey


class Action(StrEnum):
    """What applying a revision does to one object (or, on a FieldChange, why a field is listed).

    ``adopt``: the values already match but syncer does not own every desired field (a server
    default, another manager's value, an object made by hand); applying makes syncer own them.
    ``keep``: no longer desired but not pruned (opted out, no proof syncer applied it, no inventory).
    ``error``: the server refused the dry-run of an object the sync would write. ``release`` only
    marks a field syncer stops owning while its value stays (kept by its other owners).
    """

    CREATE = "create"
    UPDATE = "update"
    ADOPT = "adopt"
    PRUNE = "prune"
    KEEP = "keep"
    UNCHANGED = "unchanged"
    CONFLICT = "conflict"
    DRIFT = "drift"
    ERROR = "error"
    RELEASE = "release"


OBJECT_ACTIONS = (
    Action.CREATE,
    Action.UPDATE,
    Action.ADOPT,
    Action.PRUNE,
    Action.KEEP,
    Action.CONFLICT,
    Action.DRIFT,
    Action.ERROR,
    Action.UNCHANGED,
)
"""The actions an object may have, in the order summaries list them."""

CHANGING_ACTIONS = frozenset(
    {Action.CREATE, Action.UPDATE, Action.ADOPT, Action.PRUNE, Action.CONFLICT, Action.DRIFT}
)
WRITING_ACTIONS = frozenset({Action.CREATE, Action.UPDATE, Action.ADOPT, Action.DRIFT, Action.CONFLICT})
"""Actions the apply stage sends a server-side apply for (conflicts only under the force policy)."""


@dataclass(frozen=True)
class FieldChange:
    """One field that differs. ``path`` is a JSON pointer; ``before``/``after`` are None when the field
    is absent on that side; ``owners`` are the field managers that own it live (empty when none)."""

    path: str
    before: Any
    after: Any
    owners: tuple[str, ...] = ()
    action: Action = Action.UPDATE
    masked: bool = False


@dataclass(frozen=True)
class Change:
    """The planned action for one object; ``managers`` are the other field managers involved (conflict,
    drift); ``predicted`` says whether the fields come from a server-side dry-run apply."""

    key: ObjectKey
    api_version: str
    action: Action
    fields: tuple[FieldChange, ...] = ()
    managers: tuple[str, ...] = ()
    message: str = ""
    predicted: bool = False
    before: Mapping[str, Any] | None = field(default=None, compare=False)
    after: Mapping[str, Any] | None = field(default=None, compare=False)

    @property
    def changes_something(self) -> bool:
        return self.action in CHANGING_ACTIONS


@dataclass(frozen=True)
class ClusterPlan:
    """Every change of one cluster, in key order; ``error`` is set when the cluster could not be read.

    ``blocked`` says why a sync would write nothing at all to this cluster (conflicts under the
    ``report`` policy, a dry-run the server refused, a revision it refuses because it failed there
    before: ``refused``, or a wave before it that refuses); ``hold`` what holds it now when the sync
    would write to it later (``suspended``, ``pinned``, ``window``, ``awaiting-promotion``, or
    ``wave``: its own wave or an earlier one is held; ``blocked`` says why); ``inventory`` where the
    inventory that decided the prunes came from (``recorded``, ``rebuilt`` or ``missing``);
    ``pinned_to`` the revision a person pinned the cluster to (``syncer rollback``): its changes are
    then that revision's, which the sync applies there instead of this one."""

    cluster: str
    changes: tuple[Change, ...] = ()
    error: str = ""
    dry_runs: int = 0
    blocked: str = ""
    inventory: str = "recorded"
    refused: bool = False
    hold: str = ""
    pinned_to: str = ""

    def count(self, action: Action) -> int:
        return sum(1 for c in self.changes if c.action == action)

    def counts(self) -> dict[Action, int]:
        found = Counter(c.action for c in self.changes)
        return {action: found.get(action, 0) for action in OBJECT_ACTIONS}

    @property
    def has_changes(self) -> bool:
        return any(c.changes_something for c in self.changes)

    @property
    def has_errors(self) -> bool:
        return bool(self.error) or any(c.action is Action.ERROR for c in self.changes)


@dataclass(frozen=True)
class LeavingCluster:
    """A cluster the agent knows (its config names it) that the revision's fleet no longer lists:
    syncer stops syncing it and leaves what it applied there as it is. ``objects`` is how many
    objects its sync state records as applied (-1: not known, offline or unreadable, ``error``
    says why)."""

    name: str
    objects: int = -1
    error: str = ""

    def describe(self) -> str:
        """One line for people: what leaving means for this cluster."""
        kept = (
            f"its {self.objects} object(s) syncer applied stay as they are"
            if self.objects >= 0
            else "what syncer applied there stays as it is"
        )
        why = f" ({self.error})" if self.error else ""
        return (
            f"cluster {self.name} leaves the fleet: syncer no longer applies, prunes or repairs "
            f"anything there; {kept}{why}"
        )


@dataclass(frozen=True)
class WavePlan:
    """The clusters of one rollout wave, in rollout order, and the analysis it will be judged by
    (``analysis``: its metrics in words; empty: health and bake alone)."""

    name: str
    clusters: tuple[ClusterPlan, ...]
    analysis: str = ""


@dataclass(frozen=True)
class FleetPlan:
    """A revision planned against a fleet: its waves in order, and the clusters leaving the fleet.
    ``offline`` plans never saw a cluster."""

    revision: str
    waves: tuple[WavePlan, ...]
    offline: bool = False
    errors: tuple[str, ...] = field(default=())
    leaving: tuple[LeavingCluster, ...] = ()

    @property
    def clusters(self) -> tuple[ClusterPlan, ...]:
        return tuple(c for wave in self.waves for c in wave.clusters)

    @property
    def has_changes(self) -> bool:
        """Whether a sync would change something: an object, or the fleet's membership."""
        return bool(self.leaving) or any(c.has_changes for c in self.clusters)

    @property
    def has_errors(self) -> bool:
        return bool(self.errors) or any(c.has_errors for c in self.clusters)

    @property
    def refused(self) -> bool:
        """Whether a cluster refuses the revision: the sync halts there and does not sync it."""
        return any(c.refused for c in self.clusters)
