"""Retrying API calls that may succeed later: throttling (429, honouring Retry-After), server errors and
broken connections. Validation, permission and conflict errors are final and never retried."""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from syncer.errors import ServerError, TooManyRequests

T = TypeVar("T")


@dataclass(frozen=True)
class RetryPolicy:
    """Up to ``attempts`` tries; waits grow from ``base_delay`` doubling up to ``max_delay`` (with
    jitter), or follow the server's Retry-After when it gives one."""

    attempts: int = 5
    base_delay: float = 0.5
    max_delay: float = 30.0


def delay_for(error: Exception, attempt: int, policy: RetryPolicy, rng: random.Random) -> float:
    """Seconds to wait after failed ``attempt`` (1-based)."""
    if isinstance(error, TooManyRequests) and error.retry_after > 0:
        return min(error.retry_after, policy.max_delay)
    backoff = min(policy.max_delay, policy.base_delay * 2 ** (attempt - 1))
    return float(backoff / 2 + rng.uniform(0, backoff / 2))


def with_retries(
    call: Callable[[], T],
    policy: RetryPolicy,
    stop: threading.Event | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> T:
    """``call()``, retried on TooManyRequests and ServerError; the last error is raised when the attempts
    are used up or ``stop`` is set while waiting."""
    rng = random.Random()
    for attempt in range(1, policy.attempts + 1):
        try:
            return call()
        except (TooManyRequests, ServerError) as err:
            if attempt == policy.attempts or (stop is not None and stop.is_set()):
                raise
            wait = delay_for(err, attempt, policy, rng)
            if stop is not None:
                if stop.wait(wait):
                    raise
            else:
                sleep(wait)
    raise AssertionError("unreachable: the loop returns or raises")
