"""Which replica owns which cluster: rendezvous hashing with bounded load. Pure.

Every replica computes the same assignment from the same inputs (the live replicas and the fleet's
clusters), so no replica has to tell another anything. Each cluster ranks the replicas by a hash of
(cluster, replica) and goes to the highest-ranked one that still has room; a replica takes at most
``ceil(clusters / replicas * (1 + slack))`` clusters. Without the bound, rendezvous hashing moves only
the clusters of a replica that left (or the share a new one takes); the bound keeps the load even at
the price of a few more moves, which the tests count.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterable, Mapping

DEFAULT_SLACK = 0.1


def _score(cluster: str, replica: str) -> int:
    digest = hashlib.sha256(f"{cluster}\x00{replica}".encode()).digest()
    return int.from_bytes(digest[:8], "big")


def _order(cluster: str) -> str:
    return hashlib.sha256(cluster.encode()).hexdigest()


def capacity(clusters: int, replicas: int, slack: float = DEFAULT_SLACK) -> int:
    """The most clusters one replica takes."""
    if replicas <= 0:
        return 0
    return max(1, math.ceil(clusters / replicas * (1.0 + slack)))


def assign(clusters: Iterable[str], replicas: Iterable[str], slack: float = DEFAULT_SLACK) -> dict[str, str]:
    """cluster -> replica for every cluster; empty when there is no replica.

    Clusters are placed in a fixed order (by a hash of their name, so the order does not depend on
    how they were listed), each with the best-scoring replica that is below its capacity."""
    members = sorted(set(replicas))
    names = sorted(set(clusters), key=_order)
    if not members:
        return {}
    room = dict.fromkeys(members, capacity(len(names), len(members), slack))
    placed: dict[str, str] = {}
    for cluster in names:
        for replica in sorted(members, key=lambda r: _score(cluster, r), reverse=True):
            if room[replica] > 0:
                room[replica] -= 1
                placed[cluster] = replica
                break
    return placed


def owned_by(assignment: Mapping[str, str], replica: str) -> frozenset[str]:
    return frozenset(c for c, r in assignment.items() if r == replica)


def moved(before: Mapping[str, str], after: Mapping[str, str]) -> frozenset[str]:
    """The clusters whose owner differs between two assignments (present in both)."""
    return frozenset(c for c in before.keys() & after.keys() if before[c] != after[c])
