"""Guard rails at the revision gate: a new tip's planned changes judged by the agent's guard policy.

A change is judged as the sync would make it: ``old`` is the object live in the cluster and ``new``
the object the server predicts the apply gives (the same plan ``syncer diff`` shows). A cluster that
cannot be read now is judged from git instead: ``old`` is the object as the revision in force
declares it (None when there is none), so a cluster being down neither waves a revision through
nor freezes the fleet. A revision that breaks a rule or a limit is rejected whole before any
cluster changes, like a bad signature.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from syncer.domain.objects import ClusterManifests, DesiredFleet
from syncer.domain.plans import Action, ClusterPlan
from syncer.errors import GuardFailure, GuardRejected
from syncer.guards import (
    ChangeKind,
    GuardPolicy,
    GuardReport,
    LimitVerdict,
    PlannedChange,
    RuleVerdict,
    judge_revision,
)

_KINDS: Mapping[Action, ChangeKind] = {
    Action.CREATE: ChangeKind.CREATE,
    Action.UPDATE: ChangeKind.UPDATE,
    Action.ADOPT: ChangeKind.UPDATE,
    Action.DRIFT: ChangeKind.UPDATE,
    Action.CONFLICT: ChangeKind.UPDATE,
    Action.ERROR: ChangeKind.UPDATE,
    Action.PRUNE: ChangeKind.PRUNE,
}
"""What each planned action is to a rule: anything that writes desired fields is an update (a create
when nothing is live); ``keep`` and ``unchanged`` change nothing and are not judged."""

PlanOf = Callable[[ClusterManifests], ClusterPlan]
"""Plans one cluster's desired objects against its live state (``ClusterPlan.error`` when it cannot)."""


def planned_changes(plan: ClusterPlan, labels: Mapping[str, str]) -> list[PlannedChange]:
    """The changes of one cluster's plan as the guard rules see them."""
    found = []
    for change in plan.changes:
        kind = _KINDS.get(change.action)
        if kind is None:
            continue
        if kind is ChangeKind.UPDATE and change.before is None:
            kind = ChangeKind.CREATE
        new = None if kind is ChangeKind.PRUNE else change.after
        found.append(PlannedChange(change.key, kind, change.before, new, labels))
    return found


def declared_changes(desired: ClusterManifests, before: ClusterManifests | None) -> list[PlannedChange]:
    """The changes between two revisions' declared objects of one cluster (the fallback for a cluster
    that cannot be read): objects added, changed and dropped, compared as declared in git."""
    old: dict[Any, Mapping[str, Any]] = {m.key: m.body for m in before.manifests} if before else {}
    found = []
    for manifest in desired.manifests:
        previous = old.pop(manifest.key, None)
        if previous == manifest.body:
            continue
        kind = ChangeKind.CREATE if previous is None else ChangeKind.UPDATE
        found.append(PlannedChange(manifest.key, kind, previous, manifest.body, desired.labels))
    found.extend(
        PlannedChange(key, ChangeKind.PRUNE, body, None, desired.labels) for key, body in old.items()
    )
    return found


def fleet_changes(
    plans: Iterable[ClusterPlan], fleet: DesiredFleet, in_force: DesiredFleet | None
) -> list[PlannedChange]:
    """Every cluster's planned changes; a cluster whose plan failed is judged from git."""
    changes: list[PlannedChange] = []
    for plan in plans:
        desired = fleet.clusters[plan.cluster]
        if plan.error:
            before = in_force.clusters.get(plan.cluster) if in_force is not None else None
            changes.extend(declared_changes(desired, before))
        else:
            changes.extend(planned_changes(plan, desired.labels))
    return changes


def judge_plan(policy: GuardPolicy, fleet: DesiredFleet, plans: Iterable[ClusterPlan]) -> GuardReport:
    """The verdicts on plans already made (``syncer diff``'s): the same judgement as the gate's."""
    return judge_revision(policy, fleet.revision, fleet_changes(plans, fleet, None))


def _failure(verdict: RuleVerdict | LimitVerdict) -> GuardFailure:
    if isinstance(verdict, RuleVerdict):
        return GuardFailure(verdict.rule, verdict.cluster, str(verdict.outcome), str(verdict))
    return GuardFailure(verdict.limit, "", str(verdict.outcome), str(verdict))


class RevisionGuard:
    """Judges candidate revisions against ``policy``, planning each cluster with ``plan_of``."""

    def __init__(self, policy: GuardPolicy, plan_of: PlanOf, workers: int = 8) -> None:
        self.policy = policy
        self.plan_of = plan_of
        self.workers = workers

    def judge(self, fleet: DesiredFleet, in_force: DesiredFleet | None) -> GuardReport:
        """Every rule and limit on ``fleet``'s planned changes (the clusters planned in parallel)."""
        if self.policy.empty:
            return GuardReport(fleet.revision)
        clusters = list(fleet.clusters.values())
        with ThreadPoolExecutor(max_workers=max(1, min(self.workers, len(clusters) or 1))) as pool:
            plans = list(pool.map(self.plan_of, clusters))
        return judge_revision(self.policy, fleet.revision, fleet_changes(plans, fleet, in_force))

    def require(self, fleet: DesiredFleet, in_force: DesiredFleet | None) -> GuardReport:
        """``judge``, raising GuardRejected (every failure, one per line) when the revision breaks any."""
        report = self.judge(fleet, in_force)
        if report.rejected:
            raise GuardRejected(
                f"guard policy {self.policy.origin}:\n{report.summary()}",
                verdicts=tuple(_failure(f) for f in report.failures),
            )
        return report
