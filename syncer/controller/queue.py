"""A work queue of object keys: per-key de-duplication and rate-limited exponential backoff.

A key is handed to at most one worker at a time; adding a key that is waiting does nothing, adding
one that is being processed queues it once more for after ``done``. Failed keys come back after a
delay that doubles with each failure up to a ceiling, and so do keys whose object is not Ready yet,
up to the interval they asked for. Thread-safe; time comes from an injectable clock.
"""

from __future__ import annotations

import heapq
import itertools
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class QueueOptions:
    base_delay: float = 0.05
    max_delay: float = 60.0


class WorkQueue:
    def __init__(self, options: QueueOptions = QueueOptions(), clock: Callable[[], float] = time.monotonic):
        self._options = options
        self._clock = clock
        self._cond = threading.Condition()
        self._queue: deque[str] = deque()
        self._dirty: set[str] = set()
        self._processing: set[str] = set()
        self._waiting: list[tuple[float, int, str]] = []
        self._due: dict[str, float] = {}
        self._failures: dict[str, int] = {}
        self._seq = itertools.count()
        self._shut = False

    def __len__(self) -> int:
        with self._cond:
            return len(self._queue)

    def add(self, key: str) -> None:
        with self._cond:
            self._add(key)

    def _add(self, key: str) -> None:
        if self._shut or key in self._dirty:
            return
        self._dirty.add(key)
        if key not in self._processing:
            self._queue.append(key)
            self._cond.notify()

    def add_after(self, key: str, delay: float) -> None:
        """Add ``key`` once ``delay`` seconds have passed; the earliest of several asks wins."""
        if delay <= 0:
            self.add(key)
            return
        with self._cond:
            if self._shut:
                return
            due = self._clock() + delay
            if key in self._due and self._due[key] <= due:
                return
            self._due[key] = due
            heapq.heappush(self._waiting, (due, next(self._seq), key))
            self._cond.notify()

    def backoff(self, key: str) -> float:
        """The delay the next failure of ``key`` would get."""
        with self._cond:
            failures = self._failures.get(key, 0)
        return float(min(self._options.base_delay * (2.0**failures), self._options.max_delay))

    def add_rate_limited(self, key: str) -> float:
        """Add ``key`` after its backoff, and double the backoff for its next failure."""
        delay = self.backoff(key)
        with self._cond:
            self._failures[key] = self._failures.get(key, 0) + 1
        self.add_after(key, delay)
        return delay

    def add_backing_off(self, key: str, ceiling: float) -> float:
        """Add ``key`` after its backoff capped at ``ceiling``, and double the backoff: how a key
        whose object is not there yet (not Ready) is looked at again soon, then less and less often."""
        delay = min(self.backoff(key), ceiling)
        with self._cond:
            self._failures[key] = self._failures.get(key, 0) + 1
        self.add_after(key, delay)
        return delay

    def forget(self, key: str) -> None:
        """``key`` succeeded: its next failure starts from the base delay."""
        with self._cond:
            self._failures.pop(key, None)

    def failures(self, key: str) -> int:
        with self._cond:
            return self._failures.get(key, 0)

    def _promote(self) -> float | None:
        """Move keys whose delay passed into the queue; seconds until the next one is due."""
        now = self._clock()
        while self._waiting:
            due, _, key = self._waiting[0]
            if self._due.get(key) != due:
                heapq.heappop(self._waiting)  # superseded by an earlier ask
                continue
            if due > now:
                return due - now
            heapq.heappop(self._waiting)
            del self._due[key]
            self._add(key)
        return None

    def get(self, timeout: float | None = None) -> str | None:
        """The next key to work on, or None when ``timeout`` passes or the queue is shut down."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            while True:
                next_due = self._promote()
                if self._queue:
                    key = self._queue.popleft()
                    self._processing.add(key)
                    self._dirty.discard(key)
                    return key
                if self._shut:
                    return None
                wait = next_due
                if deadline is not None:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        return None
                    wait = left if wait is None else min(wait, left)
                self._cond.wait(wait)

    def done(self, key: str) -> None:
        """A worker finished ``key``; if it was added meanwhile, it goes back in the queue."""
        with self._cond:
            self._processing.discard(key)
            if key in self._dirty:
                self._queue.append(key)
                self._cond.notify()

    def shutdown(self) -> None:
        with self._cond:
            self._shut = True
            self._cond.notify_all()
