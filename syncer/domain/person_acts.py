"""The acts of people a cluster's sync state records, each as one ``PersonAct``: ``syncer promote``
(one per person), ``abort``, ``retry``, ``rollback`` (a pin), ``suspend`` and ``resume``, with who,
the revision (and wave) they name, why and when. Read by the pass for its trace
(``syncer.engine.acts_read``); deciding what an act does is the rollout's, not this module's."""

from __future__ import annotations

from dataclasses import dataclass

from syncer.domain.sync_state import ClusterSyncState


@dataclass(frozen=True)
class PersonAct:
    """One act: ``kind`` is promote, abort, retry, rollback, suspend or resume."""

    kind: str
    cluster: str
    by: str
    revision: str = ""
    wave: str = ""
    reason: str = ""
    at: float = 0.0

    def attributes(self) -> dict[str, str | float]:
        """The act as span attributes (empty values left out)."""
        found: dict[str, str | float] = {
            "syncer.act.kind": self.kind,
            "syncer.act.by": self.by or "someone",
            "syncer.cluster": self.cluster,
            "syncer.revision": self.revision,
            "syncer.wave": self.wave,
            "syncer.act.reason": self.reason,
            "syncer.act.at": self.at,
        }
        return {key: value for key, value in found.items() if value}


def acts_of(state: ClusterSyncState) -> tuple[PersonAct, ...]:
    """Every act of a person ``state`` records now."""
    name = state.cluster
    promotion = state.promotion
    acts = [
        PersonAct("promote", name, p.by, promotion.revision, promotion.wave, p.reason, p.at)
        for p in promotion.promoters
        if promotion.revision
    ]
    abort, retry, pin, suspension = state.abort, state.retry, state.pin, state.suspension
    if abort.active:
        acts.append(PersonAct("abort", name, abort.by, abort.revision, reason=abort.reason, at=abort.at))
    if retry.at:
        acts.append(PersonAct("retry", name, retry.by, retry.revision, reason=retry.reason, at=retry.at))
    if pin.active:
        acts.append(PersonAct("rollback", name, pin.by, pin.revision, reason=pin.reason, at=pin.at))
    if suspension.active:
        acts.append(PersonAct("suspend", name, suspension.by, reason=suspension.reason, at=suspension.at))
    elif suspension.by:
        acts.append(PersonAct("resume", name, suspension.by, reason=suspension.resumed, at=suspension.at))
    return tuple(acts)
