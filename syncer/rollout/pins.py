"""Pins: which clusters a person keeps on a revision (``syncer rollback``), and which revisions a
cluster may be pinned to (one its own history holds as verified and applied there). [pure]"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from syncer.domain.objects import DesiredFleet
from syncer.domain.revision_history import HistoryEntry, Outcome
from syncer.domain.sync_state import ClusterSyncState
from syncer.errors import RollbackRefused
from syncer.rollout.revision_names import matches, resolve, well_formed

LANDED = frozenset({Outcome.APPLIED, Outcome.HEALTHY, Outcome.ROLLED_BACK})
"""Outcomes that say a revision was verified and applied on the cluster."""


def pinned_away(state: ClusterSyncState, revision: str) -> bool:
    """Whether a person pinned the cluster to a revision other than ``revision``: it may not take it."""
    return state.pin.active and state.pin.revision != revision


def pins_away(states: Mapping[str, ClusterSyncState], revision: str) -> dict[str, str]:
    """The clusters pinned to another revision than ``revision``, each with its pinned revision."""
    return {name: s.pin.revision for name, s in sorted(states.items()) if pinned_away(s, revision)}


def restricted(fleet: DesiredFleet, names: Iterable[str]) -> DesiredFleet:
    """``fleet`` with only the clusters ``names`` (those it has)."""
    kept = set(names)
    return DesiredFleet(fleet.revision, {n: c for n, c in fleet.clusters.items() if n in kept})


def rollback_target(cluster: str, history: tuple[HistoryEntry, ...], wanted: str) -> str:
    """The full revision ``wanted`` names (``syncer.rollout.revision_names``) among those
    ``cluster``'s history holds as verified and applied there; ``RevisionNotNamed`` for a name too
    short or ambiguous, RollbackRefused naming what the history holds otherwise."""
    landed = [e for e in history if e.outcome in LANDED]
    if not well_formed(wanted) or any(matches(wanted, e.revision) for e in landed):
        return resolve(wanted, (e.revision for e in landed), f"{cluster}: its history holds")
    held = list(dict.fromkeys(f"{e.revision[:12]} ({e.outcome})" for e in reversed(landed)))
    holds = ", ".join(held) if held else "none"
    others = sorted({f"{e.revision[:12]} ({e.outcome})" for e in history if matches(wanted, e.revision)})
    seen = f"; it was only {', '.join(others)} there" if others else ""
    raise RollbackRefused(
        f"{cluster}: {wanted} was never verified and applied there{seen}; its history holds, newest "
        f"first: {holds}"
    )
