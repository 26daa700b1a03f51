from __future__ import annotations

import threading

from syncer.controller.queue import QueueOptions, WorkQueue


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_keys_are_deduplicated_while_waiting() -> None:
    queue = WorkQueue()
    for key in ("a/x", "a/y", "a/x", "a/x"):
        queue.add(key)
    assert len(queue) == 2
    assert queue.get(0) == "a/x"
    assert queue.get(0) == "a/y"
    assert queue.get(0) is None


def test_a_key_added_while_processing_comes_back_once_after_done() -> None:
    queue = WorkQueue()
    queue.add("k")
    assert queue.get(0) == "k"
    queue.add("k")
    queue.add("k")
    assert queue.get(0) is None  # never handed to two workers at once
    queue.done("k")
    assert queue.get(0) == "k"
    queue.done("k")
    assert queue.get(0) is None


def test_failures_back_off_exponentially_up_to_a_ceiling_and_reset_on_forget() -> None:
    clock = FakeClock()
    queue = WorkQueue(QueueOptions(base_delay=0.5, max_delay=3.0), clock=clock)
    delays = [queue.add_rate_limited("k") for _ in range(5)]
    assert delays == [0.5, 1.0, 2.0, 3.0, 3.0]
    assert queue.failures("k") == 5
    queue.forget("k")
    assert queue.backoff("k") == 0.5


def test_delayed_keys_wait_for_the_clock_and_the_earliest_ask_wins() -> None:
    clock = FakeClock()
    queue = WorkQueue(clock=clock)
    queue.add_after("late", 10.0)
    queue.add_after("soon", 5.0)
    queue.add_after("soon", 8.0)  # a later ask does not push an earlier one back
    assert queue.get(0) is None
    clock.now += 5.0
    assert queue.get(0) == "soon"
    assert queue.get(0) is None
    clock.now += 5.0
    assert queue.get(0) == "late"


def test_shutdown_wakes_a_blocked_worker() -> None:
    queue = WorkQueue()
    got: list[str | None] = []
    worker = threading.Thread(target=lambda: got.append(queue.get()))
    worker.start()
    queue.shutdown()
    worker.join(5)
    assert not worker.is_alive()
    assert got == [None]
    queue.add("ignored")
    assert len(queue) == 0


def test_many_threads_never_hold_the_same_key() -> None:
    queue = WorkQueue()
    holding: set[str] = set()
    clashes: list[str] = []
    lock = threading.Lock()

    def work() -> None:
        while (key := queue.get(0.2)) is not None:
            with lock:
                if key in holding:
                    clashes.append(key)
                holding.add(key)
            queue.add(key)  # an event for the key while it is being processed
            with lock:
                holding.discard(key)
            queue.done(key)

    for i in range(20):
        queue.add(f"k{i % 5}")
    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    threading.Event().wait(0.3)
    queue.shutdown()
    for t in threads:
        t.join(5)
    assert not clashes
