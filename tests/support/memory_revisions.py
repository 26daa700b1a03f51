"""Revisions held in memory for fast tests of a pass: each is a desired fleet pushed as the branch
tip, or a tip that fails a stage. It stands in for the revision gate over git, whose own behaviour
is tested on real repositories; here only what the pass decides from the gate's answers is tested."""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from pathlib import Path
from typing import Any

from syncer.config import VerifyMode
from syncer.domain.objects import ClusterManifests, DesiredFleet, Manifest, ObjectKey, api_group
from syncer.engine.revision import Advance, PollOutcome, PreparedRevision, Rejection, Stage
from syncer.errors import Location, SourceError, SyncerError
from syncer.source.snapshots import Snapshot
from syncer.verify.results import VerificationResult


def desired_fleet(
    revision: str, clusters: Mapping[str, Mapping[str, str]], objects: list[dict[str, Any]]
) -> DesiredFleet:
    """Every cluster (name -> labels) gets the same ``objects``."""
    fleet: dict[str, ClusterManifests] = {}
    for name, labels in clusters.items():
        manifests = []
        for body in objects:
            meta = body["metadata"]
            key = ObjectKey(
                name, api_group(body["apiVersion"]), body["kind"], meta.get("namespace", ""), meta["name"]
            )
            manifests.append(Manifest(key, body["apiVersion"], body, Location("base/objects.yaml")))
        fleet[name] = ClusterManifests.of(name, manifests, labels)
    return DesiredFleet(revision, fleet)


def prepared(fleet: DesiredFleet) -> PreparedRevision:
    verification = VerificationResult(fleet.revision, VerifyMode.HEAD, "", ())
    return PreparedRevision(
        fleet.revision, fleet, verification, Snapshot(fleet.revision, Path("."), Path("."), "main")
    )


class MemoryRevisions:
    """A branch whose tip the test moves; ``synced`` lists what the pass marked as rolled out."""

    def __init__(self) -> None:
        self.fleets: dict[str, DesiredFleet] = {}
        self.bad: dict[str, SyncerError] = {}
        self.tip = ""
        self.source_down: SourceError | None = None
        self.current: PreparedRevision | None = None
        self.last_rejection: Rejection | None = None
        self.synced: list[str] = []
        self.rebuilt: list[str] = []
        self.unrebuildable: set[str] = set()
        self.recorded: Callable[[Collection[str]], Mapping[str, str]] | None = None
        self.seen_recorded: list[Mapping[str, str]] = []
        self.rewritten_away: set[str] = set()
        self.forged: set[str] = set()

    def push(self, fleet: DesiredFleet) -> DesiredFleet:
        self.fleets[fleet.revision] = fleet
        self.tip = fleet.revision
        return fleet

    def push_bad(self, revision: str, error: SyncerError) -> None:
        self.bad[revision] = error
        self.tip = revision

    def advance(self) -> Advance:
        if self.recorded is not None:
            in_force = self.current.fleet.clusters if self.current else ()
            self.seen_recorded.append(dict(self.recorded(in_force)))
        if self.source_down is not None:
            self.last_rejection = Rejection("", Stage.SOURCE, self.source_down)
            return Advance(PollOutcome.REJECTED, self.current, self.last_rejection)
        if self.current is not None and self.tip == self.current.revision:
            return Advance(PollOutcome.UNCHANGED, self.current)
        if self.last_rejection is not None and self.last_rejection.revision == self.tip:
            return Advance(PollOutcome.REJECTED, self.current, self.last_rejection)
        if self.tip in self.bad:
            self.last_rejection = Rejection(self.tip, Stage.VERIFY, self.bad[self.tip])
            return Advance(PollOutcome.REJECTED, self.current, self.last_rejection)
        self.current, self.last_rejection = prepared(self.fleets[self.tip]), None
        return Advance(PollOutcome.ACCEPTED, self.current)

    def rebuild(self, revision: str) -> DesiredFleet:
        self.rebuilt.append(revision)
        if revision in self.unrebuildable:
            raise SourceError(f"revision {revision} is gone")
        return self.fleets[revision]

    def mark_synced(self, revision: str) -> None:
        self.synced.append(revision)

    def admits(self, revision: str, recorded: str) -> bool:
        """Revisions descend from every earlier one pushed, unless the test rewrote it away."""
        return recorded not in self.rewritten_away

    def descends(self, revision: str, ancestor: str) -> bool:
        """``revision`` was pushed after ``ancestor`` (and ``ancestor`` was not rewritten away)."""
        order = list(self.fleets)
        if revision not in order or ancestor not in order or ancestor in self.rewritten_away:
            return False
        return order.index(ancestor) < order.index(revision)

    @property
    def unknown(self) -> frozenset[str]:
        """The recorded revisions the test says the repository does not hold (``forged``)."""
        return frozenset(self.forged)

    def holds(self, revision: str) -> bool:
        return revision not in self.forged
