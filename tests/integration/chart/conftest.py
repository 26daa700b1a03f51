"""Fixtures of the chart's admission tests: its admission objects applied for the test's namespace,
and the controller's webhook server on loopback (see admission_kit)."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from devfleet.pki import CertificateAuthority
from syncer.controller.admission_server import AdmissionOptions, AdmissionServer, start_admission_server
from syncer.kube import ClusterClient
from tests.integration.chart.admission_kit import Admission, apply, kubectl
from tests.integration.chart.kit import agent_values, render
from tests.integration.conftest import FleetHandle


@pytest.fixture
def chart_admission(fleet: FleetHandle, cluster: str, namespace: str, tmp_path: Path) -> Iterator[Any]:
    """``chart_admission(kinds, **webhook_values)`` renders the chart for ``namespace`` and applies its
    objects of ``kinds``; a ValidatingWebhookConfiguration gets ``url`` and ``ca`` as clientConfig."""
    applied: list[dict[str, Any]] = []

    def _apply(kinds: tuple[str, ...], url: str = "", ca: bytes = b"", **webhook: Any) -> Admission:
        values = agent_values(
            controller={"watchNamespace": namespace},
            admission={"webhook": {"timeoutSeconds": 2, **webhook}},
        )
        objects = render(tmp_path, values, release=f"adm-{namespace[-8:]}", namespace=namespace)
        chosen = [o for o in objects if o["kind"] in kinds]
        for obj in chosen:
            if obj["kind"] == "ValidatingWebhookConfiguration":
                obj["webhooks"][0]["clientConfig"] = {"url": url, "caBundle": base64.b64encode(ca).decode()}
        done = apply(fleet, cluster, *chosen)
        assert done.returncode == 0, done.stderr
        applied.extend(chosen)
        return Admission(objects, chosen)

    yield _apply
    if applied:
        done = kubectl(
            fleet, cluster, "delete", "--ignore-not-found", "-f", "-", stdin=yaml.safe_dump_all(applied)
        )
        assert done.returncode == 0, done.stderr


@pytest.fixture
def webhook_server(
    fleet: FleetHandle, cluster: str, tmp_path: Path
) -> Iterator[tuple[AdmissionServer, bytes]]:
    """The controller's admission server on a free loopback port, with a certificate for 127.0.0.1."""
    ca = CertificateAuthority.create(tmp_path / "ca", "webhook-ca")
    certs = tmp_path / "certs"
    certs.mkdir()
    pair = ca.issue(certs / "tls", "webhook", server_ips=("127.0.0.1",))
    assert (pair.cert, pair.key) == (certs / "tls.crt", certs / "tls.key")
    kube = ClusterClient.from_kubeconfig(str(fleet.kubeconfig), cluster)
    server, thread = start_admission_server(kube, AdmissionOptions(certs, port=0, host="127.0.0.1"))
    try:
        yield server, ca.cert_path.read_bytes()
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
        kube.close()
