"""Why clusters may not be changed now: a person's suspension or pin first, then maintenance windows.
[pure]

``hold_of`` is the one judgement of one cluster, asked by every writer (through the engine's
``held_now``) and by ``syncer diff``, so that the diff says what the sync will hold.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum

from syncer.config.windows import MaintenanceWindow
from syncer.domain.progress import Waiting
from syncer.domain.sync_state import ClusterSyncState
from syncer.rollout.pins import pinned_away
from syncer.rollout.window_judge import WindowOverride, judge_cluster


class HoldKind(StrEnum):
    """What keeps a cluster from changing now."""

    SUSPENDED = "suspended"
    PINNED = "pinned"
    WINDOW = "window"


@dataclass(frozen=True)
class Hold:
    """One cluster held: by what (``kind``) and why, in words."""

    cluster: str
    kind: HoldKind
    why: str


def person_hold(state: ClusterSyncState, revision: str) -> Hold | None:
    """A person's hold on ``state``'s cluster for ``revision``: a suspension (whatever the revision),
    or a pin to another revision."""
    if state.suspension.active:
        return Hold(state.cluster, HoldKind.SUSPENDED, state.suspension.describe())
    if pinned_away(state, revision):
        return Hold(state.cluster, HoldKind.PINNED, state.pin.describe())
    return None


def hold_of(
    state: ClusterSyncState,
    revision: str,
    labels: Mapping[str, str],
    windows: Sequence[MaintenanceWindow],
    now: float,
) -> Hold | None:
    """Whether ``state``'s cluster (with ``labels``) may not take ``revision`` at ``now``: a person's
    hold first, then its maintenance windows (with the override its state records)."""
    held = person_hold(state, revision)
    if held is not None or not windows:
        return held
    override = WindowOverride(state.window_override, state.window_override_until)
    verdict = judge_cluster(state.cluster, labels, windows, now, override)
    return None if verdict.open else Hold(state.cluster, HoldKind.WINDOW, verdict.reason)


@dataclass(frozen=True)
class Held:
    """The clusters that may not be changed now, each as ``cluster: why``: ``suspended`` by a person
    (``syncer suspend``), ``pinned`` by a person to another revision (``syncer rollback``),
    ``closed`` outside their maintenance window. False when none is held."""

    suspended: tuple[str, ...] = ()
    closed: tuple[str, ...] = ()
    pinned: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.suspended or self.closed or self.pinned)

    @property
    def reason(self) -> str:
        parts = []
        if self.suspended:
            parts.append("suspended: " + "; ".join(self.suspended))
        if self.pinned:
            parts.append("pinned: " + "; ".join(self.pinned))
        if self.closed:
            parts.append("outside maintenance window: " + "; ".join(self.closed))
        return "; ".join(parts)

    @property
    def waiting(self) -> Waiting:
        """What a wait for these clusters waits for: a person's resume, or a window."""
        return Waiting.SUSPENDED if self.suspended or self.pinned else Waiting.WINDOW
