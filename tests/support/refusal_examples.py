"""One RedisCluster of each refused spec (``syncer.controller.refusals``), with what it is judged
against and its reason: the unit tests judge them in-process, the integration tests on a real
apiserver through the webhook and through the chart's policy."""

from __future__ import annotations

from typing import Any


def cluster(
    version: str = "7.2.5", status: dict[str, Any] | None = None, annotations: Any = None, **spec: Any
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "cache", "namespace": "redis"}
    if annotations:
        meta["annotations"] = annotations
    obj = {"apiVersion": "redis.syncer.dev/v1alpha1", "kind": "RedisCluster", "metadata": meta}
    obj["spec"] = {"version": version, **spec}
    if status:
        obj["status"] = status
    return obj


APPENDONLY = (
    "redisConfig: appendonly must be 'yes' (or left out): without the append-only file a master whose"
    " container restarts in place comes back empty as the same node, before Redis fails it over, and its"
    " replicas copy the empty dataset"
)

# (refusal, new, old, its reason text): one example of each refusal of the list.
EXAMPLES: list[tuple[str, dict[str, Any], dict[str, Any] | None, str]] = [
    ("version", cluster("07.2"), None, "spec.version must be a Redis version 6.0 or newer"),
    ("version", cluster("5.0"), None, "spec.version must be a Redis version 6.0 or newer"),
    (
        "config-names",
        cluster(redisConfig={"Max Memory": "1", "B": "2", "maxmemory": "1gb"}),
        None,
        "redisConfig: 'B' is not a redis.conf directive name (nor are 1 more)",
    ),
    (
        "reserved-directives",
        cluster(redisConfig={"port": "7000", "dir": "/tmp"}),
        None,
        "redisConfig: 'dir', 'port' are set by the controller and cannot be overridden",
    ),
    (
        "reserved-directives",
        cluster(redisConfig={"requirepass": "x"}),
        None,
        "redisConfig: 'requirepass' is set by the controller and cannot be overridden",
    ),
    ("required-appendonly", cluster(redisConfig={"appendonly": "no"}), None, APPENDONLY),
    (
        "downgrade",
        cluster("6.0"),
        cluster("7.2"),
        "spec.version 6.0 is a downgrade from 7.2: a Redis server may not load the data files of a newer"
        ' one; to downgrade anyway, set the annotation redis.syncer.dev/allow-downgrade-to: "6.0"',
    ),
    (
        "storage-shrinks",
        cluster(persistence={"size": "9Gi"}),
        cluster(persistence={"size": "10Gi"}),
        "spec.persistence.size must not shrink or be dropped",
    ),
    (
        "shards-and-memory",
        cluster(shards=2, resources={"limits": {"memory": "1Gi"}}),
        cluster(shards=3, resources={"limits": {"memory": "1Gi"}}),
        "spec.shards may go down only when the remaining shards can hold the data",
    ),
]
