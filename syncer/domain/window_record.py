"""The reason a cluster records for waiting for its maintenance window, and how fresh it is. [pure]

An agent's pass judges each cluster's windows and records the reason a change waits (``window``)
with the time it judged it (``window_at``); while the reason stands it writes it again at least
every ``refresh`` seconds. A reason no agent confirmed for ``stale_after`` seconds is stale: the
agents that judged it stopped or run without windows now, and ``syncer status`` says so instead of
showing it as in force. Defaults: ``syncer.config.settings`` (``WINDOW_RECORD_REFRESH``,
``WINDOW_STALE_AFTER``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from syncer.domain.sync_state import ClusterSyncState


def record_due(state: ClusterSyncState, reason: str, now: float, refresh: float) -> bool:
    """Whether a pass that judged ``reason`` at ``now`` writes it: it changed, or it stands and was
    last confirmed ``refresh`` seconds ago or more (or at an unknown time)."""
    if state.window != reason:
        return True
    return bool(reason) and now - state.window_at >= refresh


@dataclass(frozen=True)
class WindowShown:
    """A recorded window reason as shown: ``text``, and whether it is ``stale`` (then ``text`` says
    since when no agent confirmed it, not the reason)."""

    text: str = ""
    stale: bool = False
    reason: str = ""


def shown(state: ClusterSyncState, now: float, stale_after: float) -> WindowShown:
    """The cluster's recorded window reason at ``now``: as recorded while an agent confirmed it
    within ``stale_after`` seconds, else stale."""
    if not state.window:
        return WindowShown()
    age = now - state.window_at
    if state.window_at and age < stale_after:
        return WindowShown(state.window, reason=state.window)
    since = "an unknown time"
    if state.window_at:
        since = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(state.window_at))
    text = f"stale window record (no agent confirmed it since {since}): {state.window}"
    return WindowShown(text, stale=True, reason=state.window)
