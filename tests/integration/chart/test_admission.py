"""RedisCluster admission on a real apiserver: the chart's ValidatingAdmissionPolicy and the
controller's webhook refuse invalid objects whoever applies them (here: kubectl as the admin).

The chart's admission objects are rendered with ``controller.watchNamespace`` set to the test's own
namespace, so their bindings touch nothing else of the shared fleet. The local fleet has no pod
network, so the apiserver cannot reach a webhook through a Service: the rendered
ValidatingWebhookConfiguration is applied as the chart renders it (rules, failurePolicy, timeout,
namespace selector) except that its clientConfig names the webhook server this test runs, by URL, with
a certificate minted for 127.0.0.1.
"""

from __future__ import annotations

import socket
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from devfleet.pki import CertificateAuthority
from syncer.controller.admission_server import AdmissionServer
from syncer.controller.model import API_VERSION, KIND
from syncer.errors import Invalid
from syncer.kube import ApplyOptions, ClusterClient
from tests.integration.chart.admission_kit import apply, kubectl, refused_once_in_force
from tests.integration.chart.kit import only
from tests.integration.conftest import FleetHandle
from tests.integration.controller.kit import redis_cluster
from tests.support.waiting import eventually

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("crd_installed")]

VERSION_MESSAGE = (
    "spec.version must be a Redis version 6.0 or newer, written MAJOR.MINOR or MAJOR.MINOR.PATCH without"
    " leading zeros"
)
STORAGE_MESSAGE = (
    "spec.persistence.size must not shrink or be dropped (a persistent volume cannot be made smaller)"
)
SHARDS_MESSAGE = (
    "spec.shards may go down only when the remaining shards can hold the data: shards times"
    " resources.limits.memory must not go down (and memory limits must be set on both versions)"
)


def test_the_policy_refuses_invalid_redis_clusters_with_its_message(
    fleet: FleetHandle, cluster: str, namespace: str, chart_admission: Any
) -> None:
    admission = chart_admission(("ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"))
    policy = only(admission.objects, "ValidatingAdmissionPolicy")
    binding = only(admission.objects, "ValidatingAdmissionPolicyBinding")
    assert binding["spec"]["matchResources"]["namespaceSelector"]["matchLabels"] == {
        "kubernetes.io/metadata.name": namespace
    }

    # An invalid version string (the CRD's pattern allows leading zeros and Redis 1.0).
    stderr = refused_once_in_force(
        fleet, cluster, redis_cluster("old", namespace, version="5.0"), VERSION_MESSAGE
    )
    assert f"ValidatingAdmissionPolicy '{policy['metadata']['name']}'" in stderr
    assert apply(fleet, cluster, redis_cluster("zeros", namespace, version="07.2")).returncode != 0
    assert apply(fleet, cluster, redis_cluster("fine", namespace, version="7.2")).returncode == 0

    # Storage never shrinks; growing it is fine.
    sized = redis_cluster("cache", namespace, version="7.2.5", persistence={"size": "10Gi"})
    assert apply(fleet, cluster, sized).returncode == 0
    shrunk = redis_cluster("cache", namespace, version="7.2.5", persistence={"size": "9Gi"})
    done = apply(fleet, cluster, shrunk)
    assert done.returncode != 0
    assert STORAGE_MESSAGE in done.stderr
    dropped = redis_cluster("cache", namespace, version="7.2.5", persistence={"enabled": True})
    assert STORAGE_MESSAGE in apply(fleet, cluster, dropped).stderr
    grown = redis_cluster("cache", namespace, version="7.2.5", persistence={"size": "10240Mi"})
    assert apply(fleet, cluster, grown).returncode == 0

    # Shards go down only when the remaining shards' memory holds what the old ones could.
    limits = {"limits": {"memory": "1Gi"}}
    big = redis_cluster("shop", namespace, version="7.2.5", shards=4, resources=limits)
    assert apply(fleet, cluster, big).returncode == 0
    fewer = redis_cluster("shop", namespace, version="7.2.5", shards=3, resources=limits)
    done = apply(fleet, cluster, fewer)
    assert done.returncode != 0
    assert SHARDS_MESSAGE in done.stderr
    no_limits = redis_cluster("shop", namespace, version="7.2.5", shards=3)
    assert SHARDS_MESSAGE in apply(fleet, cluster, no_limits).stderr
    roomier = redis_cluster(
        "shop", namespace, version="7.2.5", shards=2, resources={"limits": {"memory": "2Gi"}}
    )
    assert apply(fleet, cluster, roomier).returncode == 0

    # The policy is the cluster's, not kubectl's: a server-side apply through the API is refused too.
    kube = ClusterClient.from_kubeconfig(str(fleet.kubeconfig), cluster)
    try:
        with pytest.raises(Invalid) as caught:
            kube.apply(redis_cluster("api", namespace, version="4.0"), ApplyOptions(field_manager="someone"))
        assert VERSION_MESSAGE in str(caught.value)
    finally:
        kube.close()


def downgrade_message(new: str, running: str) -> str:
    return (
        f"spec.version {new} is a downgrade from {running}: a Redis server may not load the data files"
        " of a newer one; to downgrade anyway, set the annotation"
        f' redis.syncer.dev/allow-downgrade-to: "{new}"'
    )


def allowing_downgrade_to(body: dict[str, Any], version: str) -> dict[str, Any]:
    body["metadata"]["annotations"] = {"redis.syncer.dev/allow-downgrade-to": version}
    return body


def test_the_policy_refuses_a_downgrade_unless_the_annotation_names_the_version(
    fleet: FleetHandle, cluster: str, namespace: str, chart_admission: Any
) -> None:
    chart_admission(("ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"))
    assert apply(fleet, cluster, redis_cluster("shop", namespace, version="7.2")).returncode == 0

    downgrade = yaml.safe_dump(redis_cluster("shop", namespace, version="6.0"))

    def refused() -> bool:
        # A server-side dry run (admission runs, nothing is stored) until the policy is loaded.
        done = kubectl(fleet, cluster, "apply", "--dry-run=server", "-f", "-", stdin=downgrade)
        return done.returncode != 0 and downgrade_message("6.0", "7.2") in done.stderr

    eventually("the apiserver to refuse the downgrade", refused, 30, every=0.5)
    done = apply(fleet, cluster, redis_cluster("shop", namespace, version="6.0"))
    assert done.returncode != 0, done.stdout
    assert downgrade_message("6.0", "7.2") in done.stderr
    # Up and sideways are fine: a newer minor, a patch of it, the same minor without a patch.
    for version in ("7.4", "7.4.1", "7.4"):
        assert apply(fleet, cluster, redis_cluster("shop", namespace, version=version)).returncode == 0
    done = apply(fleet, cluster, redis_cluster("shop", namespace, version="7.4.0"))
    assert done.returncode == 0, done.stderr
    done = apply(fleet, cluster, redis_cluster("shop", namespace, version="7.3.9"))
    assert downgrade_message("7.3.9", "7.4.0") in done.stderr

    # The annotation allows the version it names and no other.
    wrong = allowing_downgrade_to(redis_cluster("shop", namespace, version="7.2"), "6.0")
    assert downgrade_message("7.2", "7.4.0") in apply(fleet, cluster, wrong).stderr
    allowed = allowing_downgrade_to(redis_cluster("shop", namespace, version="7.2"), "7.2")
    done = apply(fleet, cluster, allowed)
    assert done.returncode == 0, done.stderr

    # The version every pod runs (status.currentVersion) is what a downgrade is judged against: going
    # back from an upgrade that reached no pod yet is allowed, going below what runs is not.
    kube = ClusterClient.from_kubeconfig(str(fleet.kubeconfig), cluster)
    try:
        kube.apply(redis_cluster("cart", namespace, version="7.2.5"), ApplyOptions(field_manager="someone"))
        running = {"apiVersion": API_VERSION, "kind": KIND, "status": {"currentVersion": "7.2.5"}}
        running["metadata"] = {"name": "cart", "namespace": namespace}
        kube.apply_status(running, ApplyOptions(field_manager="controller"))
        kube.apply(redis_cluster("cart", namespace, version="7.4.1"), ApplyOptions(field_manager="someone"))
        kube.apply(redis_cluster("cart", namespace, version="7.2.5"), ApplyOptions(field_manager="someone"))
        # A server-side apply through the API, as syncer's sync (or its dry-run in a diff) meets it.
        for dry_run in (True, False):
            with pytest.raises(Invalid) as caught:
                kube.apply(
                    redis_cluster("cart", namespace, version="7.0"),
                    ApplyOptions(field_manager="someone", dry_run=dry_run),
                )
            assert downgrade_message("7.0", "7.2.5") in str(caught.value)
        stored = kube.get(API_VERSION, KIND, "cart", namespace)
        assert stored["spec"]["version"] == "7.2.5"
    finally:
        kube.close()


def test_the_webhook_refuses_child_service_collisions(
    fleet: FleetHandle,
    cluster: str,
    namespace: str,
    chart_admission: Any,
    webhook_server: tuple[AdmissionServer, bytes],
) -> None:
    server, ca = webhook_server
    url = f"https://127.0.0.1:{server.port}/validate/redisclusters"
    admission = chart_admission(("ValidatingWebhookConfiguration",), url=url, ca=ca)
    hook = only(admission.applied, "ValidatingWebhookConfiguration")["webhooks"][0]
    assert (hook["failurePolicy"], hook["timeoutSeconds"], hook["rules"][0]["operations"]) == (
        "Fail",
        2,
        ["CREATE", "UPDATE"],
    )

    # Someone else's Service named like the RedisCluster's client Service.
    foreign = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "cache", "namespace": namespace}}
    foreign["spec"] = {"ports": [{"port": 80}]}
    assert apply(fleet, cluster, foreign).returncode == 0
    message = (
        f"RedisCluster {namespace}/cache would manage Services cache, cache-headless, but Service"
        f" {namespace}/cache exists and is managed by no RedisCluster"
    )
    stderr = refused_once_in_force(
        fleet, cluster, redis_cluster("cache", namespace, version="7.2.5"), message
    )
    assert 'admission webhook "redisclusters.redis.syncer.dev" denied the request' in stderr

    # Another RedisCluster's headless Service name, before that Service even exists.
    assert apply(fleet, cluster, redis_cluster("orders", namespace, version="7.2.5")).returncode == 0
    done = apply(fleet, cluster, redis_cluster("orders-headless", namespace, version="7.2.5"))
    assert done.returncode != 0
    assert f"RedisCluster {namespace}/orders makes a Service named orders-headless too" in done.stderr

    # An update is not judged for collisions (a name cannot change): the RedisCluster can be changed.
    assert apply(fleet, cluster, redis_cluster("orders", namespace, version="7.4.1")).returncode == 0


def test_a_webhook_that_is_down_or_hangs_refuses_creates_under_fail_and_not_under_ignore(
    fleet: FleetHandle, cluster: str, namespace: str, chart_admission: Any, tmp_path: Path
) -> None:
    # Down: nothing listens on the port.
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    ca = CertificateAuthority.create(tmp_path / "ca", "webhook-ca")
    url = f"https://127.0.0.1:{port}/validate/redisclusters"
    chart_admission(("ValidatingWebhookConfiguration",), url=url, ca=ca.cert_path.read_bytes())
    stderr = refused_once_in_force(
        fleet, cluster, redis_cluster("down", namespace, version="7.2.5"), "failed calling webhook"
    )
    assert "connection refused" in stderr

    # Hangs: a listener that never answers; the apiserver gives up after timeoutSeconds (2 s).
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(16)
        hang_url = f"https://127.0.0.1:{silent.getsockname()[1]}/validate/redisclusters"
        chart_admission(("ValidatingWebhookConfiguration",), url=hang_url, ca=ca.cert_path.read_bytes())

        def times_out() -> float | None:
            started = time.monotonic()
            done = apply(fleet, cluster, redis_cluster("slow", namespace, version="7.2.5"))
            took = time.monotonic() - started
            timed_out = "context deadline exceeded" in done.stderr or "timeout" in done.stderr.lower()
            return took if done.returncode != 0 and timed_out else None

        took = eventually("a create to time out at the webhook", times_out, 40, every=0.5)
        assert 1.5 <= took < 15

    # Ignore: the same dead webhook lets creates through, unchecked.
    ignore = ca.cert_path.read_bytes()
    chart_admission(("ValidatingWebhookConfiguration",), url=url, ca=ignore, failurePolicy="Ignore")

    def passes() -> bool:
        return apply(fleet, cluster, redis_cluster("unchecked", namespace, version="7.2.5")).returncode == 0

    eventually("a create to pass a dead webhook under failurePolicy Ignore", passes, 30, every=0.5)
