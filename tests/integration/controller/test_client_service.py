"""The client Service of a RedisCluster made by the controller's version before the membership label
(it selects every pod; no pod carries the label) is taken over by this controller without ever
going empty: the members are labelled before the Service selects by the label.

Real redis-servers run behind the pods of the loopback fleet; which pods a client of the Service is
offered (the Ready pods its selector matches, the EndpointSlice controller's rule: ``endpoints.py``)
is read every 50 ms throughout."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

import pytest

from devfleet import audit
from devfleet import fleet as devfleet
from syncer.controller import children
from syncer.controller.membership import MembershipChange, write
from syncer.controller.model import API_VERSION, FIELD_MANAGER, KIND, LABEL_MEMBER, parse
from syncer.controller.topology_link import Pod
from syncer.kube import ApplyOptions
from tests.integration.controller.endpoints import Endpoint, EndpointWatch, ready_endpoints
from tests.integration.controller.kit import controller_running
from tests.integration.controller.rediskit import (
    LOOPBACK_CLUSTER,
    NAME,
    Scene,
    SceneStarter,
    controller_options,
)
from tests.support.waiting import eventually

pytestmark = pytest.mark.integration

AS_THE_CONTROLLER = ApplyOptions(field_manager=FIELD_MANAGER)


def selects_members(s: Scene) -> bool:
    selector = s.kube.get("v1", "Service", NAME, s.namespace)["spec"].get("selector") or {}
    return selector.get(LABEL_MEMBER) == "true"


def members(s: Scene) -> list[str]:
    pods = s.kube.list("v1", "Pod", namespace=s.namespace).items
    return sorted(
        p["metadata"]["name"] for p in pods if (p["metadata"].get("labels") or {}).get(LABEL_MEMBER)
    )


def as_the_version_before(s: Scene) -> None:
    """What the controller's version before left: the client Service as it applied it, every pod
    without the label (the same field manager, so the fields go as they would)."""
    s.kube.apply(children.client_service(parse(s.obj())), AS_THE_CONTROLLER)
    for item in s.kube.list("v1", "Pod", namespace=s.namespace).items:
        meta = {"name": item["metadata"]["name"], "namespace": s.namespace, "labels": {}}
        s.kube.apply({"apiVersion": "v1", "kind": "Pod", "metadata": meta}, AS_THE_CONTROLLER)
    assert not selects_members(s)
    assert members(s) == []


@pytest.mark.timeout(900)
def test_a_client_service_of_the_version_before_never_goes_empty_when_the_controller_takes_it_over(
    redis_scene: SceneStarter, loopback_fleet: devfleet.Fleet
) -> None:
    with redis_scene(persistence=False, controller=False) as s:
        options = controller_options(loopback_fleet, s.namespace)
        with controller_running(options):
            s.apply(shards=2, replicasPerShard=1)
            s.wait_ready()
        as_the_version_before(s)
        everyone = lambda: len(ready_endpoints(s.kube, s.namespace, NAME)) == 4  # noqa: E731
        eventually("every pod in the client Service", everyone, 60)

        def look(found: frozenset[Endpoint]) -> str:
            return "" if found else "the client Service lists no pod"

        watch = EndpointWatch(s.kube, s.namespace, NAME, look).start()
        taken_over = datetime.now(UTC)
        with controller_running(options):
            try:
                eventually("the client Service to select members", lambda: selects_members(s), 60)
                eventually("every pod labelled", lambda: len(members(s)) == 4, 60)
                eventually("every pod in the client Service again", everyone, 60)
            finally:
                complaints = watch.stop()
            over = datetime.now(UTC)
            s.kube.delete(API_VERSION, KIND, NAME, s.namespace)
            gone = lambda: not s.kube.list(API_VERSION, KIND, namespace=s.namespace).items  # noqa: E731
            eventually("deleted", gone, 60)
        assert complaints == [], complaints[:5]
        # The order, as the apiserver saw it: every pod labelled before the Service changed.
        since = [
            w
            for w in audit.writes(loopback_fleet, LOOPBACK_CLUSTER)
            if taken_over <= w.at <= over
            and w.namespace == s.namespace
            and w.verb == "patch"
            and w.code < 300
        ]
        labelled = [w.at for w in since if w.resource == "pods" and not w.subresource]
        service = [w.at for w in since if w.resource == "services" and w.name == NAME]
        assert len(labelled) == 4, since
        assert service, since
        assert max(labelled) < min(service), "the client Service changed before every pod was labelled"


def test_the_label_is_written_only_on_the_pod_that_was_judged(redis_scene: SceneStarter) -> None:
    """Against the real apiserver: a pod re-created since it was listed (another uid) is not labelled
    on its predecessor's word, a pod deleted since is not brought back by the label's apply, and the
    label goes when the controller applies the pod's labels without it."""
    with redis_scene(persistence=False, controller=False) as s:
        spec = parse({"metadata": {"name": NAME, "namespace": s.namespace}, "spec": {"version": "7.2"}})
        meta = {"name": "cache-shard-0-0", "namespace": s.namespace}
        body = {"containers": [{"name": "redis", "image": "redis:7.2"}]}
        made = s.kube.apply({"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": body})
        pod = Pod("cache-shard-0-0", 0, 0, "", True, "", made["metadata"]["uid"])

        def label() -> str | None:
            return (s.kube.get("v1", "Pod", pod.name, s.namespace)["metadata"].get("labels") or {}).get(
                LABEL_MEMBER
            )

        assert not write(s.kube, spec, MembershipChange(replace(pod, uid="another-pods-uid"), True))
        assert label() is None
        assert write(s.kube, spec, MembershipChange(pod, True))
        assert label() == "true"
        assert write(s.kube, spec, MembershipChange(replace(pod, member=True), False))
        assert label() is None
        s.kube.delete("v1", "Pod", pod.name, s.namespace)
        eventually("the pod gone", lambda: not s.kube.list("v1", "Pod", namespace=s.namespace).items, 60)
        assert not write(s.kube, spec, MembershipChange(pod, True))
        assert not s.kube.list("v1", "Pod", namespace=s.namespace).items, "the apply made a pod"
