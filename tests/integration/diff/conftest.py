"""Shared setup of the diff tests: the RedisCluster CRD on every cluster, a clean slate of
syncer-managed objects around each test, fleet repositories on disk and request counts from metrics."""

from __future__ import annotations

import contextlib
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client
from prometheus_client.parser import text_string_to_metric_families

from devfleet.access import install_redis_crd
from syncer.domain import MANAGED_BY_SELECTOR, Manifest, ObjectKey, applied_body
from syncer.errors import Location, NotFound
from syncer.kube import ClientOptions, ClusterClient
from tests.integration.conftest import FleetHandle

GROUP, VERSION, PLURAL = "redis.syncer.dev", "v1alpha1", "redisclusters"
API_VERSION = f"{GROUP}/{VERSION}"

Counts = Counter[tuple[str, str, str, str]]
"""apiserver_request_total summed by (verb, resource, scope, dry_run)."""


def redis(namespace: str, name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": API_VERSION,
        "kind": "RedisCluster",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"version": "7.2", **spec},
    }


def manifest(cluster: str, body: dict[str, Any]) -> Manifest:
    meta = body["metadata"]
    key = ObjectKey(cluster, GROUP, body["kind"], meta["namespace"], meta["name"])
    return Manifest(key, body["apiVersion"], body, Location("test"))


def kube(fleet: FleetHandle, cluster: str) -> ClusterClient:
    """A client without a rate limit, for setting the scene quickly."""
    return ClusterClient.from_kubeconfig(str(fleet.kubeconfig), cluster, options=ClientOptions(qps=0))


def seed(api: ClusterClient, bodies: list[dict[str, Any]]) -> None:
    """Apply ``bodies`` as a previous sync would have: as syncer, with the body syncer applies."""
    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(lambda b: api.apply(applied_body(manifest(api.cluster, b))), bodies))


def write_repo(root: Path, clusters: list[str], objects: dict[str, list[dict[str, Any]]]) -> Path:
    """A fleet repository whose clusters/<name>/objects.yaml holds each cluster's bodies."""
    fleet = {
        "apiVersion": "syncer.dev/v1alpha1",
        "kind": "Fleet",
        "clusters": [{"name": n} for n in clusters],
    }
    root.mkdir(parents=True, exist_ok=True)
    (root / "fleet.yaml").write_text(yaml.safe_dump(fleet))
    for name, bodies in objects.items():
        folder = root / "clusters" / name
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "objects.yaml").write_text(yaml.safe_dump_all(bodies))
    return root


def request_counts(api: ClusterClient) -> Counts:
    counts: Counts = Counter()
    for family in text_string_to_metric_families(api.get_text("/metrics")):
        if family.name != "apiserver_request":
            continue
        for sample in family.samples:
            if sample.name == "apiserver_request_total":
                labels = sample.labels
                key = (labels["verb"], labels["resource"], labels["scope"], labels.get("dry_run", ""))
                counts[key] += int(sample.value)
    return counts


def _remove_managed(fleet: FleetHandle) -> None:
    """Delete every syncer-managed RedisCluster of the fleet, one collection delete per namespace."""
    for name in fleet.names:
        custom = client.CustomObjectsApi(fleet.api(name))
        listed = custom.list_cluster_custom_object(GROUP, VERSION, PLURAL, label_selector=MANAGED_BY_SELECTOR)
        for namespace in sorted({item["metadata"]["namespace"] for item in listed["items"]}):
            custom.delete_collection_namespaced_custom_object(
                GROUP, VERSION, namespace, PLURAL, label_selector=MANAGED_BY_SELECTOR
            )


def still_terminating(fleet: FleetHandle, timeout: float = 20.0) -> set[str]:
    """The clusters that still have terminating namespaces after waiting up to ``timeout``.

    The namespace controller lists and deletes the contents of a terminating namespace (namespace-scoped
    requests), which would mix with the requests counted; a namespace whose finalizers no one removes
    stays terminating for good, so the caller can only set such requests aside.
    """
    deadline = time.monotonic() + timeout
    busy = set(fleet.names)
    while busy and time.monotonic() < deadline:
        for name in sorted(busy):
            namespaces = client.CoreV1Api(fleet.api(name)).list_namespace().items
            if not any(ns.status.phase == "Terminating" for ns in namespaces):
                busy.discard(name)
        if busy:
            time.sleep(0.5)
    return busy


@pytest.fixture(scope="module")
def crd(fleet: FleetHandle) -> None:
    for name in fleet.names:
        api = kube(fleet, name)
        try:
            install_redis_crd(api, field_manager="diff-tests")
        finally:
            api.close()


@pytest.fixture
def clean_fleet(fleet: FleetHandle, crd: None) -> Iterator[FleetHandle]:
    """The fleet with no syncer-managed RedisCluster before and after the test."""
    _remove_managed(fleet)
    yield fleet
    _remove_managed(fleet)


@pytest.fixture
def target(fleet: FleetHandle, crd_installed: None, namespace: str) -> Iterator[Any]:
    """The test's ``Cluster`` (``sync_kit``): the fleet's first cluster, the test's namespace and a
    state namespace of its own. Afterwards the state namespace and every namespace named after the
    test's (``<namespace>-...``, the ones a test makes beside it) are deleted."""
    from tests.integration.diff.sync_kit import Cluster  # sync_kit builds on this module

    name = fleet.names[0]
    api = ClusterClient.from_kubeconfig(str(fleet.kubeconfig), name)
    made = Cluster(name, str(fleet.kubeconfig), namespace, api, f"{namespace}-state")
    try:
        yield made
    finally:
        for item in api.list("v1", "Namespace").items:
            gone = str(item["metadata"]["name"])
            if gone.startswith(f"{namespace}-"):
                with contextlib.suppress(NotFound):
                    api.delete("v1", "Namespace", gone)
        api.close()
