"""Folding duplicates: a notice equal to one sent to the same receiver less than the fold window ago
(same ``Notice.fold_key``) is folded into it instead of sent again. Pure: the clock is given."""

from __future__ import annotations

from collections.abc import Hashable


class Folder:
    """When each (receiver, notice key) was last let through."""

    def __init__(self, window: float) -> None:
        self.window = window
        self._sent: dict[tuple[str, Hashable], float] = {}

    def admit(self, receiver: str, key: Hashable, now: float) -> bool:
        """True (and remembered) when the notice goes out; False when it folds into one sent within
        the window."""
        if len(self._sent) > 1024:
            self._sent = {k: t for k, t in self._sent.items() if now - t < self.window}
        last = self._sent.get((receiver, key))
        if last is not None and now - last < self.window:
            return False
        self._sent[(receiver, key)] = now
        return True
