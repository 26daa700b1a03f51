"""The one way tests wait for something: poll until the probe answers, with a deadline."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def eventually(what: str, probe: Callable[[], T], timeout: float, every: float = 0.2) -> T:
    """Call ``probe`` every ``every`` seconds until it returns something true, and return that; an
    AssertionError naming ``what`` and the last answer after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        found = probe()
        if found:
            return found
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g}s waiting for {what}; last: {found!r}")
        time.sleep(every)
