"""Where the controller meets the Redis topology module: pod endpoints in, a status verdict out.

Used only when the controller runs with ``topology`` on (pods with real Redis servers behind them).
"""

from __future__ import annotations

from collections.abc import Sequence

from syncer.controller import topology
from syncer.controller.model import LABEL_INSTANCE, LABEL_SHARD, REDIS_PORT, ClusterSpec, ControllerOptions
from syncer.controller.status import ShardState, TopologyVerdict, shard_ready
from syncer.errors import SyncerError
from syncer.kube import KubeApi


def _ordinal(name: str) -> int:
    tail = name.rsplit("-", 1)[-1]
    return int(tail) if tail.isdigit() else 0


def endpoints(kube: KubeApi, spec: ClusterSpec) -> list[list[topology.RedisNode]]:
    """Per shard, its pods' endpoints in ordinal order: pod 0 is the shard's first master."""
    pods = kube.list(
        "v1", "Pod", namespace=spec.namespace, label_selector=f"{LABEL_INSTANCE}={spec.name}"
    ).items
    shards: list[list[tuple[int, topology.RedisNode]]] = [[] for _ in range(spec.shards)]
    for pod in pods:
        labels = (pod.get("metadata") or {}).get("labels") or {}
        ip = (pod.get("status") or {}).get("podIP")
        shard = int(labels.get(LABEL_SHARD, -1))
        if ip and 0 <= shard < spec.shards:
            shards[shard].append((_ordinal(pod["metadata"]["name"]), topology.RedisNode(ip, REDIS_PORT)))
    return [[node for _, node in sorted(members)] for members in shards]


def verdict(
    kube: KubeApi,
    spec: ClusterSpec,
    shards: Sequence[ShardState],
    options: ControllerOptions,
    password: str | None,
) -> TopologyVerdict:
    """Inspect the Redis cluster; form it (idempotently) when all pods are Ready and it is not whole."""
    if not all(shard_ready(s, spec.pods_per_shard) for s in shards):
        return TopologyVerdict(False, "waiting for every pod to be Ready before checking the Redis cluster")
    layout = endpoints(kube, spec)
    nodes = [node for shard in layout for node in shard]
    if not nodes:
        return TopologyVerdict(False, "no pod has an IP yet")
    settings = topology.TopologyOptions(timeout=options.topology_timeout, password=password)
    try:
        report = topology.inspect(nodes, spec.shards, settings)
        if not report.healthy and not report.failed_nodes:
            report = topology.bootstrap(layout, settings)
    except (SyncerError, OSError, ValueError) as err:
        return TopologyVerdict(False, f"Redis topology: {err}")
    if report.healthy:
        return TopologyVerdict(True, f"cluster_state {report.cluster_state}, {report.slots_covered} slots")
    problems = [*report.errors, *(f"node {n} failed" for n in report.failed_nodes)]
    detail = "; ".join(problems) or f"cluster_state {report.cluster_state}"
    return TopologyVerdict(
        False, f"Redis topology unhealthy: {detail} ({report.slots_covered} slots covered)"
    )
