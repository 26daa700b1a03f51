"""Client-side limits per cluster: a token bucket for QPS with a burst, and a bound on concurrency."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager


class RateLimiter:
    """Token bucket: ``qps`` tokens a second, up to ``burst`` saved; ``qps <= 0`` means unlimited."""

    def __init__(
        self,
        qps: float,
        burst: int,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.qps = qps
        self.burst = max(1, burst)
        self._tokens = float(self.burst)
        self._clock = clock
        self._sleep = sleep
        self._last = clock()
        self._lock = threading.Lock()

    def reserve(self) -> float:
        """Take one token; return how long the caller must wait before using it."""
        if self.qps <= 0:
            return 0.0
        with self._lock:
            now = self._clock()
            self._tokens = min(float(self.burst), self._tokens + (now - self._last) * self.qps)
            self._last = now
            self._tokens -= 1.0
            return 0.0 if self._tokens >= 0 else -self._tokens / self.qps

    def acquire(self) -> None:
        wait = self.reserve()
        if wait > 0:
            self._sleep(wait)


class Limits:
    """Both limits of one cluster's client."""

    def __init__(self, qps: float, burst: int, max_in_flight: int) -> None:
        self.rate = RateLimiter(qps, burst)
        self._slots = threading.BoundedSemaphore(max(1, max_in_flight))

    @contextmanager
    def slot(self) -> Iterator[None]:
        with self._slots:
            self.rate.acquire()
            yield
