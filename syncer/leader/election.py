"""Lease-based leader election.

Expiry is judged on the local clock from when this process last saw the Lease change, never by
comparing another host's ``renewTime`` with our own clock, so clock skew between hosts does not
matter. Updates carry the resourceVersion read, so two candidates cannot both win one round.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

from syncer.config.settings import LeaseSettings
from syncer.errors import Conflict, KubeError, NotFound
from syncer.kube import KubeApi
from syncer.leader.fence import LeaseFence

log = logging.getLogger(__name__)
LEASE_API = "coordination.k8s.io/v1"


@dataclass(frozen=True)
class LeaseRecord:
    holder: str
    duration: int
    renew_time: str
    acquire_time: str
    transitions: int
    resource_version: str

    @classmethod
    def from_lease(cls, lease: Mapping[str, Any]) -> LeaseRecord:
        spec = lease.get("spec") or {}
        return cls(
            holder=str(spec.get("holderIdentity") or ""),
            duration=int(spec.get("leaseDurationSeconds") or 0),
            renew_time=str(spec.get("renewTime") or ""),
            acquire_time=str(spec.get("acquireTime") or ""),
            transitions=int(spec.get("leaseTransitions") or 0),
            resource_version=str((lease.get("metadata") or {}).get("resourceVersion") or ""),
        )


class LeaseVerdict(StrEnum):
    CREATE = "create"  # no Lease yet
    ACQUIRE = "acquire"  # released or expired: take it over
    RENEW = "renew"  # ours: renew it
    WAIT = "wait"  # someone else holds it


def judge(record: LeaseRecord | None, identity: str, observed_at: float, now: float) -> LeaseVerdict:
    """What a candidate may do with the Lease it just read; ``observed_at`` is when it last changed."""
    if record is None:
        return LeaseVerdict.CREATE
    if record.holder == identity:
        return LeaseVerdict.RENEW
    if not record.holder or now >= observed_at + record.duration:
        return LeaseVerdict.ACQUIRE
    return LeaseVerdict.WAIT


def _micro_time(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class LeaderElector:
    def __init__(
        self,
        kube: KubeApi,
        lease: LeaseSettings,
        identity: str,
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
    ) -> None:
        self._kube = kube
        self.lease = lease
        self.identity = identity
        self._clock = clock
        self._wall = wall
        self._seen: tuple[str, str, str] | None = None
        self._seen_at = 0.0
        self._holding = False
        self._renewed_at = float("-inf")
        self._token = 0

    @property
    def is_leader(self) -> bool:
        return self._holding

    @property
    def token(self) -> int:
        """The fencing token: one more than the Lease's transition count when this replica acquired
        it (so never 0, and higher for every later holder)."""
        return self._token

    @property
    def lease_name(self) -> str:
        """``namespace/name`` of the Lease this elector holds or waits for."""
        return f"{self.lease.namespace}/{self.lease.name}"

    def held_for(self) -> float:
        """Seconds the Lease is surely still ours, by this process's monotonic clock counted from the
        start of its last successful acquire or renewal (no other candidate takes it over sooner);
        0 or less when it may not be."""
        if not self._holding:
            return 0.0
        return self._renewed_at + self.lease.duration - self._clock()

    def fence(self, margin: float) -> LeaseFence:
        """A fence that lets writes out while the Lease is held for ``margin`` more seconds."""
        return LeaseFence(self, margin)

    def _read(self) -> LeaseRecord | None:
        try:
            lease = self._kube.get(LEASE_API, "Lease", self.lease.name, self.lease.namespace)
        except NotFound:
            return None
        record = LeaseRecord.from_lease(lease)
        seen = (record.holder, record.renew_time, record.resource_version)
        if seen != self._seen:
            self._seen, self._seen_at = seen, self._clock()
        return record

    def _body(self, record: LeaseRecord | None, holder: str, duration: int) -> dict[str, Any]:
        now = _micro_time(self._wall())
        keep = record is not None and record.holder == holder and holder != ""
        spec: dict[str, Any] = {
            "holderIdentity": holder,
            "leaseDurationSeconds": duration,
            "renewTime": now,
            "acquireTime": record.acquire_time if keep and record is not None else now,
            # A new holder is a transition; a renewal or a release is not.
            "leaseTransitions": (record.transitions if record else 0)
            + (1 if record and holder and not keep else 0),
        }
        meta: dict[str, Any] = {"name": self.lease.name, "namespace": self.lease.namespace}
        if record is not None:
            meta["resourceVersion"] = record.resource_version
        return {"apiVersion": LEASE_API, "kind": "Lease", "metadata": meta, "spec": spec}

    def try_acquire_or_renew(self) -> bool:
        """One round: True when this identity holds the Lease afterwards."""
        record = self._read()
        started = self._clock()
        verdict = judge(record, self.identity, self._seen_at, started)
        if verdict == LeaseVerdict.WAIT:
            self._holding = False
            return False
        body = self._body(record, self.identity, max(int(self.lease.duration), 1))
        try:
            if verdict == LeaseVerdict.CREATE:
                self._kube.create(body)
            else:
                self._kube.replace(body)
        except Conflict:
            self._holding = False
            return False
        self._renewed_at = started
        self._token = int(body["spec"]["leaseTransitions"]) + 1  # above 0 even for the first holder
        if not self._holding:
            log.info("acquired lease %s/%s as %s", self.lease.namespace, self.lease.name, self.identity)
        self._holding = True
        return True

    def release(self) -> None:
        """Give the Lease up at once so another candidate need not wait for it to expire."""
        if not self._holding:
            return
        self._holding = False
        try:
            record = self._read()
            if record is None or record.holder != self.identity:
                return
            self._kube.replace(self._body(record, "", 1))
        except KubeError as err:  # gone, taken, or its cluster unreachable: it expires by itself
            log.warning("could not release lease %s/%s: %s", self.lease.namespace, self.lease.name, err)
            return
        log.info("released lease %s/%s", self.lease.namespace, self.lease.name)

    def _acquired(self) -> bool:
        """One attempt at the Lease; an apiserver error is a failed attempt, tried again later."""
        try:
            return self.try_acquire_or_renew()
        except KubeError as err:
            log.warning("cannot reach the lease %s/%s: %s", self.lease.namespace, self.lease.name, err)
            return False

    def run(self, stop: threading.Event, lead: Callable[[threading.Event], None]) -> bool:
        """Wait for the Lease, then run ``lead(stop_leading)`` while holding it; False if never led."""
        while not self._acquired():
            if stop.wait(self.lease.retry_period):
                return False
        stop_leading = threading.Event()
        worker = threading.Thread(target=lead, args=(stop_leading,), name="leader-work", daemon=True)
        worker.start()
        renewed = self._clock()
        try:
            while worker.is_alive() and not stop.wait(self.lease.retry_period):
                try:
                    ok = self.try_acquire_or_renew()
                except Exception as err:  # a failed renewal round is retried until the deadline
                    log.warning("lease renewal failed: %s", err)
                    ok = False
                if ok:
                    renewed = self._clock()
                elif self._clock() - renewed > self.lease.renew_deadline:
                    log.error("lost lease %s/%s", self.lease.namespace, self.lease.name)
                    break
        finally:
            stop_leading.set()
            worker.join()
            self.release()
        return True
