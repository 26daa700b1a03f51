"""Server-side apply of one cluster's plan, returning a change set.

Order: Namespaces and CRDs first, then everything else, then prunes (only after every apply
succeeded). The rules are those of ``syncer.domain.rules``, the very ones the plan (and so
``syncer diff``) used: a blocked plan (conflicts under ``report``, drift with repair off, objects the
server refused in the dry-run) writes nothing; ``force`` takes conflicting fields over; drift is
healed by re-applying with force when ``heal_drift`` is on; adoptions are applied so that syncer owns
what git says; each prune is checked again against the live object just before it is deleted. Secret
values never appear in the messages of the change set.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Any

from syncer.apply.retry import RetryPolicy, with_retries
from syncer.crds import shipped_sensitive_fields
from syncer.domain.applied import FIELD_MANAGER, TRACEPARENT_ANNOTATION, applied_body
from syncer.domain.changeset import ALREADY_GONE, ChangeEntry, ChangeSet, EntryOutcome, FailureCause
from syncer.domain.objects import ClusterManifests, Manifest, ObjectKey
from syncer.domain.plans import WRITING_ACTIONS, Action, Change, ClusterPlan
from syncer.domain.rules import (
    PRUNE_ANNOTATION,
    PRUNE_DISABLED,
    ConflictPolicy,
    SyncRules,
    blocked_reason,
    forced,
    prune_refusal,
)
from syncer.domain.secrets import redact, secret_values
from syncer.errors import Conflict, Forbidden, Invalid, KubeError, NotFound, ServerError, TooManyRequests
from syncer.kube import ApplyOptions, KubeApi
from syncer.tracing import log_ids, span, traceparent

__all__ = [
    "PRUNE_ANNOTATION",
    "PRUNE_DISABLED",
    "ApplyPolicy",
    "ClusterApplier",
    "ConflictPolicy",
    "apply_order",
]

_FIRST_KINDS = {("", "Namespace"): 0, ("apiextensions.k8s.io", "CustomResourceDefinition"): 1}


@dataclass(frozen=True)
class ApplyPolicy:
    """How a cluster's plan is applied; ``rules`` gives the part the plan shares."""

    conflicts: ConflictPolicy = ConflictPolicy.REPORT
    heal_drift: bool = True
    prune: bool = True
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    field_manager: str = FIELD_MANAGER
    workers: int = 8

    @property
    def rules(self) -> SyncRules:
        return SyncRules(self.field_manager, self.conflicts, self.heal_drift, self.prune)


def failure_cause(err: KubeError) -> FailureCause:
    """Whether the server refused the object itself (invalid, an admission denial: ``content``) or
    the live state stood in the way (another manager's fields, a permission, a missing namespace or
    kind, an apiserver that did not answer: ``live``). A webhook that denies with 403 reads as a
    permission; ``syncer retry`` tries such a revision again."""
    if isinstance(err, Conflict | Forbidden | NotFound | ServerError | TooManyRequests):
        return FailureCause.LIVE
    if isinstance(err, Invalid) or 400 <= err.status < 500:
        return FailureCause.CONTENT
    return FailureCause.LIVE  # no answer at all (a broken connection)


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


class ClusterApplier:
    """Applies one cluster's plan through the KubeApi seam."""

    def __init__(
        self, kube: KubeApi, policy: ApplyPolicy = ApplyPolicy(), stop: threading.Event | None = None
    ):
        self.kube = kube
        self.policy = policy
        self.stop = stop

    def apply(self, desired: ClusterManifests, plan: ClusterPlan, revision: str) -> ChangeSet:
        secrets = secret_values((m.body for m in desired.manifests), shipped_sensitive_fields())
        attributes = {"syncer.cluster": desired.cluster, "syncer.revision": revision}
        with span("syncer.cluster.apply", attributes) as applying:
            result = self._apply(desired, plan, revision, traceparent())
            ids = log_ids()
            applying.set("syncer.objects", result.writes)
            applying.set("syncer.result", "applied" if result.ok else "failed")
            if result.error:
                applying.fail(redact(result.error, secrets))
        return ChangeSet(
            result.cluster,
            result.revision,
            tuple(replace(e, message=redact(e.message, secrets)) for e in result.entries),
            redact(result.error, secrets),
            ids[0] if ids else "",
        )

    def _apply(self, desired: ClusterManifests, plan: ClusterPlan, revision: str, parent: str) -> ChangeSet:
        """``parent``: the traceparent written on each object applied ("" when tracing is off)."""
        manifests = {m.key: m for m in desired.manifests}
        changes = sorted(plan.changes, key=lambda c: apply_order(c.key))
        blocked = blocked_reason(changes, self.policy.rules)
        if blocked:
            stopped = tuple(
                ChangeEntry(c.key, c.action, EntryOutcome.SKIPPED, c.message)
                for c in changes
                if c.action in (Action.CONFLICT, Action.DRIFT, Action.ERROR)
            )
            return ChangeSet(desired.cluster, revision, stopped, blocked)
        entries: list[ChangeEntry] = []
        for group in _groups([c for c in changes if c.action in WRITING_ACTIONS]):
            missing = [c for c in group if c.key not in manifests]
            if missing:
                entries += [
                    ChangeEntry(c.key, c.action, EntryOutcome.FAILED, "not among the desired objects")
                    for c in missing
                ]
                return ChangeSet(
                    desired.cluster, revision, tuple(entries), "plan and desired objects disagree"
                )
            with ThreadPoolExecutor(max_workers=max(1, self.policy.workers)) as pool:
                done = list(pool.map(lambda c: self._apply_one(manifests[c.key], c, parent), group))
            entries += done
            failed = next((e for e in done if e.outcome is EntryOutcome.FAILED), None)
            if failed is not None:
                return ChangeSet(
                    desired.cluster, revision, tuple(entries), f"{failed.subject}: {failed.message}"
                )
        entries += [
            ChangeEntry(c.key, c.action, EntryOutcome.SKIPPED, c.message)
            for c in changes
            if c.action is Action.KEEP
        ]
        for change in reversed([c for c in changes if c.action is Action.PRUNE]):
            entry = self._prune_one(change)
            entries.append(entry)
            if entry.outcome is EntryOutcome.FAILED:
                return ChangeSet(
                    desired.cluster, revision, tuple(entries), f"{entry.subject}: {entry.message}"
                )
        return ChangeSet(desired.cluster, revision, tuple(entries))

    def _apply_one(self, manifest: Manifest, change: Change, parent: str) -> ChangeEntry:
        options = ApplyOptions(
            field_manager=self.policy.field_manager, force=forced(change, self.policy.rules)
        )
        body = applied_body(manifest)
        if parent:
            metadata = body.setdefault("metadata", {})
            metadata["annotations"] = {**(metadata.get("annotations") or {}), TRACEPARENT_ANNOTATION: parent}
        try:
            live = with_retries(lambda: self.kube.apply(body, options), self.policy.retry, self.stop)
        except Conflict as err:
            managers = ", ".join(err.managers) or "another field manager"
            message = f"owned by {managers}: {err.detail}"
            return ChangeEntry(
                change.key, Action.CONFLICT, EntryOutcome.FAILED, message, cause=FailureCause.LIVE
            )
        except KubeError as err:
            return ChangeEntry(
                change.key,
                change.action,
                EntryOutcome.FAILED,
                err.detail,
                cause=failure_cause(err),
                fields=change.fields,
            )
        return ChangeEntry(
            change.key, change.action, EntryOutcome.APPLIED, uid=_uid(live), fields=change.fields
        )

    def _prune_one(self, change: Change) -> ChangeEntry:
        key = change.key
        try:
            live = with_retries(
                lambda: self.kube.get(change.api_version, key.kind, key.name, key.namespace),
                self.policy.retry,
                self.stop,
            )
            reason = prune_refusal(live, self.policy.rules)
            if reason:
                return ChangeEntry(key, Action.PRUNE, EntryOutcome.SKIPPED, reason)
            with_retries(
                lambda: self.kube.delete(change.api_version, key.kind, key.name, key.namespace),
                self.policy.retry,
                self.stop,
            )
        except NotFound:
            return ChangeEntry(key, Action.PRUNE, EntryOutcome.SKIPPED, ALREADY_GONE)
        except KubeError as err:
            return ChangeEntry(key, Action.PRUNE, EntryOutcome.FAILED, err.detail, cause=failure_cause(err))
        return ChangeEntry(key, Action.PRUNE, EntryOutcome.APPLIED, uid=_uid(live))


def _uid(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("uid", ""))
