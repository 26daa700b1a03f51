"""Kubernetes Events (events.k8s.io/v1) that say what syncer did, where kubectl users look for it.

The one Event writer of syncer: the agent's reports (``syncer.status.report``) and the RedisCluster
controller (``syncer.controller.events``) both write through it. It sits beside the client, as
client-go's ``tools/record`` does, because both of its users are layers that may not import each
other.

An event that cannot be written is dropped and counted: telling the story must never stop the sync.
An event repeated every poll is one Event with a growing ``series.count``, not a new Event each time.
"""

from __future__ import annotations

import datetime as dt
import socket
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from syncer.errors import SyncerError
from syncer.kube import KubeApi

NOTE_LIMIT = 1024


@dataclass(frozen=True)
class Regarding:
    """The object an event is about."""

    api_version: str
    kind: str
    name: str
    namespace: str = ""
    uid: str = ""

    @staticmethod
    def of(obj: Mapping[str, Any]) -> Regarding:
        meta = obj.get("metadata") or {}
        return Regarding(
            str(obj.get("apiVersion", "")),
            str(obj.get("kind", "")),
            str(meta.get("name", "")),
            str(meta.get("namespace", "")),
            str(meta.get("uid", "")),
        )


def _micro_time(now: dt.datetime) -> str:
    return now.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def event_body(
    regarding: Regarding, reason: str, note: str, *, warning: bool, controller: str, instance: str
) -> dict[str, Any]:
    """An events.k8s.io/v1 Event in the namespace of the object it is about."""
    target = {"apiVersion": regarding.api_version, "kind": regarding.kind, "name": regarding.name}
    if regarding.namespace:
        target["namespace"] = regarding.namespace
    if regarding.uid:
        target["uid"] = regarding.uid
    return {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {
            "generateName": f"{regarding.name or 'syncer'}-",
            "namespace": regarding.namespace or "default",
        },
        "eventTime": _micro_time(dt.datetime.now(dt.UTC)),
        "reportingController": controller,
        "reportingInstance": instance,
        "action": "Sync",
        "reason": reason,
        "note": note[:NOTE_LIMIT],
        "type": "Warning" if warning else "Normal",
        "regarding": target,
    }


@dataclass(frozen=True)
class SeriesOptions:
    """How repeats of one event are folded into one Event object, like Kubernetes' own recorder.

    An event identical to one recorded before (same object, reason, type, action and note) is not
    written again: it raises the first Event's ``series.count``. The second occurrence is written at
    once (the Event shows it repeats); later ones at most every ``heartbeat`` seconds. A series not
    seen for ``finish_after`` seconds is over: the next occurrence starts a new Event. At most
    ``max_series`` series are remembered (the oldest is forgotten first).
    """

    heartbeat: float = 300.0
    finish_after: float = 360.0
    max_series: int = 1024


@dataclass
class _Series:
    event: dict[str, Any]
    count: int
    last_seen: float
    last_written: float
    written_count: int


SeriesKey = tuple[str, ...]


def series_key(body: Mapping[str, Any]) -> SeriesKey:
    target = body.get("regarding") or {}
    return (
        str(target.get("namespace", "")),
        str(target.get("kind", "")),
        str(target.get("name", "")),
        str(target.get("uid", "")),
        str(body.get("reason", "")),
        str(body.get("type", "")),
        str(body.get("action", "")),
        str(body.get("note", "")),
    )


class EventRecorder:
    """Writes events through the KubeApi seam, folding repeats into series; ``dropped`` counts those
    the apiserver refused, ``written`` the creates and updates sent."""

    def __init__(
        self,
        kube: KubeApi,
        controller: str = "syncer.dev/agent",
        instance: str = "",
        series: SeriesOptions = SeriesOptions(),
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.kube = kube
        self.controller = controller
        self.instance = instance or socket.gethostname()
        self.options = series
        self.clock = clock
        self.dropped = 0
        self.written = 0
        self._series: OrderedDict[SeriesKey, _Series] = OrderedDict()
        self._lock = threading.Lock()

    def emit(self, regarding: Regarding, reason: str, note: str, *, warning: bool = False) -> bool:
        """Record one occurrence; False when the apiserver refused what had to be written."""
        body = event_body(
            regarding, reason, note, warning=warning, controller=self.controller, instance=self.instance
        )
        key = series_key(body)
        now = self.clock()
        with self._lock:
            known = self._series.get(key)
            if known is not None and now - known.last_seen <= self.options.finish_after:
                known.count += 1
                known.last_seen = now
                self._series.move_to_end(key)
                due = known.written_count == 1 or now - known.last_written >= self.options.heartbeat
                if not due or self._write_series(key, known):
                    return True
            elif known is not None and known.count != known.written_count:
                self._write_series(key, known)  # the finished series ends with its true count
            return self._create(key, body, now)

    def flush(self) -> None:
        """Write every series with occurrences not yet written (e.g. before the process exits)."""
        with self._lock:
            for key, known in list(self._series.items()):
                if known.count != known.written_count:
                    self._write_series(key, known)

    def _create(self, key: SeriesKey, body: dict[str, Any], now: float) -> bool:
        self._series.pop(key, None)
        try:
            created = self.kube.create(body)
        except SyncerError:  # refused, unreachable, or this replica may no longer write
            self.dropped += 1
            return False
        self.written += 1
        self._series[key] = _Series(created, 1, now, now, 1)
        while len(self._series) > self.options.max_series:
            self._series.popitem(last=False)
        return True

    def _write_series(self, key: SeriesKey, known: _Series) -> bool:
        event = dict(known.event)
        event["series"] = {
            "count": known.count,
            "lastObservedTime": _micro_time(dt.datetime.now(dt.UTC)),
        }
        try:
            known.event = self.kube.replace(event)
        except SyncerError:  # refused, unreachable, or this replica may no longer write
            # Expired (Events live an hour by default) or changed by someone else: start afresh.
            self.dropped += 1
            del self._series[key]
            return False
        self.written += 1
        known.last_written, known.written_count = known.last_seen, known.count
        return True
