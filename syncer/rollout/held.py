"""Why clusters may not be changed now: a person's suspension or pin first, then maintenance windows.
[pure]"""

from __future__ import annotations

from dataclasses import dataclass

from syncer.domain.progress import Waiting


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
