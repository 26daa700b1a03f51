"""Writers built without a Lease, for the tests that drive the engine directly: every cluster's
fence is ``NO_LEASE`` (each write may go, token 0), said where the writer is built."""

from __future__ import annotations

from syncer.engine.rollout_model import RolloutHooks
from syncer.leader.fence import NO_LEASE, FenceOf, everywhere

UNFENCED_EVERYWHERE: FenceOf = everywhere(NO_LEASE)
"""The fence of every cluster for a writer that holds no Lease."""

UNFENCED_HOOKS = RolloutHooks(fences=UNFENCED_EVERYWHERE)
"""What an unfenced rollout asks outside itself: nothing but its fences (every other hook's default)."""
