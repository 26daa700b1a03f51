"""Kubeconfigs for identities other than the fleet admin: a restricted user or a ServiceAccount."""

from __future__ import annotations

import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from kubernetes import client

from devfleet import kubeconfig
from devfleet.fleet import Fleet
from devfleet.nodes import admin_client

FIELD_MANAGER = "syncer-fleet"
"""The field manager the fleet's ``apply`` command writes as."""


def user_kubeconfig(fleet: Fleet, cluster: str, user: str, groups: tuple[str, ...], out: Path) -> Path:
    """A kubeconfig authenticating as ``user`` (in ``groups``) by a client certificate of the cluster CA."""
    c = fleet.cluster(cluster)
    stem = out.parent / f".{out.name}-{user}"
    out.parent.mkdir(parents=True, exist_ok=True)
    pair = c.ca.issue(stem, user, organizations=groups)
    creds = kubeconfig.Credentials(cert=pair.cert, key=pair.key)
    doc = kubeconfig.render([(c.endpoint, user, creds)], cluster)
    pair.cert.unlink()
    pair.key.unlink()
    return kubeconfig.write(out, doc)


def service_account_kubeconfig(fleet: Fleet, cluster: str, namespace: str, name: str, out: Path) -> Path:
    """A kubeconfig holding a one-hour bound token (TokenRequest API) of ServiceAccount ``namespace/name``."""
    c = fleet.cluster(cluster)
    with admin_client(fleet.kubeconfig, cluster) as api_client:
        core = client.CoreV1Api(api_client)
        request = client.AuthenticationV1TokenRequest(
            spec=client.V1TokenRequestSpec(audiences=[], expiration_seconds=3600)
        )
        status = core.create_namespaced_service_account_token(name, namespace, request).status
        if status is None or not status.token:
            raise RuntimeError(f"the apiserver issued no token for ServiceAccount {namespace}/{name}")
        token = status.token
    user = f"system:serviceaccount:{namespace}:{name}"
    doc = kubeconfig.render([(c.endpoint, user, kubeconfig.Credentials(token=token))], cluster)
    return kubeconfig.write(out, doc)


def apply_files(fleet: Fleet, files: list[Path], clusters: tuple[str, ...] = ()) -> list[str]:
    """Server-side apply every document of ``files`` to ``clusters`` (all by default) as the fleet
    admin, with field manager ``syncer-fleet``; returns one line per object applied."""
    import yaml

    from syncer.kube import ApplyOptions, ClusterClient

    documents = [doc for path in files for doc in yaml.safe_load_all(path.read_text()) if doc]
    done = []
    for cluster in clusters or tuple(c.name for c in fleet.clusters):
        client = ClusterClient.from_kubeconfig(str(fleet.kubeconfig), cluster)
        try:
            for doc in documents:
                client.apply(doc, ApplyOptions(field_manager=FIELD_MANAGER, force=True))
                done.append(f"{cluster}: {doc['kind']}/{doc['metadata']['name']} applied")
            for doc in documents:
                if doc["kind"] == "CustomResourceDefinition":
                    wait_served(client, doc)
        finally:
            client.close()
    return done


def wait_served(client: Any, crd: Mapping[str, Any], timeout: float = 60.0) -> None:
    """Wait until a CRD is Established and its kind can be listed, so objects of it can be applied at
    once (the apiserver may answer 404 or 503 for a moment after Established)."""
    from syncer.errors import NotFound, ServerError

    spec = crd["spec"]
    version = next(v["name"] for v in spec["versions"] if v.get("served", True))
    api_version, kind = f"{spec['group']}/{version}", spec["names"]["kind"]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        live = client.get(crd["apiVersion"], "CustomResourceDefinition", crd["metadata"]["name"])
        conditions = (live.get("status") or {}).get("conditions") or []
        if any(c.get("type") == "Established" and c.get("status") == "True" for c in conditions):
            try:
                client.list(api_version, kind)
                return
            except (NotFound, ServerError):
                pass
        time.sleep(0.2)
    raise TimeoutError(f"CustomResourceDefinition {crd['metadata']['name']} not served after {timeout:.0f}s")


def install_redis_crd(client: Any, field_manager: str = "syncer-fleet") -> None:
    """Apply syncer's RedisCluster CRD to one cluster (server-side, forced) and wait until it is served."""
    from syncer.crds import load_crd
    from syncer.kube import ApplyOptions

    crd = load_crd()
    client.apply(crd, ApplyOptions(field_manager=field_manager, force=True))
    wait_served(client, crd)
