"""The admission webhook's decisions on RedisCluster creates, against an in-memory set of objects."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from syncer.controller.admission import AdmissionVerdict, review_redis_cluster, review_response
from syncer.errors import ServerError
from syncer.kube import ListResult


class Objects:
    """Only what the webhook asks of a cluster: lists of Services and RedisClusters of a namespace."""

    def __init__(self, *objects: dict[str, Any], broken: bool = False) -> None:
        self.objects = list(objects)
        self.broken = broken

    @property
    def cluster(self) -> str:
        return "eu-1"

    def list(
        self, api_version: str, kind: str, *, namespace: str = "", label_selector: str = ""
    ) -> ListResult:
        if self.broken:
            raise ServerError("connection refused", cluster="eu-1")
        items = [
            o
            for o in self.objects
            if o["kind"] == kind
            and o["apiVersion"] == api_version
            and o["metadata"]["namespace"] == namespace
        ]
        return ListResult(items, "1")

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return iter(self.objects)


def redis(name: str, namespace: str = "redis") -> dict[str, Any]:
    return {
        "apiVersion": "redis.syncer.dev/v1alpha1",
        "kind": "RedisCluster",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"version": "7.2.5"},
    }


def service(name: str, owner: str = "", namespace: str = "redis") -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": namespace}
    if owner:
        meta["ownerReferences"] = [
            {"apiVersion": "redis.syncer.dev/v1alpha1", "kind": "RedisCluster", "name": owner}
        ]
    return {"apiVersion": "v1", "kind": "Service", "metadata": meta}


def create(obj: dict[str, Any]) -> dict[str, Any]:
    return {"uid": "u-1", "operation": "CREATE", "namespace": obj["metadata"]["namespace"], "object": obj}


def review(api: Objects, request: dict[str, Any]) -> AdmissionVerdict:
    return review_redis_cluster(api, request)  # type: ignore[arg-type]


def test_a_fresh_name_is_allowed() -> None:
    api = Objects(service("other"), redis("orders"), service("orders", "orders"))
    assert review(api, create(redis("sessions"))) == AdmissionVerdict(True)


def test_a_service_that_is_not_a_redis_clusters_is_a_collision() -> None:
    verdict = review(Objects(service("cache")), create(redis("cache")))
    assert (verdict.allowed, verdict.code) == (False, 409)
    assert verdict.message == (
        "RedisCluster redis/cache would manage Services cache, cache-headless, but Service redis/cache exists"
        " and is managed by no RedisCluster"
    )


def test_the_headless_service_of_another_redis_cluster_is_a_collision() -> None:
    api = Objects(redis("orders"), service("orders", "orders"), service("orders-headless", "orders"))
    verdict = review(api, create(redis("orders-headless")))
    assert verdict.message == (
        "RedisCluster redis/orders-headless would manage Services orders-headless, orders-headless-headless,"
        " but Service redis/orders-headless exists and belongs to RedisCluster redis/orders;"
        " RedisCluster redis/orders makes a Service named orders-headless too"
    )


def test_a_sibling_whose_services_do_not_exist_yet_still_collides() -> None:
    verdict = review(Objects(redis("orders")), create(redis("orders-headless")))
    assert verdict.message.endswith("but RedisCluster redis/orders makes a Service named orders-headless too")


def test_services_left_by_a_deleted_redis_cluster_of_the_same_name_are_its_own() -> None:
    api = Objects(service("cache", "cache"), service("cache-headless", "cache"))
    assert review(api, create(redis("cache"))).allowed


def test_other_namespaces_do_not_count() -> None:
    assert review(Objects(service("cache", namespace="elsewhere")), create(redis("cache"))).allowed


def test_updates_and_deletes_are_not_judged() -> None:
    for operation in ("UPDATE", "DELETE", "CONNECT"):
        request = {**create(redis("cache")), "operation": operation}
        assert review(Objects(service("cache")), request).allowed


def test_an_unreadable_cluster_denies_so_the_failure_policy_is_not_bypassed() -> None:
    verdict = review(Objects(broken=True), create(redis("cache")))
    assert (verdict.allowed, verdict.code) == (False, 500)
    assert verdict.message == (
        "could not check RedisCluster redis/cache for collisions: [eu-1]: connection refused"
    )


def test_an_object_the_controller_could_not_reconcile_is_denied_with_the_reason() -> None:
    body = redis("cache")
    body["spec"] = {}
    verdict = review(Objects(), create(body))
    assert (verdict.allowed, verdict.code, verdict.message) == (
        False,
        422,
        "RedisCluster redis/cache: spec.version is required",
    )


def test_the_response_echoes_the_uid() -> None:
    request = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {"uid": "u-9"}}
    assert review_response(request, AdmissionVerdict(True)) == {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "response": {"uid": "u-9", "allowed": True},
    }
    denied = review_response(request, AdmissionVerdict(False, "no", 409))["response"]
    assert denied == {"uid": "u-9", "allowed": False, "status": {"code": 409, "message": "no"}}
