"""Server-side apply of one cluster's plan, returning a change set.

Order: Namespaces and CRDs first, then everything else, then prunes (only after every apply
succeeded). Conflicts follow the policy: ``report`` stops the cluster before anything is written and
names the other field managers; ``force`` takes the fields over. Drift (a field syncer owned that
another manager took with force) is healed by re-applying with force when ``heal_drift`` is on.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from syncer.apply.retry import RetryPolicy, with_retries
from syncer.domain.applied import MANAGED_BY_LABEL, MANAGED_BY_VALUE, applied_body
from syncer.domain.changes import Action, Change, ClusterPlan
from syncer.domain.changeset import ChangeEntry, ChangeSet, Outcome
from syncer.domain.objects import ClusterManifests, Manifest, ObjectKey
from syncer.errors import Conflict, KubeError, NotFound
from syncer.kube import ApplyOptions, KubeApi

PRUNE_ANNOTATION = "syncer.dev/prune"
PRUNE_DISABLED = "disabled"
_FIRST_KINDS = {("", "Namespace"): 0, ("apiextensions.k8s.io", "CustomResourceDefinition"): 1}
_APPLY_ACTIONS = frozenset({Action.CREATE, Action.UPDATE, Action.DRIFT, Action.CONFLICT})


class ConflictPolicy(StrEnum):
    REPORT = "report"
    FORCE = "force"


@dataclass(frozen=True)
class ApplyPolicy:
    """How a cluster's plan is applied."""

    conflicts: ConflictPolicy = ConflictPolicy.REPORT
    heal_drift: bool = True
    prune: bool = True
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    field_manager: str = "syncer"
    workers: int = 8


def apply_order(key: ObjectKey) -> tuple[int, ObjectKey]:
    return (_FIRST_KINDS.get((key.group, key.kind), 2), key)


def _groups(changes: list[Change]) -> list[list[Change]]:
    """Changes in apply order, cut where the rank changes (Namespaces, then CRDs, then the rest):
    the objects of one group do not depend on each other and may be applied at the same time."""
    groups: list[list[Change]] = []
    for change in sorted(changes, key=lambda c: apply_order(c.key)):
        rank = apply_order(change.key)[0]
        if groups and apply_order(groups[-1][0].key)[0] == rank:
            groups[-1].append(change)
        else:
            groups.append([change])
    return groups


def _conflict_message(change: Change) -> str:
    managers = ", ".join(change.managers) or "another field manager"
    fields = ", ".join(f.path for f in change.fields) or "some fields"
    return f"{change.key.subject}: {fields} owned by {managers}"


class ClusterApplier:
    """Applies one cluster's plan through the KubeApi seam."""

    def __init__(
        self, kube: KubeApi, policy: ApplyPolicy = ApplyPolicy(), stop: threading.Event | None = None
    ):
        self.kube = kube
        self.policy = policy
        self.stop = stop

    def apply(self, desired: ClusterManifests, plan: ClusterPlan, revision: str) -> ChangeSet:
        manifests = {m.key: m for m in desired.manifests}
        changes = sorted(plan.changes, key=lambda c: apply_order(c.key))
        conflicts = [c for c in changes if c.action is Action.CONFLICT]
        if conflicts and self.policy.conflicts is ConflictPolicy.REPORT:
            blocked = tuple(
                ChangeEntry(c.key, c.action, Outcome.SKIPPED, _conflict_message(c)) for c in conflicts
            )
            message = "; ".join(_conflict_message(c) for c in conflicts)
            return ChangeSet(desired.cluster, revision, blocked, f"conflicts (policy report): {message}")
        entries: list[ChangeEntry] = []
        for group in _groups([c for c in changes if c.action in _APPLY_ACTIONS]):
            missing = [c for c in group if c.key not in manifests]
            if missing:
                entries += [
                    ChangeEntry(c.key, c.action, Outcome.FAILED, "not among the desired objects")
                    for c in missing
                ]
                return ChangeSet(
                    desired.cluster, revision, tuple(entries), "plan and desired objects disagree"
                )
            with ThreadPoolExecutor(max_workers=max(1, self.policy.workers)) as pool:
                done = list(pool.map(lambda c: self._apply_one(manifests[c.key], c), group))
            entries += done
            failed = next((e for e in done if e.outcome is Outcome.FAILED), None)
            if failed is not None:
                return ChangeSet(
                    desired.cluster, revision, tuple(entries), f"{failed.subject}: {failed.message}"
                )
        if self.policy.prune:
            for change in reversed([c for c in changes if c.action is Action.PRUNE]):
                entry = self._prune_one(change)
                entries.append(entry)
                if entry.outcome is Outcome.FAILED:
                    return ChangeSet(
                        desired.cluster, revision, tuple(entries), f"{entry.subject}: {entry.message}"
                    )
        return ChangeSet(desired.cluster, revision, tuple(entries))

    def _apply_one(self, manifest: Manifest, change: Change) -> ChangeEntry:
        force = self.policy.conflicts is ConflictPolicy.FORCE or (
            change.action is Action.DRIFT and self.policy.heal_drift
        )
        options = ApplyOptions(field_manager=self.policy.field_manager, force=force)
        body = applied_body(manifest)
        try:
            live = with_retries(lambda: self.kube.apply(body, options), self.policy.retry, self.stop)
        except Conflict as err:
            managers = ", ".join(err.managers) or "another field manager"
            return ChangeEntry(
                change.key, Action.CONFLICT, Outcome.FAILED, f"owned by {managers}: {err.detail}"
            )
        except KubeError as err:
            return ChangeEntry(change.key, change.action, Outcome.FAILED, err.detail)
        return ChangeEntry(change.key, change.action, Outcome.APPLIED, uid=_uid(live))

    def _prune_one(self, change: Change) -> ChangeEntry:
        key = change.key
        try:
            live = with_retries(
                lambda: self.kube.get(change.api_version, key.kind, key.name, key.namespace),
                self.policy.retry,
                self.stop,
            )
            reason = _kept_because(live)
            if reason:
                return ChangeEntry(key, Action.PRUNE, Outcome.SKIPPED, reason)
            with_retries(
                lambda: self.kube.delete(change.api_version, key.kind, key.name, key.namespace),
                self.policy.retry,
                self.stop,
            )
        except NotFound:
            return ChangeEntry(key, Action.PRUNE, Outcome.SKIPPED, "already gone")
        except KubeError as err:
            return ChangeEntry(key, Action.PRUNE, Outcome.FAILED, err.detail)
        return ChangeEntry(key, Action.PRUNE, Outcome.APPLIED, uid=_uid(live))


def _kept_because(live: Mapping[str, Any]) -> str:
    """Why a live object must not be pruned, or ``""`` when it may be."""
    meta = live.get("metadata") or {}
    if (meta.get("annotations") or {}).get(PRUNE_ANNOTATION) == PRUNE_DISABLED:
        return f"pruning disabled by {PRUNE_ANNOTATION}"
    if (meta.get("labels") or {}).get(MANAGED_BY_LABEL) != MANAGED_BY_VALUE:
        return "no longer labelled as managed by syncer"
    return ""


def _uid(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("uid", ""))
