"""Updates are judged like creates, on a real apiserver: a spec change the controller would stall on
is refused by the controller's webhook alone and by the chart's ValidatingAdmissionPolicy alone, each
with the controller's own reason; an update that leaves a refused legacy spec alone is not.

"Legacy" objects are created before the admission objects exist (as a RedisCluster stored before a
rule was added is); the webhook and the policy are bound to the test's namespace only.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml

from syncer.controller.admission_server import AdmissionServer
from syncer.controller.model import API_VERSION, KIND, LABEL_INSTANCE, ControllerOptions
from syncer.controller.refusals import refusals_of
from syncer.kube import ClusterClient
from tests.integration.chart.admission_kit import apply, kubectl
from tests.integration.conftest import FleetHandle
from tests.integration.controller.kit import condition, controller_running, redis_cluster
from tests.support.refusal_examples import APPENDONLY, EXAMPLES
from tests.support.waiting import eventually

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("crd_installed")]

POLICY = ("ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding")
WEBHOOK_DENIED = 'admission webhook "redisclusters.redis.syncer.dev" denied the request'
RESERVED = "redisConfig: 'port' is set by the controller and cannot be overridden"


def downgrade(new: str, running: str) -> str:
    return (
        f"spec.version {new} is a downgrade from {running}: a Redis server may not load the data files"
        " of a newer one; to downgrade anyway, set the annotation"
        f' redis.syncer.dev/allow-downgrade-to: "{new}"'
    )


def dry_run(fleet: FleetHandle, cluster: str, obj: dict[str, Any]) -> tuple[bool, str]:
    """Whether a server-side dry-run ``kubectl apply`` of ``obj`` (admission runs, nothing is stored)
    passes, and its stderr."""
    done = kubectl(fleet, cluster, "apply", "--dry-run=server", "-f", "-", stdin=yaml.safe_dump(obj))
    return done.returncode == 0, done.stderr


def named(obj: dict[str, Any], name: str, namespace: str) -> dict[str, Any]:
    found = copy.deepcopy(obj)
    found["metadata"].update(name=name, namespace=namespace)
    return found


def in_force(fleet: FleetHandle, cluster: str, obj: dict[str, Any], message: str) -> None:
    """Wait until the apiserver refuses ``obj`` with ``message``: new admission objects take a moment."""

    def refused() -> bool:
        passed, stderr = dry_run(fleet, cluster, obj)
        return not passed and message in stderr

    eventually(f"the apiserver to refuse with {message!r}", refused, 30, every=0.5)


def legacy_cluster(kube: ClusterClient, namespace: str) -> dict[str, Any]:
    """A RedisCluster stored with appendonly no before any admission object judged it."""
    legacy = redis_cluster("legacy", namespace, version="7.2.5", shards=1, redisConfig={"appendonly": "no"})
    kube.create(legacy)
    return legacy


def check_updates_of_the_kept_legacy_value(fleet: FleetHandle, cluster: str, legacy: dict[str, Any]) -> None:
    # Labels, annotations, finalizers: the spec is untouched, nothing is judged.
    labelled = copy.deepcopy(legacy)
    labelled["metadata"]["labels"] = {"team": "search"}
    done = apply(fleet, cluster, labelled)
    assert done.returncode == 0, done.stderr
    # A spec change that keeps the refused value: the controller would still stall, so it is refused.
    bigger = copy.deepcopy(labelled)
    bigger["spec"]["shards"] = 2
    passed, stderr = dry_run(fleet, cluster, bigger)
    assert not passed
    assert APPENDONLY in stderr
    # Fixing the value in the same change is allowed.
    bigger["spec"]["redisConfig"] = {"appendonly": "yes"}
    passed, stderr = dry_run(fleet, cluster, bigger)
    assert passed, stderr


def check_every_refusal_of_the_list(fleet: FleetHandle, cluster: str, namespace: str) -> None:
    """Each example of the list, brought in by an update of a valid RedisCluster, is refused with the
    very text ``refusals_of`` gives (the policy's CEL and the list's Python agree on it)."""
    for index, (name, new, old, _) in enumerate(EXAMPLES):
        base = old if old is not None else redis_cluster("x", "x", version="7.2.5")
        before = named(base, f"ex-{index}", namespace)
        done = apply(fleet, cluster, before)
        assert done.returncode == 0, (name, done.stderr)
        after = named(new, f"ex-{index}", namespace)
        expected = dict(refusals_of(after, before))[name]
        passed, stderr = dry_run(fleet, cluster, after)
        assert not passed, name
        assert expected in stderr, (name, stderr)


# An update of a valid RedisCluster (version 7.2, one shard) the controller would stall on, and its reason.
UPDATES: dict[str, tuple[dict[str, Any], str]] = {
    "appendonly-no": ({"redisConfig": {"appendonly": "no"}}, APPENDONLY),
    "reserved-port": ({"redisConfig": {"port": "7000"}}, RESERVED),
    "downgrade": ({"version": "6.0"}, downgrade("6.0", "7.2")),
}


def refused_update(fleet: FleetHandle, cluster: str, namespace: str, change: str) -> str:
    """Store a valid RedisCluster, then ``kubectl apply`` the change ``UPDATES[change]``: the stderr of
    its refusal (once the admission objects are in force), and the object is unchanged."""
    base = {"version": "7.2", "shards": 1}
    cache = redis_cluster("cache", namespace, **base)
    done = apply(fleet, cluster, cache)
    assert done.returncode == 0, done.stderr
    spec, reason = UPDATES[change]
    changed = redis_cluster("cache", namespace, **{**base, **spec})
    in_force(fleet, cluster, changed, reason)
    done = apply(fleet, cluster, changed)
    assert done.returncode != 0, done.stdout
    assert reason in done.stderr
    stored = kubectl(fleet, cluster, "get", "redisclusters", "cache", "-n", namespace, "-o", "yaml")
    kept = yaml.safe_load(stored.stdout)["spec"]
    assert (kept["version"], kept.get("redisConfig")) == ("7.2", None)
    return done.stderr


@pytest.mark.parametrize("change", sorted(UPDATES))
def test_the_webhook_alone_refuses_an_update_the_controller_would_stall_on_with_its_reason(
    fleet: FleetHandle,
    cluster: str,
    namespace: str,
    *,
    chart_admission: Any,
    webhook_server: tuple[AdmissionServer, bytes],
    change: str,
) -> None:
    server, ca = webhook_server
    url = f"https://127.0.0.1:{server.port}/validate/redisclusters"
    admission = chart_admission(("ValidatingWebhookConfiguration",), url=url, ca=ca)
    assert [o["kind"] for o in admission.applied] == ["ValidatingWebhookConfiguration"]
    stderr = refused_update(fleet, cluster, namespace, change)
    assert WEBHOOK_DENIED in stderr
    assert f"RedisCluster {namespace}/cache: {UPDATES[change][1]}" in stderr


# The policy refused a downgrade already; these two it did not judge at all.
@pytest.mark.parametrize("change", ["appendonly-no", "reserved-port"])
def test_the_policy_alone_refuses_an_update_the_controller_would_stall_on_with_its_reason(
    fleet: FleetHandle, cluster: str, namespace: str, chart_admission: Any, change: str
) -> None:
    admission = chart_admission(POLICY)
    assert sorted(o["kind"] for o in admission.applied) == sorted(POLICY)
    policy = next(o for o in admission.objects if o["kind"] == "ValidatingAdmissionPolicy")
    stderr = refused_update(fleet, cluster, namespace, change)
    assert f"ValidatingAdmissionPolicy '{policy['metadata']['name']}'" in stderr


def test_the_webhook_judges_kept_legacy_values_and_the_controller_stalls_with_the_same_reasons(
    fleet: FleetHandle,
    cluster: str,
    namespace: str,
    *,
    kube: ClusterClient,
    chart_admission: Any,
    webhook_server: tuple[AdmissionServer, bytes],
) -> None:
    legacy = legacy_cluster(kube, namespace)
    server, ca = webhook_server
    url = f"https://127.0.0.1:{server.port}/validate/redisclusters"
    chart_admission(("ValidatingWebhookConfiguration",), url=url, ca=ca)
    no_aof = redis_cluster("cache", namespace, version="7.2", redisConfig={"appendonly": "no"})
    in_force(fleet, cluster, no_aof, APPENDONLY)

    check_updates_of_the_kept_legacy_value(fleet, cluster, legacy)
    check_every_refusal_of_the_list(fleet, cluster, namespace)

    # The controller stalls on the legacy objects with the same reasons; its finalizer patches,
    # updates that leave the spec alone, pass the webhook.
    options = ControllerOptions(
        kubeconfig=str(fleet.kubeconfig),
        context=cluster,
        watch_namespace=namespace,
        leader_elect=False,
        watch_timeout_seconds=5,
        poll_seconds=1.0,
    )
    with controller_running(options):

        def stalled(name: str) -> dict[str, Any] | None:
            obj = kube.get(API_VERSION, KIND, name, namespace)
            found = {c["type"]: c for c in (obj.get("status") or {}).get("conditions") or ()}
            return obj if found.get("Stalled", {}).get("status") == "True" else None

        for name, reason in (("legacy", APPENDONLY),):
            obj = eventually(f"the controller to stall on {name}", lambda n=name: stalled(n), 60)
            assert condition(obj, "Stalled")["reason"] == "InvalidSpec"
            assert condition(obj, "Stalled")["message"] == reason
            assert "redis.syncer.dev/pvc-retention" in obj["metadata"]["finalizers"]
        assert not kube.list(
            "apps/v1", "StatefulSet", namespace=namespace, label_selector=f"{LABEL_INSTANCE}=legacy"
        ).items
        for item in kube.list(API_VERSION, KIND, namespace=namespace).items:
            kube.delete(API_VERSION, KIND, item["metadata"]["name"], namespace)
        eventually(
            "the test's RedisClusters to be finalized",
            lambda: not kube.list(API_VERSION, KIND, namespace=namespace).items,
            60,
        )


def test_the_policy_judges_kept_legacy_values_and_agrees_with_every_refusal_of_the_list(
    fleet: FleetHandle, cluster: str, namespace: str, kube: ClusterClient, chart_admission: Any
) -> None:
    legacy = legacy_cluster(kube, namespace)
    chart_admission(POLICY)
    no_aof = redis_cluster("cache", namespace, version="7.2", redisConfig={"appendonly": "no"})
    in_force(fleet, cluster, no_aof, APPENDONLY)
    # Two refusals at once: the policy names the first of the list it meets.
    both = redis_cluster("cache", namespace, version="7.2", redisConfig={"port": "1", "appendonly": "no"})
    passed, stderr = dry_run(fleet, cluster, both)
    assert not passed
    assert RESERVED in stderr
    assert APPENDONLY not in stderr

    check_updates_of_the_kept_legacy_value(fleet, cluster, legacy)
    check_every_refusal_of_the_list(fleet, cluster, namespace)
