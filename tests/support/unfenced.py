"""Writers built without a Lease, for the tests that drive the engine directly: every cluster's
fence is ``NO_LEASE`` (each write may go, token 0), said where the writer is built (the hooks of a
rollout, a pass over its clusters' reads)."""

from __future__ import annotations

from collections.abc import Collection

from syncer.domain.progress import Listener
from syncer.engine.cluster_reads import ClusterReads, Connect
from syncer.engine.fleet_pass import FleetPass, PassScope, Revisions
from syncer.engine.rollout_model import RolloutHooks, RolloutOptions
from syncer.leader.fence import NO_LEASE, FenceOf, everywhere

UNFENCED_EVERYWHERE: FenceOf = everywhere(NO_LEASE)
"""The fence of every cluster for a writer that holds no Lease."""

UNFENCED_HOOKS = RolloutHooks(fences=UNFENCED_EVERYWHERE)
"""What an unfenced rollout asks outside itself: nothing but its fences (every other hook's default)."""


def unfenced_pass(
    revisions: Revisions,
    connect: Connect,
    options: RolloutOptions,
    listener: Listener | None = None,
    *,
    known: Collection[str] = (),
    scope: PassScope = PassScope(),
) -> FleetPass:
    """A pass over the clusters ``connect`` opens, writing to them without a Lease; ``known``: the
    clusters whose records join every tip's history check (the agent config's)."""
    reads = ClusterReads(connect, UNFENCED_EVERYWHERE, options, known=known)
    return FleetPass(revisions, reads, options, listener, scope=scope)
