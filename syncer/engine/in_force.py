"""The fleet's one revision in force, for replicas that split a fleet (``syncer.agent.sharding``).

Each replica polls git, so two replicas can hold two revisions for a moment; rolled out as they are,
each would wait at a wave for clusters the other owns to record its own revision. Before a pass rolls
anything out it settles which revision is in force:

- every live replica must run the same rollout policy (each publishes its fingerprint on its member
  Lease): while they differ, no revision is rolled out, and the reason names the replicas;
- the revision recorded in force (``syncer.status.revision_record``) moves only forward: a replica
  whose verified tip descends from it records its tip (one write wins a change); a record naming a
  commit the repository does not hold is evidence of nothing and is replaced the same way;
- a replica whose revision is older than the one in force takes the newer one from git first, and
  waits, saying so, while it cannot; revisions on different lines of history wait too.

Must not: write to clusters, or decide anything about waves.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from syncer.config.rollout import RolloutPolicy
from syncer.engine.revision import PreparedRevision
from syncer.errors import KubeError
from syncer.status.revision_record import RevisionRecord

POLICY_NOTE = "syncer.dev/rollout-policy"
"""The member Lease annotation that carries a replica's rollout policy fingerprint."""

_FOLLOW_ROUNDS = 3


def policy_fingerprint(policy: RolloutPolicy) -> str:
    """A short fingerprint of a rollout policy: replicas with equal ones roll out alike."""
    return hashlib.sha256(repr(policy).encode()).hexdigest()[:16]


@dataclass(frozen=True)
class InForce:
    """How one replica settles the revision in force: the fleet's record, its own policy's
    fingerprint, and the policy fingerprints the live replicas publish (by identity)."""

    record: RevisionRecord
    policy: str
    peers: Callable[[], Mapping[str, str]]

    def settle(
        self,
        current: PreparedRevision,
        descends: Callable[[str, str], bool],
        take_newer: Callable[[], PreparedRevision | None],
        holds: Callable[[str], bool] = lambda _: True,
    ) -> tuple[PreparedRevision, str]:
        """The revision this replica rolls out and, when it must not roll out now, why (else "").
        ``descends(a, b)``: ``a`` is a later commit on ``b``'s line; ``take_newer()`` polls git again
        and returns the revision in force of this replica afterwards; ``holds(r)``: the repository
        holds ``r`` (a record naming a commit it does not hold is replaced, never followed)."""
        differ = sorted(
            f"{name} ({fingerprint})"
            for name, fingerprint in self.peers().items()
            if fingerprint and fingerprint != self.policy
        )
        if differ:
            return current, (
                f"replica(s) {', '.join(differ)} run another rollout policy than this one "
                f"({self.policy}): no revision is rolled out until every replica runs the same"
            )
        for _ in range(_FOLLOW_ROUNDS):
            try:
                seen = self.record.read()
                moves = seen is None or descends(current.revision, seen.revision)
                moves = moves or (seen is not None and not holds(seen.revision))
                if moves:
                    seen = self.record.write(current.revision, self.policy, seen)
            except KubeError as err:
                return current, f"cannot read or record the fleet's revision in force: {err}"
            if seen is None or seen.revision == current.revision:
                return current, ""
            if not descends(seen.revision, current.revision):
                return current, (
                    f"the fleet's revision in force {seen.revision[:12]} (set by {seen.set_by}) and this "
                    f"replica's {current.revision[:12]} are not on one line of history (or this replica "
                    f"has not fetched {seen.revision[:12]} yet): waiting"
                )
            newer = take_newer()
            if newer is None or newer.revision == current.revision:
                return current, (
                    f"the fleet's revision in force is {seen.revision[:12]} (set by {seen.set_by}); this "
                    f"replica has {current.revision[:12]} and has not taken {seen.revision[:12]} yet"
                )
            current = newer
        return current, "the fleet's revision in force keeps moving: settled at the next poll"
