"""The controller's admission webhook for RedisClusters.

A create, and an update that changes the spec, is refused with the reason of every refusal of
``syncer.controller.refusals`` it meets: the list the controller stalls on and the chart's
ValidatingAdmissionPolicy is generated from, so the webhook alone (without the policy) refuses what
the controller would not reconcile. An update that leaves the spec alone (labels, annotations, the
controller's finalizer) is allowed: the controller's verdict on the spec does not change with it.

A create is also refused when its child Services would take the name of a Service that exists and is
not its own, or of a child Service of another RedisCluster of the namespace: rules that need other
objects, which no policy can check. The names come from the same code the reconciler builds the
children with, so the check and the children cannot disagree.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from syncer.controller import children
from syncer.controller.model import API_VERSION, GROUP, KIND, SpecError, parse
from syncer.controller.refusals import refusals_of
from syncer.errors import KubeError
from syncer.kube import KubeApi

REVIEW_API_VERSION = "admission.k8s.io/v1"


@dataclass(frozen=True)
class AdmissionVerdict:
    """Whether a request is allowed, and the message the client sees when it is not."""

    allowed: bool
    message: str = ""
    code: int = 200


def child_service_names(obj: Mapping[str, Any]) -> tuple[str, ...]:
    """The Services the controller makes for a RedisCluster (client, then headless)."""
    spec = parse(obj)
    return tuple(
        str(body["metadata"]["name"])
        for body in (children.client_service(spec), children.headless_service(spec))
    )


def _owner(service: Mapping[str, Any]) -> str:
    """The name of the RedisCluster that owns a Service, or ``""``."""
    for ref in (service.get("metadata") or {}).get("ownerReferences") or ():
        if ref.get("kind") == KIND and str(ref.get("apiVersion", "")).startswith(f"{GROUP}/"):
            return str(ref.get("name", ""))
    return ""


def _service_collisions(api: KubeApi, namespace: str, name: str, wanted: tuple[str, ...]) -> list[str]:
    # A list, not a get per name: the controller's RBAC lists and watches Services, it does not get them.
    existing = {
        str((service.get("metadata") or {}).get("name", "")): service
        for service in api.list("v1", "Service", namespace=namespace).items
    }
    found = []
    for service_name in wanted:
        if service_name not in existing:
            continue
        owner = _owner(existing[service_name])
        if owner == name:
            continue
        whose = f"belongs to RedisCluster {namespace}/{owner}" if owner else "is managed by no RedisCluster"
        found.append(f"Service {namespace}/{service_name} exists and {whose}")
    return found


def _sibling_collisions(api: KubeApi, namespace: str, name: str, wanted: tuple[str, ...]) -> list[str]:
    found = []
    for other in api.list(API_VERSION, KIND, namespace=namespace).items:
        other_name = str((other.get("metadata") or {}).get("name", ""))
        if other_name == name:
            continue
        try:
            theirs = child_service_names(other)
        except SpecError:
            continue
        for service_name in sorted(set(wanted) & set(theirs)):
            found.append(f"RedisCluster {namespace}/{other_name} makes a Service named {service_name} too")
    return found


def review_redis_cluster(api: KubeApi, request: Mapping[str, Any]) -> AdmissionVerdict:
    """The verdict on one AdmissionReview request for a RedisCluster.

    Creates and updates are judged against the refusals; only creates for Service collisions (a name
    cannot change afterwards); anything else is allowed. A check that cannot read the cluster denies,
    so that the webhook's failurePolicy (not a guess) decides what happens when the answer is unknown.
    """
    operation = request.get("operation")
    if operation not in ("CREATE", "UPDATE"):
        return AdmissionVerdict(True)
    obj = request.get("object") or {}
    old = request.get("oldObject") if operation == "UPDATE" else None
    meta = obj.get("metadata") or {}
    name = str(meta.get("name") or "")
    namespace = str(meta.get("namespace") or request.get("namespace") or "")
    if old is not None and obj.get("spec") == old.get("spec"):
        return AdmissionVerdict(True)
    refused = refusals_of(obj, old)
    if refused:
        listed = "; ".join(message for _, message in refused)
        return AdmissionVerdict(False, f"RedisCluster {namespace}/{name}: {listed}", 422)
    if operation == "UPDATE":
        return AdmissionVerdict(True)
    try:
        wanted = child_service_names(obj)
    except SpecError as err:
        return AdmissionVerdict(False, f"RedisCluster {namespace}/{name}: {err}", 422)
    try:
        problems = _service_collisions(api, namespace, name, wanted)
        problems += _sibling_collisions(api, namespace, name, wanted)
    except KubeError as err:
        problem = f"could not check RedisCluster {namespace}/{name} for collisions: {err}"
        return AdmissionVerdict(False, problem, 500)
    if not problems:
        return AdmissionVerdict(True)
    listed = "; ".join(problems)
    message = f"RedisCluster {namespace}/{name} would manage Services {', '.join(wanted)}, but {listed}"
    return AdmissionVerdict(False, message, 409)


def review_response(review: Mapping[str, Any], verdict: AdmissionVerdict) -> dict[str, Any]:
    """The AdmissionReview answering ``review`` with ``verdict``."""
    request = review.get("request") or {}
    response: dict[str, Any] = {"uid": request.get("uid", ""), "allowed": verdict.allowed}
    if not verdict.allowed:
        response["status"] = {"code": verdict.code, "message": verdict.message}
    return {"apiVersion": REVIEW_API_VERSION, "kind": "AdmissionReview", "response": response}
