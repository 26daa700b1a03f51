"""Kubeconfig files for the local fleet: one context per cluster, or one identity for one cluster."""

from __future__ import annotations

import base64
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml


def _b64(path: Path) -> str:
    return base64.b64encode(path.read_bytes()).decode()


@dataclass(frozen=True)
class Credentials:
    """Either a client certificate pair or a bearer token."""

    cert: Path | None = None
    key: Path | None = None
    token: str | None = None

    def user_entry(self) -> dict[str, str]:
        if self.token is not None:
            return {"token": self.token}
        if self.cert is None or self.key is None:
            raise ValueError("credentials need a certificate and key, or a token")
        return {"client-certificate-data": _b64(self.cert), "client-key-data": _b64(self.key)}


@dataclass(frozen=True)
class Endpoint:
    """Where a cluster's apiserver listens and the CA that signed its serving certificate."""

    cluster: str
    server: str
    ca_cert: Path


def render(entries: list[tuple[Endpoint, str, Credentials]], current: str) -> dict[str, Any]:
    """A kubeconfig document; each entry is (endpoint, user name, credentials) and gets a context."""
    clusters, users, contexts = [], [], []
    for endpoint, user, creds in entries:
        clusters.append(
            {
                "name": endpoint.cluster,
                "cluster": {"server": endpoint.server, "certificate-authority-data": _b64(endpoint.ca_cert)},
            }
        )
        user_name = f"{user}@{endpoint.cluster}"
        users.append({"name": user_name, "user": creds.user_entry()})
        contexts.append(
            {"name": endpoint.cluster, "context": {"cluster": endpoint.cluster, "user": user_name}}
        )
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": clusters,
        "users": users,
        "contexts": contexts,
        "current-context": current,
        "preferences": {},
    }


def write(path: Path, document: dict[str, Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    path.chmod(0o600)
    return path
