"""Desired children of a RedisCluster. Pure: a parsed spec in, Kubernetes bodies out.

Per cluster: a ConfigMap with redis.conf, a headless Service (stable pod DNS, cluster bus) and a client
Service (with the topology on, of the pods labelled as members of the Redis cluster only). Per shard: a
StatefulSet (pod 0 starts as master, the others as its replicas) and a PodDisruptionBudget. Every child
carries the instance labels and a controller owner reference.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from syncer.controller.model import (
    ANNOTATION_CONFIG_HASH,
    ANNOTATION_SECRET_HASH,
    ANNOTATION_TEMPLATE_HASH,
    ANNOTATION_VERSION,
    API_VERSION,
    BUS_PORT,
    EXPORTER_PORT,
    FIELD_MANAGER,
    KIND,
    LABEL_APP,
    LABEL_INSTANCE,
    LABEL_MANAGED_BY,
    LABEL_MEMBER,
    LABEL_SHARD,
    REDIS_PORT,
    ClusterSpec,
)

Body = dict[str, Any]

# Where the Secret named by spec.tls is mounted in the Redis container and the exporter sidecar.
TLS_MOUNT = "/tls"


def digest(value: Any) -> str:
    """A short stable hash of a JSON-able value."""
    return hashlib.sha256(json.dumps(value, sort_keys=True).encode()).hexdigest()[:16]


def config_name(spec: ClusterSpec) -> str:
    return f"{spec.name}-config"


def headless_name(spec: ClusterSpec) -> str:
    return f"{spec.name}-headless"


def shard_name(spec: ClusterSpec, shard: int) -> str:
    return f"{spec.name}-shard-{shard}"


def labels(spec: ClusterSpec, shard: int | None = None) -> dict[str, str]:
    found = {LABEL_APP: "redis", LABEL_INSTANCE: spec.name, LABEL_MANAGED_BY: FIELD_MANAGER}
    if shard is not None:
        found[LABEL_SHARD] = str(shard)
    return found


def selector(spec: ClusterSpec, shard: int | None = None) -> dict[str, str]:
    found = {LABEL_APP: "redis", LABEL_INSTANCE: spec.name}
    if shard is not None:
        found[LABEL_SHARD] = str(shard)
    return found


def owner_reference(spec: ClusterSpec) -> Body:
    return {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "name": spec.name,
        "uid": spec.uid,
        "controller": True,
        "blockOwnerDeletion": True,
    }


def _meta(spec: ClusterSpec, name: str, shard: int | None = None) -> Body:
    return {
        "name": name,
        "namespace": spec.namespace,
        "labels": labels(spec, shard),
        "ownerReferences": [owner_reference(spec)],
    }


def redis_conf(spec: ClusterSpec) -> str:
    """The redis.conf every server of the cluster starts with; ``spec.redisConfig`` comes last."""
    lines = [
        "# Rendered by syncer-controller; edit spec.redisConfig of the RedisCluster instead.",
        "cluster-enabled yes",
        "cluster-config-file /data/nodes.conf",
        "cluster-node-timeout 5000",
        "dir /data",
        "appendonly yes",
        "protected-mode no",
    ]
    if spec.tls is not None:
        lines += [
            "port 0",
            f"tls-port {REDIS_PORT}",
            f"tls-cert-file {TLS_MOUNT}/tls.crt",
            f"tls-key-file {TLS_MOUNT}/tls.key",
            f"tls-ca-cert-file {TLS_MOUNT}/ca.crt",
            "tls-cluster yes",
            "tls-replication yes",
        ]
    else:
        lines.append(f"port {REDIS_PORT}")
    lines += [f"{key} {value}" for key, value in spec.redis_config]
    return "\n".join(lines) + "\n"


def config_map(spec: ClusterSpec) -> Body:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": _meta(spec, config_name(spec)),
        "data": {"redis.conf": redis_conf(spec)},
    }


def _ports() -> list[Body]:
    return [
        {"name": "redis", "port": REDIS_PORT, "targetPort": "redis", "protocol": "TCP"},
        {"name": "bus", "port": BUS_PORT, "targetPort": "bus", "protocol": "TCP"},
    ]


def headless_service(spec: ClusterSpec) -> Body:
    """The peers' Service: every pod, Ready or not, member or not; with the exporter on it also
    serves its metrics port, so a pod held out of the client Service is scraped too."""
    ports = _ports()
    if spec.exporter:
        ports.append({"name": "metrics", "port": EXPORTER_PORT, "targetPort": "metrics", "protocol": "TCP"})
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": _meta(spec, headless_name(spec)),
        "spec": {
            "clusterIP": "None",
            "publishNotReadyAddresses": True,
            "selector": selector(spec),
            "ports": ports,
        },
    }


def client_service(spec: ClusterSpec, members_only: bool = False) -> Body:
    """The client Service.

    ``members_only``: it selects only the pods labelled as members of the Redis cluster (the
    controller labels them once it has seen their node in the cluster; the headless Service, the
    StatefulSets and the budgets select every pod)."""
    ports: list[Body] = [{"name": "redis", "port": REDIS_PORT, "targetPort": "redis", "protocol": "TCP"}]
    chosen = {**selector(spec), LABEL_MEMBER: "true"} if members_only else selector(spec)
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": _meta(spec, spec.name),
        "spec": {"type": "ClusterIP", "selector": chosen, "ports": ports},
    }


def pod_disruption_budget(spec: ClusterSpec, shard: int) -> Body:
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": _meta(spec, shard_name(spec, shard), shard),
        "spec": {"maxUnavailable": spec.max_unavailable, "selector": {"matchLabels": selector(spec, shard)}},
    }


def _redis_container(spec: ClusterSpec) -> Body:
    args = ["/etc/redis/redis.conf"]
    container: Body = {
        "name": "redis",
        "image": spec.redis_image,
        "command": ["redis-server"],
        # redis-server prints why it refuses to start (a bad redis.conf) and exits: the kubelet keeps
        # those lines in the container's status, where the controller reads them (startup.py).
        "terminationMessagePolicy": "FallbackToLogsOnError",
        "ports": [
            {"name": "redis", "containerPort": REDIS_PORT, "protocol": "TCP"},
            {"name": "bus", "containerPort": BUS_PORT, "protocol": "TCP"},
        ],
        "env": [{"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}],
        "volumeMounts": [
            {"name": "data", "mountPath": "/data"},
            {"name": "config", "mountPath": "/etc/redis"},
        ],
        "readinessProbe": {
            "tcpSocket": {"port": "redis"},
            "periodSeconds": 5,
            "failureThreshold": 3,
        },
    }
    args += ["--cluster-announce-ip", "$(POD_IP)"]
    if spec.auth is not None:
        container["env"].append(
            {
                "name": "REDIS_PASSWORD",
                "valueFrom": {"secretKeyRef": {"name": spec.auth.name, "key": spec.auth.key}},
            }
        )
        args += ["--requirepass", "$(REDIS_PASSWORD)", "--masterauth", "$(REDIS_PASSWORD)"]
    if spec.tls is not None:
        container["volumeMounts"].append({"name": "tls", "mountPath": TLS_MOUNT, "readOnly": True})
    if spec.resources:
        container["resources"] = dict(spec.resources)
    container["args"] = args
    return container


def _exporter_container(spec: ClusterSpec) -> Body:
    container: Body = {
        "name": "exporter",
        "image": spec.exporter_image,
        "ports": [{"name": "metrics", "containerPort": EXPORTER_PORT, "protocol": "TCP"}],
        "env": [{"name": "REDIS_ADDR", "value": f"redis://127.0.0.1:{REDIS_PORT}"}],
    }
    if spec.tls is not None:
        # With spec.tls Redis serves only TLS (``port 0``) and asks clients for a certificate: the
        # sidecar shows the pod's own. The server's certificate names the pod, not the loopback
        # address the sidecar dials inside the pod, so the name is not checked there.
        container["env"] = [
            {"name": "REDIS_ADDR", "value": f"rediss://127.0.0.1:{REDIS_PORT}"},
            {"name": "REDIS_EXPORTER_TLS_CA_CERT_FILE", "value": f"{TLS_MOUNT}/ca.crt"},
            {"name": "REDIS_EXPORTER_TLS_CLIENT_CERT_FILE", "value": f"{TLS_MOUNT}/tls.crt"},
            {"name": "REDIS_EXPORTER_TLS_CLIENT_KEY_FILE", "value": f"{TLS_MOUNT}/tls.key"},
            {"name": "REDIS_EXPORTER_SKIP_TLS_VERIFICATION", "value": "true"},
        ]
        container["volumeMounts"] = [{"name": "tls", "mountPath": TLS_MOUNT, "readOnly": True}]
    if spec.auth is not None:
        container["env"].append(
            {
                "name": "REDIS_PASSWORD",
                "valueFrom": {"secretKeyRef": {"name": spec.auth.name, "key": spec.auth.key}},
            }
        )
    if spec.exporter_resources:
        container["resources"] = dict(spec.exporter_resources)
    return container


def pod_template(spec: ClusterSpec, shard: int, secret_hash: str = "") -> Body:
    """The pod template of one shard, its own hash in the ``template-hash`` annotation."""
    annotations = dict(spec.pod_annotations)
    annotations[ANNOTATION_VERSION] = spec.version
    annotations[ANNOTATION_CONFIG_HASH] = digest(redis_conf(spec))
    if secret_hash:
        annotations[ANNOTATION_SECRET_HASH] = secret_hash
    containers = [_redis_container(spec)]
    if spec.exporter:
        containers.append(_exporter_container(spec))
    volumes: list[Body] = [{"name": "config", "configMap": {"name": config_name(spec)}}]
    if not spec.persistence:
        volumes.append({"name": "data", "emptyDir": {}})
    if spec.tls is not None:
        volumes.append({"name": "tls", "secret": {"secretName": spec.tls.name}})
    pod_spec: Body = {"containers": containers, "volumes": volumes, "terminationGracePeriodSeconds": 30}
    pod_spec.update(spec.scheduling)
    template: Body = {
        "metadata": {"labels": {**spec.pod_labels, **labels(spec, shard)}, "annotations": annotations},
        "spec": pod_spec,
    }
    # The shard label differs between shards; the hash covers what makes pods of any shard differ in kind.
    shape = {**template, "metadata": {**template["metadata"], "labels": {**spec.pod_labels}}}
    template["metadata"]["annotations"][ANNOTATION_TEMPLATE_HASH] = digest(shape)
    return template


def template_hash(template: Mapping[str, Any]) -> str:
    """The ``template-hash`` annotation of a pod template ("" when it has none)."""
    annotations = (template.get("metadata") or {}).get("annotations") or {}
    return str(annotations.get(ANNOTATION_TEMPLATE_HASH, ""))


def template_version(template: Mapping[str, Any]) -> str:
    annotations = (template.get("metadata") or {}).get("annotations") or {}
    return str(annotations.get(ANNOTATION_VERSION, ""))


def stateful_set(
    spec: ClusterSpec, shard: int, template: Mapping[str, Any], partition: int, replicas: int | None = None
) -> Body:
    """One shard's StatefulSet running ``template``, updating pods from ordinal ``partition`` up.

    ``replicas`` (default: the spec's pods per shard) lets the caller keep pods that must leave the
    Redis cluster before they are deleted."""
    body: Body = {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": _meta(spec, shard_name(spec, shard), shard),
        "spec": {
            "serviceName": headless_name(spec),
            "replicas": spec.pods_per_shard if replicas is None else replicas,
            # Parallel: a pod that never gets Ready must not block a revert of the template.
            "podManagementPolicy": "Parallel",
            "selector": {"matchLabels": selector(spec, shard)},
            "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": partition}},
            "template": dict(template),
        },
    }
    if spec.persistence:
        claim: Body = {
            "accessModes": ["ReadWriteOnce"],
            "resources": {"requests": {"storage": spec.volume_size}},
        }
        if spec.storage_class:
            claim["storageClassName"] = spec.storage_class
        body["spec"]["volumeClaimTemplates"] = [
            {"metadata": {"name": "data", "labels": labels(spec, shard)}, "spec": claim}
        ]
    return body


def shared_children(spec: ClusterSpec, members_only: bool = False) -> list[Body]:
    """The children that do not depend on rollout state: ConfigMap, Services and PDBs
    (``members_only``: see ``client_service``)."""
    found = [config_map(spec), headless_service(spec), client_service(spec, members_only)]
    if spec.pdb:
        found += [pod_disruption_budget(spec, shard) for shard in range(spec.shards)]
    return found
