"""One level-based, idempotent reconcile of one RedisCluster, through the ``KubeApi`` seam.

Reads the object and its children, decides, applies every child with server-side apply (field manager
``syncer-controller``), then writes the status through the status subresource. Running it twice in a
row changes nothing the second time. The finalizer applies the volume retention policy on delete.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from syncer.controller import children, upgrade
from syncer.controller.events import ClusterEvents, scrub
from syncer.controller.finalizer import finalize
from syncer.controller.formation import FormationMarks
from syncer.controller.model import (
    ANNOTATION_PAUSED,
    API_VERSION,
    FINALIZER,
    KIND,
    LABEL_INSTANCE,
    ClusterSpec,
    ControllerOptions,
    SpecError,
    parse,
)
from syncer.controller.progress import MigrationProgress
from syncer.controller.pruning import prune
from syncer.controller.secrets import MissingReference, read_secrets
from syncer.controller.startup import REASON as CONFIG_REJECTED
from syncer.controller.startup import config_rejection
from syncer.controller.statefulsets import observation, partition, selector, shard_of, shard_state
from syncer.controller.status import (
    Observed,
    ShardState,
    StallCause,
    TopologyVerdict,
    compute,
    shard_ready,
    with_outage,
)
from syncer.controller.status_writer import APPLY, Log, StatusWriter
from syncer.controller.traces import ReconcileTraces, topology_look
from syncer.controller.upgrade import RolloutState, TemplateChoice, UpgradeDecision
from syncer.errors import Conflict, Invalid, NotFound
from syncer.leader.fence import UNFENCED, Fence
from syncer.tracing import span

if TYPE_CHECKING:
    from syncer.controller.health_probe import HealthWatch
    from syncer.controller.topology_link import TopologyPass
    from syncer.controller.topology_model import TopologyOptions
from syncer.kube import KubeApi, KubeObject


@dataclass(frozen=True)
class ReconcileOutcome:
    """How a reconcile ended: ``phase`` (sync, rollout, finalize, absent, paused), ``result`` (success,
    stalled); ``status`` is the status it wrote (None when it wrote none) and ``desired_pods`` the
    pods its spec asks for."""

    phase: str
    result: str
    ready: bool = False
    requeue_after: float | None = None
    status: Mapping[str, Any] | None = None
    desired_pods: int = 0


class Reconciler:
    def __init__(
        self,
        kube: KubeApi,
        options: ControllerOptions = ControllerOptions(),
        clock: Callable[[], float] = time.time,
        fence: Fence = UNFENCED,
        health: HealthWatch | None = None,
    ) -> None:
        """``fence`` is passed before every command to a Redis server; the writes through ``kube``
        pass it too when ``kube`` is a ``FencedKube`` (``runner.run_controller``)."""
        self._kube = kube
        self._options = options
        self._clock = clock
        self._fence = fence
        self._health = health
        self._events = ClusterEvents(kube, options.identity)
        self._status = StatusWriter(kube, self._events)
        # Topology events of the reconcile under way (failovers before restarts), emitted with the status.
        self._pending_events: list[tuple[str, str]] = []
        self._traces = ReconcileTraces()

    def reconcile(self, namespace: str, name: str, log: Log) -> ReconcileOutcome:
        try:
            obj = self._kube.get(API_VERSION, KIND, name, namespace)
        except NotFound:
            log.info("gone; its children are left to the garbage collector")
            outcome = ReconcileOutcome("absent", "success")
        else:
            with self._traces.reconcile(obj, self._options.cluster or self._options.context) as reconciling:
                outcome = self._reconcile(obj, log)
                reconciling.done(outcome.ready, outcome.phase, outcome.result)
        if self._health is not None and outcome.phase in ("absent", "finalize", "paused"):
            self._health.forget(f"{namespace}/{name}")
        return outcome

    def _reconcile(self, obj: KubeObject, log: Log) -> ReconcileOutcome:
        if (obj.get("metadata") or {}).get("deletionTimestamp"):
            return self._finalize(obj, log)
        if str(((obj.get("metadata") or {}).get("annotations") or {}).get(ANNOTATION_PAUSED)) == "true":
            log.info("paused (annotation %s): not reconciled", ANNOTATION_PAUSED)
            return ReconcileOutcome("paused", "success")
        if FINALIZER not in ((obj.get("metadata") or {}).get("finalizers") or ()):
            obj = _written(obj, self._apply_meta(obj, [FINALIZER]))
        previous = obj.get("status") or {}
        try:
            spec = parse(obj)
        except SpecError as err:
            return self._stall(obj, StallCause("InvalidSpec", str(err)), log)
        try:
            secrets = read_secrets(self._kube, spec)
            access = self._access(secrets.password, secrets.tls)
        except MissingReference as missing:
            return self._stall(obj, missing.problem, log, spec)
        self._pending_events = []
        found = self._live_statefulsets(spec)
        redis = None
        marks = FormationMarks()
        if access is not None:
            access = replace(access, told=marks.tell)
            redis = self._topology(spec, found, access, self._progress(obj, spec, found, log).tell)
        if redis is not None and redis.problem is None:
            before = [shard_state(i, found.get(i)) for i in range(spec.shards)]
            redis = replace(redis, problem=self._config_rejection(spec, before))
        try:
            decision, live = self._apply_children(
                spec, secrets.digest, previous, found, redis=redis, access=access
            )
        except (Invalid, Conflict) as err:
            reason = "ChildRejected" if isinstance(err, Invalid) else "FieldConflict"
            return self._stall(obj, StallCause(reason, str(err)), log, spec)
        shards = [shard_state(i, live.get(i)) for i in range(spec.shards)]
        observed = Observed(spec, shards, decision.state)
        if redis is not None:
            outage = self._health.outage(f"{spec.namespace}/{spec.name}") if self._health else None
            observed = Observed(
                spec, shards, decision.state, redis.verdict, redis.problem, redis.masters, outage
            )
            for reason, message in [*redis.events, *self._pending_events]:
                self._events.emit(obj, False, reason, message)
                log.info("topology: %s", message, extra={"event_reason": reason})
        # Against the status last written: a migration may have written progress since ``previous``.
        status = compute(observed, obj.get("status") or {}, self._clock())
        self._status.write(obj, status, log, marks.tell)
        marks.log(log)
        if decision.event is not None:
            warning = decision.event[0] in ("RolloutFailed", "RolloutReverted")
            self._events.emit(obj, warning, *decision.event)
            log.info("rollout: %s", decision.event[1], extra={"event_reason": decision.event[0]})
        return self._outcome(decision, status, spec, watched=redis is not None)

    def tell_outage(self, namespace: str, name: str, outage: TopologyVerdict, log: Log) -> None:
        """Write at once the outage the health watch sees, even while a reconcile of the object is
        busy converging: only Ready and Reconciling change (``status.with_outage``); the reconcile
        it also wakes writes the whole status again."""
        try:
            obj = self._kube.get(API_VERSION, KIND, name, namespace)
        except NotFound:
            return
        status = with_outage(obj.get("status") or {}, outage, self._clock())
        if status is not None:
            self._status.write(obj, status, log)

    # -- pieces ----------------------------------------------------------------------------------

    def _outcome(
        self, decision: UpgradeDecision, status: Mapping[str, Any], spec: ClusterSpec, *, watched: bool
    ) -> ReconcileOutcome:
        ready = status["conditions"][0]["status"] == "True"
        state = decision.state
        phase = "rollout" if state is not None and state.in_progress else "sync"
        requeue = decision.requeue_after
        if watched:
            # Redis is watched, not only pods: look again soon while not Ready, regularly while Ready.
            every = self._options.topology_interval if ready else self._options.poll_seconds
            requeue = every if requeue is None else min(requeue, every)
        stalled = status["conditions"][2]["status"] == "True"
        result = "stalled" if stalled else "success"
        return ReconcileOutcome(phase, result, ready, requeue, status, spec.shards * spec.pods_per_shard)

    def _config_rejection(self, spec: ClusterSpec, shards: list[ShardState]) -> StallCause | None:
        """redis-server's refusal of its redis.conf, read from the pods while a shard is not Ready
        (pods are listed only with the topology on, as the controller's RBAC allows)."""
        if all(shard_ready(s, spec.pods_per_shard) for s in shards):
            return None
        selector = f"{LABEL_INSTANCE}={spec.name}"
        pods = self._kube.list("v1", "Pod", namespace=spec.namespace, label_selector=selector).items
        return config_rejection(spec, pods)

    def _access(self, password: str | None, tls: Mapping[str, str]) -> TopologyOptions | None:
        """How to reach the Redis servers, or None when the topology is not watched."""
        if not self._options.topology:
            return None
        from syncer.controller import topology_link

        try:
            return replace(topology_link.settings(self._options, password, tls), fence=self._fence)
        except SpecError as err:
            raise MissingReference(StallCause("SecretKeyNotFound", str(err))) from err

    def _apply_meta(self, obj: Mapping[str, Any], finalizers: list[str]) -> KubeObject:
        meta: dict[str, Any] = {"name": obj["metadata"]["name"], "namespace": obj["metadata"]["namespace"]}
        if finalizers:
            meta["finalizers"] = finalizers
        return self._kube.apply({"apiVersion": API_VERSION, "kind": KIND, "metadata": meta}, APPLY)

    def _live_statefulsets(self, spec: ClusterSpec) -> dict[int, KubeObject]:
        found = self._kube.list(
            "apps/v1", "StatefulSet", namespace=spec.namespace, label_selector=selector(spec.name)
        )
        return {shard_of(s): s for s in found.items}

    def _apply_children(
        self,
        spec: ClusterSpec,
        secret_hash: str,
        previous: Mapping[str, Any],
        live: Mapping[int, KubeObject],
        *,
        redis: TopologyPass | None,
        access: TopologyOptions | None,
    ) -> tuple[UpgradeDecision, dict[int, KubeObject]]:
        templates = [children.pod_template(spec, shard, secret_hash) for shard in range(spec.shards)]
        desired_hash = children.template_hash(templates[0])
        decision = upgrade.decide(
            spec.strategy,
            desired_hash,
            pods=spec.pods_per_shard,
            state=RolloutState.from_status(previous.get("rollout")),
            shards=[observation(live.get(i)) for i in range(spec.shards)],
            now=self._clock(),
            redis_ready=redis is None or redis.verdict.healthy,
        )
        partitions = dict.fromkeys(range(spec.shards), decision.partition)
        if redis is not None and access is not None and decision.template == TemplateChoice.DESIRED:
            # Pods whose redis-server refuses its redis.conf serve nothing: a new template (the
            # directive fixed) may replace them although Redis is unhealthy; nothing else can.
            refused = redis.problem is not None and redis.problem.reason == CONFIG_REJECTED
            if redis.verdict.healthy or refused:
                partitions = self._restarts(spec, redis, partitions, desired_hash, access)
            else:
                # No pod is restarted while Redis is unhealthy: partitions never go down then.
                for shard, sts in live.items():
                    if shard in partitions:
                        running = children.template_hash(sts["spec"]["template"]) == desired_hash
                        floor = partition(sts) if running else spec.pods_per_shard
                        partitions[shard] = max(partitions[shard], floor)
        # The members are labelled before the client Service selects by the label (an upgrade).
        shared = children.shared_children(spec, self._members_only(spec, redis))
        # The ConfigMap the pods mount exists before any pod does: a kubelet retries a missing
        # volume with a backoff, which would hold the pod's start.
        for body in shared:
            if body["kind"] == "ConfigMap":
                self._write(body)
        bodies: list[dict[str, Any]] = []
        for shard in range(spec.shards):
            template = self._template(decision.template, templates[shard], live.get(shard))
            replicas = spec.pods_per_shard
            if redis is not None and not redis.departed and shard in live:
                # Pods leave only once Redis has forgotten them (failover first if one is master).
                replicas = max(replicas, int((live[shard].get("spec") or {}).get("replicas") or 0))
            bodies.append(children.stateful_set(spec, shard, template, partitions[shard], replicas))
        # The StatefulSets next: the pods, and everything after them, wait for them. (Applied one at
        # a time: on a busy machine writes at once only slow each other down.)
        bodies += [body for body in shared if body["kind"] != "ConfigMap"]
        stored = [self._write(body) for body in bodies]
        applied = dict(enumerate(stored[: spec.shards]))
        prune(self._kube, spec, live, keep_departing=redis is not None and not redis.departed)
        return decision, applied

    def _write(self, body: Mapping[str, Any]) -> KubeObject:
        """One child applied, as a span of the reconcile."""
        attributes = {"k8s.kind": str(body["kind"]), "k8s.name": str(body["metadata"]["name"])}
        with span("controller.write", attributes):
            return self._kube.apply(body, APPLY)

    def _restarts(
        self,
        spec: ClusterSpec,
        redis: TopologyPass,
        partitions: dict[int, int],
        desired_hash: str,
        access: TopologyOptions,
    ) -> dict[int, int]:
        """Fail masters over off pods about to restart; hold a shard whose master cannot hand over yet."""
        from syncer.controller import topology_link

        plan = topology_link.restarts(spec, redis.pods, partitions, desired_hash, access)
        held = dict(partitions)
        for shard in plan.held:
            ordinal = topology_link.master_ordinal(redis.pods, shard, redis.masters.get(shard, ""))
            if ordinal is not None:
                held[shard] = max(held[shard], ordinal + 1)
        self._pending_events.extend(plan.events)
        return held

    def _members_only(self, spec: ClusterSpec, redis: TopologyPass | None) -> bool:
        """Label the pods as the topology pass judged their nodes; whether the client Service selects
        members only (never without the topology: nothing judges the nodes then)."""
        if redis is None:
            return False
        from syncer.controller import membership

        selects, event = membership.settle(self._kube, spec, redis)
        self._pending_events.extend([event] if event else [])
        return selects

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

    def _topology(
        self,
        spec: ClusterSpec,
        live: Mapping[int, KubeObject],
        access: TopologyOptions,
        progress: Callable[[int, int], None],
    ) -> TopologyPass:
        """Converge and judge the Redis cluster; while the health watch sees a master that does not
        answer, only judge (Redis fails over on its own, and every command would wait on the silent
        master). A cluster found healthy is watched between reconciles from then on."""
        from syncer.controller import health_probe, topology_link

        kube, health = self._kube, self._health

        def look(told: TopologyOptions) -> TopologyPass:
            if health is None:
                return topology_link.observe_and_converge(kube, spec, live, told, progress)
            return health_probe.look(kube, health, spec, live, told, progress=progress)

        return topology_look(spec, access, look)

    def _progress(
        self, obj: KubeObject, spec: ClusterSpec, found: Mapping[int, KubeObject], log: Log
    ) -> MigrationProgress:
        """What a migration under way writes: the status of this generation, Ready False and
        Reconciling True with the slots moved so far (the rollout state as it was)."""
        rollout = RolloutState.from_status((obj.get("status") or {}).get("rollout"))
        shards = [shard_state(i, found.get(i)) for i in range(spec.shards)]

        def status(verdict: TopologyVerdict) -> dict[str, Any]:
            return compute(Observed(spec, shards, rollout, verdict), obj.get("status") or {}, self._clock())

        def write(verdict: TopologyVerdict) -> None:
            self._status.write(obj, status(verdict), log)

        return MigrationProgress(write, self._options.progress_seconds)

    def _stall(
        self, obj: KubeObject, problem: StallCause, log: Log, spec: ClusterSpec | None = None
    ) -> ReconcileOutcome:
        """Record that nothing can move until the spec (or a referenced Secret) changes."""
        problem = StallCause(problem.reason, scrub(obj, problem.message))
        log.warning("stalled: %s: %s", problem.reason, problem.message)
        meta = obj.get("metadata") or {}
        previous = obj.get("status") or {}
        # A spec that does not parse asks for no pods the metrics could count as missing.
        desired = 0 if spec is None else spec.shards * spec.pods_per_shard
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
        self._status.write(obj, status, log)
        return ReconcileOutcome("sync", "stalled", status=status, desired_pods=desired)

    def _finalize(self, obj: KubeObject, log: Log) -> ReconcileOutcome:
        done, requeue = finalize(self._kube, self._events, obj, log)
        if done:
            self._apply_meta(obj, [])
        return ReconcileOutcome("finalize", "success", requeue_after=requeue)


def _written(obj: KubeObject, applied: Mapping[str, Any]) -> KubeObject:
    """``obj`` as read, with the resourceVersion of this reconcile's own write of it."""
    version = (applied.get("metadata") or {}).get("resourceVersion")
    return {**obj, "metadata": {**obj["metadata"], "resourceVersion": version}} if version else obj
