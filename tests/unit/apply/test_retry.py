"""Retry decisions. The failures are raised by a scripted callable: a real apiserver cannot be made to
answer 429 or 503 on demand, so this is the one place these faults are produced by hand."""

from __future__ import annotations

import threading

import pytest

from syncer.apply import RetryPolicy, with_retries
from syncer.apply.executor import apply_order
from syncer.domain import ObjectKey
from syncer.errors import Forbidden, Invalid, ServerError, TooManyRequests


class Script:
    def __init__(self, *outcomes: Exception | str) -> None:
        self.outcomes = list(outcomes)
        self.calls = 0

    def __call__(self) -> str:
        self.calls += 1
        outcome = self.outcomes.pop(0)
        if isinstance(outcome, Exception):
            raise outcome
        return outcome


def test_throttling_is_retried_after_the_servers_hint() -> None:
    waits: list[float] = []
    script = Script(TooManyRequests("slow down", retry_after=3), "ok")
    assert with_retries(script, RetryPolicy(), sleep=waits.append) == "ok"
    assert waits == [3]


def test_server_errors_back_off_exponentially_then_give_up() -> None:
    waits: list[float] = []
    script = Script(*[ServerError("down")] * 4)
    with pytest.raises(ServerError):
        with_retries(script, RetryPolicy(attempts=4, base_delay=1, max_delay=3), sleep=waits.append)
    assert script.calls == 4
    assert len(waits) == 3
    assert 0.5 <= waits[0] <= 1
    assert 1 <= waits[1] <= 2
    assert 1.5 <= waits[2] <= 3


@pytest.mark.parametrize("error", [Invalid("bad"), Forbidden("no")])
def test_final_errors_are_never_retried(error: Exception) -> None:
    script = Script(error, "ok")
    with pytest.raises(type(error)):
        with_retries(script, RetryPolicy(), sleep=lambda _: None)
    assert script.calls == 1


def test_a_stop_request_ends_the_wait() -> None:
    stop = threading.Event()
    stop.set()
    script = Script(ServerError("down"), "ok")
    with pytest.raises(ServerError):
        with_retries(script, RetryPolicy(base_delay=60), stop=stop)
    assert script.calls == 1


def test_namespaces_and_crds_go_first() -> None:
    keys = [
        ObjectKey("c", "redis.syncer.dev", "RedisCluster", "a", "x"),
        ObjectKey("c", "apiextensions.k8s.io", "CustomResourceDefinition", "", "y"),
        ObjectKey("c", "", "Namespace", "", "a"),
    ]
    assert [k.kind for k in sorted(keys, key=apply_order)] == [
        "Namespace",
        "CustomResourceDefinition",
        "RedisCluster",
    ]
