"""How far a slot migration has come, told as a status while it runs.

Owns: turning (slots moved, slots to move) into a ``SlotsMigrating`` verdict and handing it to the
writer it was given, at the start, at the end and at most once per ``every`` seconds between.
Must not: move slots or talk to Kubernetes itself.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from syncer.controller.status import TopologyVerdict

SLOTS_MIGRATING = "SlotsMigrating"


class MigrationProgress:
    """``tell`` is the converging pass's progress callback; ``write`` writes the status."""

    def __init__(
        self,
        write: Callable[[TopologyVerdict], None],
        every: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._write = write
        self._every = every
        self._clock = clock
        self._last: float | None = None

    def tell(self, done: int, total: int) -> None:
        now = self._clock()
        if done not in (0, total) and self._last is not None and now - self._last < self._every:
            return
        self._last = now
        self._write(verdict(done, total))


def verdict(done: int, total: int) -> TopologyVerdict:
    """What a status says while slots move."""
    return TopologyVerdict(False, f"migrating slots: {done}/{total} moved", SLOTS_MIGRATING)
