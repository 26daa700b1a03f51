"""People's acts in the pass's trace: each act a cluster records (``syncer.domain.person_acts``)
that this process had not read before is an event ``syncer.act`` of the span the pass is in when it
reads the clusters' states (the pass's own), with the act's kind, who, the revision and why. Costs
nothing while tracing is off."""

from __future__ import annotations

from collections.abc import Mapping

from syncer.domain.person_acts import PersonAct, acts_of
from syncer.domain.sync_state import ClusterSyncState
from syncer.tracing import current, enabled


class ActsRead:
    """The acts each cluster recorded when last read, so that each is put in one trace only."""

    def __init__(self) -> None:
        self._known: dict[str, frozenset[PersonAct]] = {}

    def record(self, states: Mapping[str, ClusterSyncState]) -> tuple[PersonAct, ...]:
        """Add each act of ``states`` not read before to the current span; the acts added."""
        if not enabled():
            return ()
        added: list[PersonAct] = []
        for name, state in states.items():
            acts = frozenset(acts_of(state))
            added.extend(acts - self._known.get(name, frozenset()))
            self._known[name] = acts
        added.sort(key=lambda a: (a.at, a.cluster, a.kind, a.by))  # in the order they were made
        span = current()
        for act in added:
            span.event("syncer.act", act.attributes())
        return tuple(added)
