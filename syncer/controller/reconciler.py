"""One level-based, idempotent reconcile of one RedisCluster, through the ``KubeApi`` seam.

Reads the object and its children, decides, applies every child with server-side apply (field manager
``syncer-controller``), then writes the status through the status subresource. Running it twice in a
row changes nothing the second time. The finalizer applies the volume retention policy on delete.
"""

from __future__ import annotations

import base64
import contextlib
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from syncer.controller import children, upgrade
from syncer.controller.events import EventRecorder
from syncer.controller.model import (
    API_VERSION,
    FIELD_MANAGER,
    FINALIZER,
    KIND,
    LABEL_INSTANCE,
    LABEL_MANAGED_BY,
    LABEL_SHARD,
    ClusterSpec,
    ControllerOptions,
    SpecError,
    parse,
)
from syncer.controller.status import Observed, Problem, ShardState, TopologyVerdict, compute, transitions
from syncer.controller.upgrade import Decision, RolloutState, ShardObservation, TemplateChoice
from syncer.errors import Conflict, Invalid, NotFound
from syncer.kube import ApplyOptions, KubeApi, KubeObject

APPLY = ApplyOptions(field_manager=FIELD_MANAGER)
Log = logging.LoggerAdapter[logging.Logger]


@dataclass(frozen=True)
class Outcome:
    """How a reconcile ended: ``phase`` (sync, rollout, finalize, absent), ``result`` (success, stalled)."""

    phase: str
    result: str
    ready: bool = False
    requeue_after: float | None = None


def _selector(name: str) -> str:
    return f"{LABEL_INSTANCE}={name},{LABEL_MANAGED_BY}={FIELD_MANAGER}"


def _shard_of(obj: Mapping[str, Any]) -> int:
    try:
        return int(((obj.get("metadata") or {}).get("labels") or {}).get(LABEL_SHARD, -1))
    except ValueError:
        return -1


def shard_state(index: int, sts: Mapping[str, Any] | None) -> ShardState:
    if sts is None:
        return ShardState(index)
    status = sts.get("status") or {}
    current, update = status.get("currentRevision"), status.get("updateRevision")
    return ShardState(
        index=index,
        exists=True,
        settled=status.get("observedGeneration") == (sts.get("metadata") or {}).get("generation"),
        replicas=int(status.get("replicas") or 0),
        ready=int(status.get("readyReplicas") or 0),
        updated=int(status.get("updatedReplicas") or 0),
        one_revision=bool(current) and current == update,
        version=children.template_version(sts["spec"]["template"]),
    )


def _observation(sts: Mapping[str, Any] | None) -> ShardObservation:
    if sts is None:
        return ShardObservation(False)
    state = shard_state(0, sts)
    return ShardObservation(
        True,
        children.template_hash(sts["spec"]["template"]),
        state.settled,
        state.replicas,
        state.updated,
        state.ready,
    )


class Reconciler:
    def __init__(
        self,
        kube: KubeApi,
        options: ControllerOptions = ControllerOptions(),
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._kube = kube
        self._options = options
        self._clock = clock
        self._events = EventRecorder(kube, clock, options.identity)

    def reconcile(self, namespace: str, name: str, log: Log) -> Outcome:
        try:
            obj = self._kube.get(API_VERSION, KIND, name, namespace)
        except NotFound:
            log.info("gone; its children are left to the garbage collector")
            return Outcome("absent", "success")
        if (obj.get("metadata") or {}).get("deletionTimestamp"):
            return self._finalize(obj, log)
        if FINALIZER not in ((obj.get("metadata") or {}).get("finalizers") or ()):
            self._apply_meta(obj, [FINALIZER])
        previous = obj.get("status") or {}
        try:
            spec = parse(obj)
        except SpecError as err:
            return self._stall(obj, Problem("InvalidSpec", str(err)), log)
        try:
            secrets, password = self._secrets(spec)
        except _Missing as missing:
            return self._stall(obj, missing.problem, log, spec)
        try:
            decision, live = self._apply_children(spec, secrets, previous)
        except (Invalid, Conflict) as err:
            reason = "ChildRejected" if isinstance(err, Invalid) else "FieldConflict"
            return self._stall(obj, Problem(reason, str(err)), log, spec)
        shards = [shard_state(i, live.get(i)) for i in range(spec.shards)]
        topology = self._topology(spec, shards, password) if self._options.topology else None
        status = compute(Observed(spec, shards, decision.state, topology), previous, self._clock())
        self._write_status(obj, status, log)
        if decision.event is not None:
            warning = decision.event[0] in ("RolloutFailed", "RolloutReverted")
            self._events.emit(obj, warning, *decision.event)
            log.info("rollout: %s", decision.event[1], extra={"event_reason": decision.event[0]})
        ready = status["conditions"][0]["status"] == "True"
        state = decision.state
        phase = "rollout" if state is not None and state.in_progress else "sync"
        requeue = decision.requeue_after
        if requeue is None and topology is not None and not ready:
            requeue = self._options.poll_seconds
        stalled = status["conditions"][2]["status"] == "True"
        return Outcome(phase, "stalled" if stalled else "success", ready, requeue)

    # -- pieces ----------------------------------------------------------------------------------

    def _apply_meta(self, obj: Mapping[str, Any], finalizers: list[str]) -> None:
        meta: dict[str, Any] = {"name": obj["metadata"]["name"], "namespace": obj["metadata"]["namespace"]}
        if finalizers:
            meta["finalizers"] = finalizers
        self._kube.apply({"apiVersion": API_VERSION, "kind": KIND, "metadata": meta}, APPLY)

    def _secrets(self, spec: ClusterSpec) -> tuple[str, str | None]:
        """A hash of the referenced Secrets' data (so rotating them rolls the pods) and the password."""
        data: dict[str, Any] = {}
        password = None
        for field, ref in (("auth", spec.auth), ("tls", spec.tls)):
            if ref is None:
                continue
            try:
                secret = self._kube.get("v1", "Secret", ref.name, spec.namespace)
            except NotFound as err:
                where = f"Secret {spec.namespace}/{ref.name} named by spec.{field}.secretRef"
                raise _Missing(Problem("SecretNotFound", f"{where} does not exist")) from err
            data[field] = secret.get("data") or {}
            if field == "auth":
                if ref.key not in data[field]:
                    message = (
                        f"Secret {spec.namespace}/{ref.name} has no key {ref.key!r} (spec.auth.secretRef.key)"
                    )
                    raise _Missing(Problem("SecretKeyNotFound", message))
                password = base64.b64decode(data[field][ref.key]).decode(errors="replace")
        return (children.digest(data) if data else ""), password

    def _live_statefulsets(self, spec: ClusterSpec) -> dict[int, KubeObject]:
        found = self._kube.list(
            "apps/v1", "StatefulSet", namespace=spec.namespace, label_selector=_selector(spec.name)
        )
        return {_shard_of(s): s for s in found.items}

    def _apply_children(
        self, spec: ClusterSpec, secret_hash: str, previous: Mapping[str, Any]
    ) -> tuple[Decision, dict[int, KubeObject]]:
        live = self._live_statefulsets(spec)
        templates = [children.pod_template(spec, shard, secret_hash) for shard in range(spec.shards)]
        decision = upgrade.decide(
            spec.strategy,
            children.template_hash(templates[0]),
            pods=spec.pods_per_shard,
            state=RolloutState.from_status(previous.get("rollout")),
            shards=[_observation(live.get(i)) for i in range(spec.shards)],
            now=self._clock(),
        )
        for body in children.shared_children(spec):
            self._kube.apply(body, APPLY)
        applied: dict[int, KubeObject] = {}
        for shard in range(spec.shards):
            template = self._template(decision.template, templates[shard], live.get(shard))
            body = children.stateful_set(spec, shard, template, decision.partition)
            applied[shard] = self._kube.apply(body, APPLY)
        self._prune(spec, live)
        return decision, applied

    def _template(
        self, choice: TemplateChoice, desired: dict[str, Any], live: Mapping[str, Any] | None
    ) -> dict[str, Any]:
        if live is None or choice == TemplateChoice.DESIRED:
            return desired
        if choice == TemplateChoice.REVERT:
            revision = (live.get("status") or {}).get("currentRevision")
            meta = live["metadata"]
            if revision:
                try:
                    found = self._kube.get("apps/v1", "ControllerRevision", revision, meta["namespace"])
                    template = dict(found["data"]["spec"]["template"])
                    template.pop("$patch", None)
                    return template
                except (NotFound, KeyError, TypeError):
                    pass
        return dict(live["spec"]["template"])

    def _prune(self, spec: ClusterSpec, live: Mapping[int, KubeObject]) -> None:
        """Delete the StatefulSets and PDBs of shards the spec no longer has (and PDBs when disabled)."""
        for shard, sts in live.items():
            if shard >= spec.shards or shard < 0:
                self._delete("apps/v1", "StatefulSet", sts)
        pdbs = self._kube.list(
            "policy/v1", "PodDisruptionBudget", namespace=spec.namespace, label_selector=_selector(spec.name)
        )
        for pdb in pdbs.items:
            if not spec.pdb or not 0 <= _shard_of(pdb) < spec.shards:
                self._delete("policy/v1", "PodDisruptionBudget", pdb)

    def _delete(self, api_version: str, kind: str, obj: Mapping[str, Any]) -> None:
        meta = obj["metadata"]
        with contextlib.suppress(NotFound):
            self._kube.delete(api_version, kind, meta["name"], meta["namespace"])

    def _topology(self, spec: ClusterSpec, shards: list[ShardState], password: str | None) -> TopologyVerdict:
        from syncer.controller import topology_link

        return topology_link.verdict(self._kube, spec, shards, self._options, password)

    def _write_status(self, obj: Mapping[str, Any], status: dict[str, Any], log: Log) -> None:
        meta = obj["metadata"]
        body = {
            "apiVersion": API_VERSION,
            "kind": KIND,
            "metadata": {"name": meta["name"], "namespace": meta["namespace"]},
            "status": status,
        }
        self._kube.apply_status(body, APPLY)
        for condition in transitions(obj.get("status") or {}, status):
            warning = (condition["type"] == "Stalled") == (condition["status"] == "True")
            if condition["type"] == "Ready" and condition["status"] == "False":
                warning = True
            reason = f"{condition['type']}{condition['status']}"
            self._events.emit(
                obj, warning, reason, f"{condition['reason']}: {condition['message']}".rstrip(": ")
            )
            log.info(
                "%s=%s (%s) %s",
                condition["type"],
                condition["status"],
                condition["reason"],
                condition["message"],
                extra={"condition": condition["type"], "condition_status": condition["status"]},
            )

    def _stall(
        self, obj: Mapping[str, Any], problem: Problem, log: Log, spec: ClusterSpec | None = None
    ) -> Outcome:
        """Record that nothing can move until the spec (or a referenced Secret) changes."""
        log.warning("stalled: %s: %s", problem.reason, problem.message)
        meta = obj.get("metadata") or {}
        previous = obj.get("status") or {}
        if spec is None:
            spec = ClusterSpec(
                name=meta["name"],
                namespace=meta["namespace"],
                uid=meta.get("uid", ""),
                generation=int(meta.get("generation") or 0),
                version=str((obj.get("spec") or {}).get("version") or ""),
            )
        rollout = RolloutState.from_status(previous.get("rollout"))
        status = compute(Observed(spec, (), rollout, None, problem), previous, self._clock())
        # What was last seen of the shards stays: nothing was looked at this time.
        status.pop("shards", None)
        for key in ("shards", "currentVersion"):
            if key in previous:
                status[key] = previous[key]
        self._write_status(obj, status, log)
        return Outcome("sync", "stalled")

    def _finalize(self, obj: KubeObject, log: Log) -> Outcome:
        meta = obj["metadata"]
        if FINALIZER not in (meta.get("finalizers") or ()):
            return Outcome("finalize", "success")
        persistence = (obj.get("spec") or {}).get("persistence") or {}
        policy = persistence.get("retentionPolicy") or "Retain"
        claims = self._kube.list(
            "v1",
            "PersistentVolumeClaim",
            namespace=meta["namespace"],
            label_selector=f"{LABEL_INSTANCE}={meta['name']}",
        ).items
        if policy == "Delete":
            # The StatefulSets go first: while one exists it would create the claims again for its pods.
            sets = self._kube.list(
                "apps/v1", "StatefulSet", namespace=meta["namespace"], label_selector=_selector(meta["name"])
            ).items
            if sets:
                for sts in sets:
                    if not sts["metadata"].get("deletionTimestamp"):
                        self._delete("apps/v1", "StatefulSet", sts)
                log.info("finalizing: waiting for %d StatefulSet(s) to go before deleting volumes", len(sets))
                return Outcome("finalize", "success", requeue_after=1.0)
            for claim in claims:
                self._delete("v1", "PersistentVolumeClaim", claim)
            message = f"deleted {len(claims)} PersistentVolumeClaim(s) (retentionPolicy Delete)"
        else:
            message = f"kept {len(claims)} PersistentVolumeClaim(s) (retentionPolicy Retain)"
        log.info("finalizing: %s", message)
        self._events.emit(obj, False, "VolumesDeleted" if policy == "Delete" else "VolumesRetained", message)
        self._apply_meta(obj, [])
        return Outcome("finalize", "success")


class _Missing(Exception):
    def __init__(self, problem: Problem) -> None:
        super().__init__(problem.message)
        self.problem = problem
