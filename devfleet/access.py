"""Kubeconfigs for identities other than the fleet admin: a restricted user or a ServiceAccount."""

from __future__ import annotations

from pathlib import Path

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
