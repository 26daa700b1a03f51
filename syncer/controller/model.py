"""The RedisCluster as the controller reads it: names, labels and a parsed, defaulted spec. Pure.

Defaults are applied here, in memory, when the spec is read; the controller never writes them back
into the object.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from syncer.config.settings import LeaseSettings
from syncer.controller.refusals import refusals_of
from syncer.domain.durations import parse_duration

GROUP = "redis.syncer.dev"
API_VERSION = f"{GROUP}/v1alpha1"
KIND = "RedisCluster"
FIELD_MANAGER = "syncer-controller"
FINALIZER = f"{GROUP}/pvc-retention"

LABEL_APP = "app.kubernetes.io/name"
LABEL_INSTANCE = "app.kubernetes.io/instance"
LABEL_MANAGED_BY = "app.kubernetes.io/managed-by"
LABEL_COMPONENT = "app.kubernetes.io/component"
LABEL_SHARD = f"{GROUP}/shard"
# "true" on a pod whose Redis node the controller has seen in the cluster; the client Service selects
# it (docs/topology.md, "The client Service"). Never in the pod template: a new pod starts without it.
LABEL_MEMBER = f"{GROUP}/member"
ANNOTATION_TEMPLATE_HASH = f"{GROUP}/template-hash"
ANNOTATION_VERSION = f"{GROUP}/version"
ANNOTATION_CONFIG_HASH = f"{GROUP}/config-hash"
ANNOTATION_SECRET_HASH = f"{GROUP}/secret-hash"
# "true" on a RedisCluster: the controller leaves it (and its Redis servers) alone until removed.
ANNOTATION_PAUSED = f"{GROUP}/paused"

REDIS_PORT = 6379
BUS_PORT = 16379
EXPORTER_PORT = 9121
DEFAULT_IMAGE_REPOSITORY = "redis"
DEFAULT_EXPORTER_IMAGE = "oliver006/redis_exporter:v1.62.0"
DEFAULT_VOLUME_SIZE = "1Gi"


class SpecError(ValueError):
    """The spec passed the CRD schema but cannot be reconciled (a reserved directive, a bad duration)."""


def spec_duration(text: str) -> float:
    """Seconds of a duration of the spec (``1h30m``, ``90s``, ``500ms``); SpecError for a bad one."""
    try:
        return parse_duration(text)
    except ValueError as err:
        raise SpecError(f"invalid duration {text!r}: use numbers with ms, s, m or h, such as 1m30s") from err


@dataclass(frozen=True)
class RolloutStep:
    """One rollout step: ``pods`` pods or ``percent`` of the pods of each shard, then ``pause`` seconds."""

    pods: int = 0
    percent: int = 0
    pause: float = 0.0


@dataclass(frozen=True)
class Strategy:
    steps: tuple[RolloutStep, ...] = ()
    step_timeout: float = 600.0
    revert_on_failure: bool = True


@dataclass(frozen=True)
class SecretRef:
    name: str
    key: str = ""


@dataclass(frozen=True)
class ClusterSpec:
    """A RedisCluster's spec with every default applied."""

    name: str
    namespace: str
    uid: str
    generation: int
    version: str
    shards: int = 3
    replicas_per_shard: int = 1
    image: str = ""
    resources: Mapping[str, Any] = field(default_factory=dict)
    persistence: bool = True
    volume_size: str = DEFAULT_VOLUME_SIZE
    storage_class: str = ""
    retention: str = "Retain"
    auth: SecretRef | None = None
    tls: SecretRef | None = None
    redis_config: tuple[tuple[str, str], ...] = ()
    exporter: bool = False
    exporter_image: str = DEFAULT_EXPORTER_IMAGE
    exporter_resources: Mapping[str, Any] = field(default_factory=dict)
    pod_labels: Mapping[str, str] = field(default_factory=dict)
    pod_annotations: Mapping[str, str] = field(default_factory=dict)
    scheduling: Mapping[str, Any] = field(default_factory=dict)
    pdb: bool = True
    max_unavailable: int = 1
    strategy: Strategy = Strategy()

    @property
    def pods_per_shard(self) -> int:
        return 1 + self.replicas_per_shard

    @property
    def redis_image(self) -> str:
        return self.image or f"{DEFAULT_IMAGE_REPOSITORY}:{self.version}"

    def secret_names(self) -> tuple[str, ...]:
        return tuple(ref.name for ref in (self.auth, self.tls) if ref is not None)


def _section(spec: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    value = spec.get(key)
    return value if isinstance(value, Mapping) else {}


def _strategy(raw: Mapping[str, Any]) -> Strategy:
    steps = []
    for item in raw.get("steps") or ():
        pods, percent = int(item.get("pods") or 0), int(item.get("percent") or 0)
        if (pods > 0) == (percent > 0):
            raise SpecError("each rollout step sets exactly one of pods and percent")
        steps.append(RolloutStep(pods, percent, spec_duration(item["pause"]) if item.get("pause") else 0.0))
    return Strategy(
        steps=tuple(steps),
        step_timeout=spec_duration(str(raw.get("stepTimeout") or "10m")),
        revert_on_failure=bool(raw.get("revertOnFailure", True)),
    )


def _redis_config(raw: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    pairs = []
    for key, value in sorted(raw.items()):
        if "\n" in str(value) or "\r" in str(value):
            raise SpecError(f"redisConfig: the value of {key!r} spans lines")
        pairs.append((key, str(value)))
    return tuple(pairs)


def parse(obj: Mapping[str, Any]) -> ClusterSpec:
    """The defaulted spec of a RedisCluster object; ``SpecError`` when it cannot be reconciled: one of
    the refusals (``syncer.controller.refusals``) the controller judges, with their reasons."""
    meta = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    if not spec.get("version"):
        raise SpecError("spec.version is required")
    refused = refusals_of(obj, obj, controller=True)
    if refused:
        raise SpecError("; ".join(message for _, message in refused))
    persistence = _section(spec, "persistence")
    exporter = _section(spec, "exporter")
    pdb = _section(spec, "podDisruptionBudget")
    pod_meta = _section(spec, "podMetadata")
    auth = _section(_section(spec, "auth"), "secretRef")
    tls = _section(_section(spec, "tls"), "secretRef")
    scheduling = {
        key: spec[key]
        for key in ("affinity", "tolerations", "topologySpreadConstraints", "securityContext")
        if spec.get(key)
    }
    return ClusterSpec(
        name=str(meta.get("name", "")),
        namespace=str(meta.get("namespace", "")),
        uid=str(meta.get("uid", "")),
        generation=int(meta.get("generation") or 0),
        version=str(spec["version"]),
        shards=int(spec.get("shards", 3)),
        replicas_per_shard=int(spec.get("replicasPerShard", 1)),
        image=str(spec.get("image") or ""),
        resources=dict(_section(spec, "resources")),
        persistence=bool(persistence.get("enabled", True)),
        volume_size=str(persistence.get("size") or DEFAULT_VOLUME_SIZE),
        storage_class=str(persistence.get("storageClassName") or ""),
        retention=str(persistence.get("retentionPolicy") or "Retain"),
        auth=SecretRef(str(auth["name"]), str(auth.get("key") or "password")) if auth else None,
        tls=SecretRef(str(tls["name"])) if tls else None,
        redis_config=_redis_config(_section(spec, "redisConfig")),
        exporter=bool(exporter.get("enabled", False)),
        exporter_image=str(exporter.get("image") or DEFAULT_EXPORTER_IMAGE),
        exporter_resources=dict(_section(exporter, "resources")),
        pod_labels={str(k): str(v) for k, v in _section(pod_meta, "labels").items()},
        pod_annotations={str(k): str(v) for k, v in _section(pod_meta, "annotations").items()},
        scheduling=scheduling,
        pdb=bool(pdb.get("enabled", True)),
        max_unavailable=int(pdb.get("maxUnavailable", 1)),
        strategy=_strategy(_section(spec, "rolloutStrategy")),
    )


CONTROLLER_LEASE = LeaseSettings(name="syncer-controller", namespace="default")
"""The Lease of the controller's leader, by default (the agent's timing)."""


@dataclass(frozen=True)
class ControllerOptions:
    """How a controller runs. ``topology`` asks the Redis servers themselves (off on kwok clusters)."""

    kubeconfig: str = ""
    context: str = ""
    cluster: str = ""  # the cluster's name in every log line (default: the context)
    watch_namespace: str = ""
    workers: int = 2
    resync_seconds: float = 300.0
    watch_timeout_seconds: int = 60
    poll_seconds: float = 5.0
    topology: bool = False
    topology_timeout: float = 5.0
    # While Ready, the Redis topology is looked at again this often (seconds).
    topology_interval: float = 10.0
    # How long one pass waits for gossip to settle after a change (meet, new master) before moving slots.
    topology_settle_seconds: float = 10.0
    # Between reconciles every member of a healthy cluster is asked this often (seconds), each call
    # bounded by health_timeout; an outage needs health_fail_rounds bad rounds in a row to show and
    # health_recover_rounds good ones to end (docs/controller.md, "Redis-level health").
    health_interval: float = 0.25
    health_timeout: float = 0.4
    health_fail_rounds: int = 2
    health_recover_rounds: int = 4
    # While slots move, the status says how many have moved at most this often (seconds).
    progress_seconds: float = 1.0
    leader_elect: bool = True
    # The Lease the leader holds; it acts (writes, sends Redis commands) only while the Lease is held
    # for longer than ``duration - renew_deadline`` more seconds (``syncer.leader.fence``).
    lease: LeaseSettings = CONTROLLER_LEASE
    # This replica's name in the Lease, in its Events and in the user agent of its requests.
    identity: str = ""
