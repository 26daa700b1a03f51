"""The one way a recorded moment (a person's act, a record found) is written for people. [pure]"""

from __future__ import annotations

import time


def moment_of(at: float) -> str:
    """``2026-12-03 10:00 UTC`` for the epoch seconds ``at``; ``an unknown time`` when none was recorded."""
    return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(at)) if at else "an unknown time"
