"""Guard policies as values: change rules, revision-wide limits, and the inputs they judge."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from syncer.domain.objects import ObjectKey
from syncer.domain.selectors import LabelSelector
from syncer.errors import Location
from syncer.guards.language import Program


class ChangeKind(StrEnum):
    """What a planned change does to an object, as a rule sees it: conflicts and drift put the
    desired fields back, so they are updates."""

    CREATE = "create"
    UPDATE = "update"
    PRUNE = "prune"


DEFAULT_ACTIONS = frozenset({ChangeKind.CREATE, ChangeKind.UPDATE})


@dataclass(frozen=True)
class ChangeRule:
    """A named CEL expression that must be true for every planned change it applies to.

    It applies to changes of the ``kinds`` listed (every kind when empty), whose action is one of
    ``actions`` (create and update by default: ``new`` is then set), on clusters matching
    ``clusters`` (every cluster when None).
    """

    name: str
    program: Program
    message: str = ""
    kinds: frozenset[str] = frozenset()
    actions: frozenset[ChangeKind] = DEFAULT_ACTIONS
    clusters: LabelSelector | None = None
    location: Location = field(default_factory=lambda: Location("<inline>"))

    def applies_to(self, change: PlannedChange) -> bool:
        return (
            (not self.kinds or change.key.kind in self.kinds)
            and change.action in self.actions
            and (self.clusters is None or self.clusters.matches(change.labels))
        )


@dataclass(frozen=True)
class RevisionLimit:
    """At most ``max_objects`` objects changed and at most ``max_clusters`` clusters changed by one
    revision (None: no bound), counting only clusters that match ``clusters``."""

    name: str
    max_objects: int | None = None
    max_clusters: int | None = None
    clusters: LabelSelector | None = None
    location: Location = field(default_factory=lambda: Location("<inline>"))


@dataclass(frozen=True)
class GuardPolicy:
    """The guard rules and limits the agent holds; ``origin`` names the file they came from."""

    rules: tuple[ChangeRule, ...] = ()
    limits: tuple[RevisionLimit, ...] = ()
    origin: str = "<none>"

    @property
    def empty(self) -> bool:
        return not self.rules and not self.limits


@dataclass(frozen=True)
class PlannedChange:
    """One object a revision would change: the object live (None on a create) and as the revision
    wants it applied (None on a prune), in a cluster with its labels."""

    key: ObjectKey
    action: ChangeKind
    old: Mapping[str, Any] | None
    new: Mapping[str, Any] | None
    labels: Mapping[str, str] = field(default_factory=dict)

    @property
    def cluster(self) -> str:
        return self.key.cluster
