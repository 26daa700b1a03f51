"""Fake nodes for kwok to run, and the wait until a cluster can schedule and run pods."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from pathlib import Path

from kubernetes import client, config
from kubernetes.client.exceptions import ApiException

from devfleet import storage

ZONES = ("zone-a", "zone-b", "zone-c")


def node_body(name: str, index: int = 0) -> client.V1Node:
    """A fake node for kwok, in one of ``ZONES`` (round robin) so topology spread constraints work."""
    resources = {"cpu": "32", "memory": "256Gi", "pods": "110"}
    return client.V1Node(
        metadata=client.V1ObjectMeta(
            name=name,
            annotations={"node.alpha.kubernetes.io/ttl": "0", "kwok.x-k8s.io/node": "fake"},
            labels={
                "kubernetes.io/arch": "amd64",
                "kubernetes.io/os": "linux",
                "kubernetes.io/hostname": name,
                "topology.kubernetes.io/region": "local",
                "topology.kubernetes.io/zone": ZONES[index % len(ZONES)],
                "type": "kwok",
            },
        ),
        status=client.V1NodeStatus(allocatable=resources, capacity=resources),
    )


def _ready(node: client.V1Node) -> bool:
    conditions = node.status.conditions if node.status else None
    return any(c.type == "Ready" and c.status == "True" for c in conditions or [])


@contextlib.contextmanager
def admin_client(kubeconfig: Path, context: str) -> Iterator[client.ApiClient]:
    """An API client for one context of a kubeconfig, closed on exit."""
    api_client: client.ApiClient = config.new_client_from_config(  # type: ignore[no-untyped-call]
        config_file=str(kubeconfig), context=context
    )
    try:
        yield api_client
    finally:
        api_client.close()  # type: ignore[no-untyped-call]


def prepare(kubeconfig: Path, context: str, count: int, deadline: float) -> None:
    """Register ``count`` kwok nodes; wait until they are Ready and the default ServiceAccount exists."""
    with admin_client(kubeconfig, context) as api_client:
        core = client.CoreV1Api(api_client)
        names = [f"kwok-node-{i}" for i in range(count)]
        storage.provision(api_client)
        for index, name in enumerate(names):
            try:
                core.create_node(node_body(name, index))
            except ApiException as err:
                if err.status != 409:
                    raise
        while True:
            ready = [
                n for n in core.list_node().items if n.metadata and n.metadata.name in names and _ready(n)
            ]
            sa = core.list_namespaced_service_account("default", field_selector="metadata.name=default").items
            if len(ready) == count and sa:
                return
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f"{context}: {len(ready)}/{count} kwok nodes Ready, default ServiceAccount "
                    f"{'present' if sa else 'missing'}; see the kwok and kube-controller-manager logs"
                )
            time.sleep(0.3)
