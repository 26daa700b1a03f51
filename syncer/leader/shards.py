"""Sharding the fleet among agent replicas with Leases, and fencing each replica's writes.

* **Membership.** Each replica holds a Lease of its own in the home cluster (labelled with the
  replica group). The live replicas are those whose Lease this replica saw change within its
  duration (judged on the local clock, like leader election).
* **Assignment.** Every replica computes the same owner for each cluster from the live replicas
  (``syncer.leader.assignment``); nobody sends anyone anything.
* **Ownership.** A replica writes to a cluster only while it holds that cluster's owner Lease, kept
  in the cluster itself (the agent's namespace there). It takes the Lease when the assignment gives
  it the cluster and the Lease is free or expired, renews it every round, and releases it when the
  assignment moves the cluster elsewhere, after the writes in flight to it have ended.
* **Fence.** ``Shards.writing(cluster)`` is entered around every write (``Shards.fence(cluster)``
  is the cluster's ``Fence``; ``syncer.leader.fence.FencedKube`` enters it for every write through
  the ``KubeApi`` seam); it refuses (``FencedOut``) unless this replica renewed
  the cluster's owner Lease and its own membership less than ``renew_deadline`` ago, and a release
  waits for the writes inside it. ``Shards.fence(cluster)`` is the same check as a
  ``syncer.leader.fence.Fence`` whose token (the owner Lease's transitions when taken, plus one)
  grows with every new owner, so a cluster's sync state refuses an older owner's writes.
* **Takeover.** Another replica takes a cluster when its owner Lease is released, unchanged for
  ``lease_duration``, or held by a replica whose membership has lapsed (unchanged for
  ``lease_duration``: that replica's own fence closed ``lease_duration - renew_deadline`` earlier).
  A write that began while the fence was open can still land after that only if it outlasts that
  margin; the margin is therefore what a replica's request timeout should stay below.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager, contextmanager, suppress
from dataclasses import dataclass, field
from typing import Any

from syncer.errors import Conflict, FencedOut, KubeError, NotFound
from syncer.kube import KubeApi
from syncer.leader.assignment import DEFAULT_SLACK, assign
from syncer.leader.election import LEASE_API, LeaseRecord, LeaseVerdict, _micro_time, judge

log = logging.getLogger(__name__)

GROUP_LABEL = "syncer.dev/replica-group"
OWNER_LEASE = "syncer-owner"
# Owner Leases taken, renewed or released at the same time in one round.
ROUND_WORKERS = 8


@dataclass(frozen=True)
class ShardOptions:
    """Timing and names of sharding. ``group`` names the replica set (its member Leases carry it as
    a label); member Leases live in ``namespace`` of the home cluster, owner Leases in
    ``owner_namespace`` of each cluster."""

    group: str
    namespace: str
    owner_namespace: str
    identity: str
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    slack: float = DEFAULT_SLACK
    notes: Mapping[str, str] = field(default_factory=dict)
    """Annotations this replica publishes on its member Lease, which every replica reads of the live
    ones (``ShardView.notes``): what replicas must agree on, e.g. the rollout policy they run."""


class _Holder:
    """One Lease this replica wants to hold: create, take over, renew and release it."""

    def __init__(
        self,
        kube: KubeApi,
        where: tuple[str, str],
        options: ShardOptions,
        clock: Callable[[], float],
        annotations: Mapping[str, str] | None = None,
    ) -> None:
        """The Lease ``where`` names (its name and namespace); ``annotations`` are published on it
        while held."""
        self.kube = kube
        self.name, self.namespace = where
        self.options = options
        self.clock = clock
        self.record: LeaseRecord | None = None
        self.renewed_at: float | None = None
        self.annotations: Mapping[str, str] = dict(annotations or {})
        self._seen: tuple[str, str, str] | None = None
        self._seen_at = 0.0

    def read(self) -> LeaseRecord | None:
        try:
            lease = self.kube.get(LEASE_API, "Lease", self.name, self.namespace)
        except NotFound:
            self.record = None
            return None
        self.record = record = LeaseRecord.from_lease(lease)
        seen = (record.holder, record.renew_time, record.resource_version)
        if seen != self._seen:
            self._seen, self._seen_at = seen, self.clock()
        return record

    def _body(self, holder: str, labels: Mapping[str, str] | None) -> dict[str, Any]:
        record = self.record
        now = _micro_time(time.time())
        keep = record is not None and record.holder == holder and holder != ""
        spec = {
            "holderIdentity": holder,
            "leaseDurationSeconds": max(int(self.options.lease_duration), 1),
            "renewTime": now,
            "acquireTime": record.acquire_time if keep and record is not None else now,
            "leaseTransitions": (record.transitions if record else 0)
            + (1 if record and holder and not keep else 0),
        }
        meta: dict[str, Any] = {"name": self.name, "namespace": self.namespace, "labels": dict(labels or {})}
        if self.annotations and holder:
            meta["annotations"] = dict(self.annotations)
        if record is not None:
            meta["resourceVersion"] = record.resource_version
        return {"apiVersion": LEASE_API, "kind": "Lease", "metadata": meta, "spec": spec}

    def hold(self, labels: Mapping[str, str] | None = None, live: frozenset[str] | None = None) -> bool:
        """One round: True when this replica holds the Lease afterwards. A renewal of a Lease held
        goes out without reading it first (its resourceVersion is known); a conflict reads it.

        ``live`` are the replicas known to be alive: a Lease whose holder is not among them is
        taken at once (that holder's own fence closed when its membership lapsed)."""
        identity = self.options.identity
        if self.record is None or self.record.holder != identity or self.renewed_at is None:
            record = self.read()
            verdict = judge(record, identity, self._seen_at, self.clock())
            if verdict is LeaseVerdict.WAIT and live is not None and record is not None:
                verdict = LeaseVerdict.WAIT if record.holder in live else LeaseVerdict.ACQUIRE
            if verdict is LeaseVerdict.WAIT:
                self.renewed_at = None
                return False
        started = self.clock()
        body = self._body(identity, labels)
        try:
            written = self.kube.create(body) if self.record is None else self.kube.replace(body)
        except Conflict:
            self.record, self.renewed_at = None, None
            return False
        self.record = LeaseRecord.from_lease(written)
        self.renewed_at = started
        return True

    def stop_renewing(self) -> None:
        """No new write starts under this Lease (it is about to be released)."""
        self.renewed_at = None

    def valid(self, renew_deadline: float) -> bool:
        return self.renewed_at is not None and self.clock() - self.renewed_at < renew_deadline

    def release(self) -> None:
        self.renewed_at = None
        record = self.record if self.record is not None else self.read()
        if record is None or record.holder != self.options.identity:
            return
        with suppress(Conflict, NotFound):
            self.kube.replace(self._body("", {}))
        self.record = None


@dataclass
class _Writes:
    """Writes in flight to one cluster; a release waits until there are none."""

    count: int = 0
    idle: threading.Condition = field(default_factory=threading.Condition)

    def begin(self) -> None:
        """One more write in flight (called holding ``idle``)."""
        self.count += 1

    def end(self) -> None:
        """One write fewer in flight (called holding ``idle``); a waiting release is woken."""
        self.count -= 1
        self.idle.notify_all()


@dataclass(frozen=True)
class ShardView:
    """What one round of this replica saw and holds."""

    members: tuple[str, ...]
    assignment: Mapping[str, str]
    held: frozenset[str]
    notes: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    """Each live member's published annotations (``ShardOptions.notes``), by identity."""


class Shards:
    """Membership, assignment and ownership of one replica; ``round()`` is called every
    ``retry_period`` by the agent, ``writing(cluster)`` around every write to a cluster."""

    def __init__(
        self,
        home: KubeApi,
        clusters: Mapping[str, KubeApi],
        options: ShardOptions,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.options = options
        self.clock = clock
        member_name = f"{options.group}-{options.identity}"
        self.member = _Holder(home, (member_name, options.namespace), options, clock, options.notes)
        self._notes: dict[str, Mapping[str, str]] = {}
        self._home = home
        self.owners = {
            name: _Holder(api, (OWNER_LEASE, options.owner_namespace), options, clock)
            for name, api in clusters.items()
        }
        self._writes = {name: _Writes() for name in clusters}
        self._seen: dict[str, tuple[str, float]] = {}
        self._lock = threading.Lock()
        self.view = ShardView((), {}, frozenset())

    # -- membership ------------------------------------------------------------------------------

    def members(self) -> tuple[str, ...]:
        """The replicas whose member Lease changed within its duration, this one included when its
        own Lease is current."""
        listed = self._home.list(
            LEASE_API,
            "Lease",
            namespace=self.options.namespace,
            label_selector=f"{GROUP_LABEL}={self.options.group}",
        ).items
        now = self.clock()
        alive = set()
        notes: dict[str, Mapping[str, str]] = {}
        for lease in listed:
            record = LeaseRecord.from_lease(lease)
            name = str((lease.get("metadata") or {}).get("name", ""))
            if not record.holder:
                continue
            notes[record.holder] = dict((lease.get("metadata") or {}).get("annotations") or {})
            stamp = f"{record.renew_time}/{record.resource_version}"
            seen = self._seen.get(name)
            if seen is None or seen[0] != stamp:
                self._seen[name] = seen = (stamp, now)
            if now - seen[1] < max(record.duration, 1):
                alive.add(record.holder)
        if self.member.valid(self.options.renew_deadline):
            alive.add(self.options.identity)
            notes[self.options.identity] = dict(self.options.notes)
        self._notes = {m: notes.get(m, {}) for m in alive}
        return tuple(sorted(alive))

    # -- one round -------------------------------------------------------------------------------

    def round(self) -> ShardView:
        """Renew this replica's membership, compute the assignment, take, renew or give up owner
        Leases (several clusters at a time). A cluster whose apiserver fails here is simply not held
        this round. When the home cluster does not answer, the members seen last stand and nothing
        is taken over from a replica whose membership only seems to have lapsed."""
        live: frozenset[str] | None
        try:
            self.member.hold({GROUP_LABEL: self.options.group})
            members = self.members()
            live = frozenset(members)
        except KubeError as err:
            log.warning("cannot renew membership or list replicas: %s", err)
            members, live = self.view.members or (self.options.identity,), None
        assignment = assign(self.owners, members, self.options.slack)

        def one(cluster: str) -> bool:
            holder = self.owners[cluster]
            mine = assignment.get(cluster) == self.options.identity
            try:
                if mine:
                    return holder.hold(live=live)
                if holder.renewed_at is not None:
                    self._give_up(cluster)
            except KubeError as err:
                log.warning("owner lease of %s: %s", cluster, err)
            return False

        with ThreadPoolExecutor(max_workers=ROUND_WORKERS) as pool:
            held = {c for c, ok in zip(self.owners, pool.map(one, self.owners), strict=True) if ok}
        held_now = frozenset(c for c in held if self.holds(c))
        self.view = ShardView(members, assignment, held_now, dict(self._notes))
        return self.view

    def _give_up(self, cluster: str) -> None:
        writes = self._writes[cluster]
        holder = self.owners[cluster]
        with writes.idle:
            holder.stop_renewing()
            writes.idle.wait_for(lambda: writes.count == 0, timeout=self.options.lease_duration)
        holder.release()
        log.info("released cluster %s to its new owner", cluster)

    def leave(self) -> None:
        """Give every Lease up at once (on a clean stop), so the others take over without waiting."""
        for cluster, holder in self.owners.items():
            if holder.renewed_at is not None:
                try:
                    self._give_up(cluster)
                except KubeError as err:
                    log.warning("cannot release cluster %s: %s", cluster, err)
        try:
            self.member.release()
        except KubeError as err:
            log.warning("cannot release the member lease: %s", err)

    # -- the fence -------------------------------------------------------------------------------

    def holds(self, cluster: str) -> bool:
        """True while this replica renewed both the cluster's owner Lease and its own membership
        less than ``renew_deadline`` ago. The membership counts too because other replicas take a
        cluster over as soon as its owner's membership has lapsed for ``lease_duration``."""
        holder = self.owners.get(cluster)
        deadline = self.options.renew_deadline
        return holder is not None and holder.valid(deadline) and self.member.valid(deadline)

    def fence(self, cluster: str) -> ClusterFence:
        return ClusterFence(self, cluster)

    @contextmanager
    def writing(self, cluster: str) -> Iterator[None]:
        """Around one write to ``cluster``: FencedOut unless this replica holds its owner Lease."""
        writes = self._writes.get(cluster)
        if writes is None:
            raise FencedOut(f"not writing to {cluster}: {self.options.identity} has no owner lease for it")
        with writes.idle:
            self.fence(cluster).check()
            writes.begin()
        try:
            yield
        finally:
            with writes.idle:
                writes.end()


class ClusterFence:
    """The ``Fence`` of one cluster for one replica: see the module docstring."""

    def __init__(self, shards: Shards, cluster: str) -> None:
        self._shards = shards
        self.cluster = cluster

    @property
    def token(self) -> int:
        holder = self._shards.owners.get(self.cluster)
        record = holder.record if holder is not None else None
        return record.transitions + 1 if record is not None else 0

    @property
    def lease(self) -> str:
        """The owner Lease, kept in the cluster itself."""
        return f"{self._shards.options.owner_namespace}/{OWNER_LEASE}"

    def writing(self) -> AbstractContextManager[None]:
        return self._shards.writing(self.cluster)

    def check(self) -> None:
        if not self._shards.holds(self.cluster):
            raise FencedOut(
                f"not writing to {self.cluster}: {self._shards.options.identity} does not hold its "
                "owner lease (another replica owns it, or this one could not renew in time)"
            )
