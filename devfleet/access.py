"""Kubeconfigs for identities other than the fleet admin: a restricted user or a ServiceAccount."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from kubernetes import client

from devfleet import kubeconfig
from devfleet.fleet import Fleet
from devfleet.nodes import admin_client


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
                client.apply(doc, ApplyOptions(field_manager="syncer-fleet", force=True))
                done.append(f"{cluster}: {doc['kind']}/{doc['metadata']['name']} applied")
            for doc in documents:
                if doc["kind"] == "CustomResourceDefinition":
                    _wait_established(client, doc["apiVersion"], doc["metadata"]["name"])
        finally:
            client.close()
    return done


def _wait_established(client: Any, api_version: str, name: str, timeout: float = 60.0) -> None:
    """Wait until a CRD is Established, so objects of its kind can be applied right away."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        crd = client.get(api_version, "CustomResourceDefinition", name)
        conditions = (crd.get("status") or {}).get("conditions") or []
        if any(c.get("type") == "Established" and c.get("status") == "True" for c in conditions):
            return
        time.sleep(0.2)
    raise TimeoutError(f"CustomResourceDefinition {name} not Established after {timeout:.0f}s")
