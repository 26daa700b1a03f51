"""Admission objects of the chart on a real apiserver: kubectl as a person runs it, the chart's
admission objects applied for one test namespace, and the controller's webhook server on loopback.

The chart's admission objects are rendered with ``controller.watchNamespace`` set to the test's own
namespace, so their bindings touch nothing else of the shared fleet. The local fleet has no pod
network, so the apiserver cannot reach a webhook through a Service: the rendered
ValidatingWebhookConfiguration is applied as the chart renders it (rules, matchConditions,
failurePolicy, timeout, namespace selector) except that its clientConfig names the webhook server the
test runs, by URL, with a certificate minted for 127.0.0.1.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from typing import Any

import yaml

from tests.integration.conftest import FleetHandle
from tests.support.waiting import eventually


def kubectl(
    fleet: FleetHandle, cluster: str, *args: str, stdin: str = ""
) -> subprocess.CompletedProcess[str]:
    argv = ["kubectl", "--kubeconfig", str(fleet.kubeconfig), "--context", cluster, *args]
    return subprocess.run(argv, input=stdin, capture_output=True, text=True, timeout=60, check=False)


def apply(fleet: FleetHandle, cluster: str, *objects: dict[str, Any]) -> subprocess.CompletedProcess[str]:
    """``kubectl apply -f -`` of the objects, as a person would apply a file."""
    return kubectl(fleet, cluster, "apply", "-f", "-", stdin=yaml.safe_dump_all(objects))


@dataclass
class Admission:
    """The chart's admission objects applied for one test namespace."""

    objects: list[dict[str, Any]]
    applied: list[dict[str, Any]]


def refused_once_in_force(fleet: FleetHandle, cluster: str, obj: dict[str, Any], message: str) -> str:
    """The refusal of ``kubectl apply`` of ``obj``, once a server-side dry-run create (which runs
    admission and stores nothing) shows the new policy or webhook is loaded (that takes a moment)."""

    def in_force() -> bool:
        done = kubectl(fleet, cluster, "create", "--dry-run=server", "-f", "-", stdin=yaml.safe_dump(obj))
        return done.returncode != 0 and message in done.stderr

    eventually(f"the apiserver to refuse with {message!r}", in_force, 30, every=0.5)
    done = apply(fleet, cluster, obj)
    assert done.returncode != 0, done.stdout
    assert message in done.stderr
    return done.stderr
