"""Running work only while a fence someone else keeps is open: the agent's embedded controllers
follow the agent's own leadership this way (the leader Lease, or a sharded replica's owner Lease of
one cluster), instead of electing a leader of their own.

``follow`` starts ``work(halt)`` once ``fence.check()`` passes, and sets ``halt`` as soon as a check
(every ``period`` seconds) fails or ``stop`` is set; once the work has returned it waits for the fence
to open again. It only saves a deposed writer from working for nothing: what keeps such a writer from
writing is the fence itself, passed right before each of its writes (``syncer.leader.fence``), which
closes ``duration - renew_deadline`` before another holder may take the Lease over, whatever this
loop has seen yet.

Must not: know what the work does.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from syncer.errors import FencedOut
from syncer.leader.fence import Fence

log = logging.getLogger(__name__)


def is_open(fence: Fence) -> bool:
    """Whether a write may go out through ``fence`` now."""
    try:
        fence.check()
    except FencedOut:
        return False
    return True


def follow(
    fence: Fence,
    stop: threading.Event,
    work: Callable[[threading.Event], None],
    period: float,
    name: str = "",
) -> int:
    """Run ``work(halt)`` each time ``fence`` opens, until ``stop`` (see the module docstring); returns
    how many times it ran."""
    terms = 0
    while not stop.is_set():
        if not is_open(fence):
            stop.wait(period)
            continue
        terms += 1
        halt = threading.Event()
        worker = threading.Thread(target=work, args=(halt,), name=f"follow-{name}", daemon=True)
        log.info("the fence of %s is open: starting", name or "the work", extra={"detail": fence.lease})
        worker.start()
        try:
            while worker.is_alive() and not stop.wait(period) and is_open(fence):
                pass
        finally:
            halt.set()
            worker.join()
        if not stop.is_set():
            log.info("stopped %s until its fence opens again", name or "the work")
            stop.wait(period)  # a work that ended at once is not started again in a tight loop
    return terms
