"""What a revision gate asks the pass it judges tips for, before that pass exists.

The gate (``RevisionGate``) is built first and the pass (``FleetPass``) over it; yet the gate asks
the pass two things while it judges a tip: the revisions the fleet's clusters record (every tip must
descend from them) and, with a guard policy, the tip planned against the clusters as the sync would
plan it. ``GateQuestions`` is given to the gate when it is built and answered by the pass once the
pass is built (``answered_by``); asked before that, it answers nothing recorded and judges nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from syncer.domain.objects import ClusterManifests, DesiredFleet
from syncer.domain.plans import ClusterPlan
from syncer.engine.guarding import RevisionGuard
from syncer.guards import GuardPolicy

PlanLive = Callable[[ClusterManifests], ClusterPlan]


class GateQuestions:
    """The gate's questions to its pass (see the module docstring); ``guards`` is the guard policy."""

    def __init__(self, guards: GuardPolicy) -> None:
        self._guards = guards
        self._recorded: Callable[[], Mapping[str, str]] | None = None
        self._guard: RevisionGuard | None = None

    def answered_by(self, recorded: Callable[[], Mapping[str, str]], plan_live: PlanLive) -> None:
        """The pass's answers: the revisions its clusters record, and its plan of a tip's cluster."""
        self._recorded = recorded
        self._guard = RevisionGuard(self._guards, plan_live)

    @property
    def judges(self) -> bool:
        """Whether a tip is judged by a guard policy at all."""
        return not self._guards.empty

    def recorded(self) -> Mapping[str, str]:
        return self._recorded() if self._recorded is not None else {}

    def judge(self, fleet: DesiredFleet, current: DesiredFleet | None) -> object:
        """Raise GuardRejected when ``fleet`` breaks the guard policy (``RevisionGuard.require``)."""
        return self._guard.require(fleet, current) if self._guard is not None else None
