from __future__ import annotations

from syncer.kube.throttle import RateLimiter


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_the_burst_is_free_then_requests_are_spaced_by_the_rate() -> None:
    clock = Clock()
    limiter = RateLimiter(qps=10, burst=3, clock=clock)
    assert [limiter.reserve() for _ in range(3)] == [0.0, 0.0, 0.0]
    assert limiter.reserve() == 0.1
    clock.now += 1.0
    assert limiter.reserve() == 0.0


def test_a_zero_rate_means_no_limit() -> None:
    limiter = RateLimiter(qps=0, burst=1, clock=Clock())
    assert all(limiter.reserve() == 0.0 for _ in range(1000))
