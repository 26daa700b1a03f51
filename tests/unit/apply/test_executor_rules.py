"""The apply stage follows the plan's rules: a blocked plan writes nothing, and no secret value reaches
a change set's messages (which go to logs and Events). A small in-memory KubeApi stands in for the
cluster: these are syncer's own decisions, not Kubernetes behaviour."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from syncer.apply import ClusterApplier
from syncer.domain import Action, Change, ClusterManifests, ClusterPlan, Manifest, ObjectKey
from syncer.domain.secrets import digest
from syncer.errors import Invalid, Location
from syncer.kube import ApplyOptions, KubeObject, ListResult, WatchEvent

API = "redis.syncer.dev/v1alpha1"


class RefusingKube:
    """Refuses every apply with a message that echoes the body's redisConfig."""

    cluster = "c1"

    def __init__(self) -> None:
        self.applied: list[Mapping[str, Any]] = []

    def apply(self, body: Mapping[str, Any], options: ApplyOptions = ApplyOptions()) -> KubeObject:
        self.applied.append(body)
        config = body["spec"].get("redisConfig", {})
        raise Invalid(f"spec.redisConfig: Invalid value: {config}", cluster="c1", subject="x")

    def list(
        self, api_version: str, kind: str, *, namespace: str = "", label_selector: str = ""
    ) -> ListResult:
        return ListResult([], "")

    def get(self, api_version: str, kind: str, name: str, namespace: str = "") -> KubeObject:
        raise AssertionError("not expected")

    def apply_status(self, body: Mapping[str, Any], options: ApplyOptions = ApplyOptions()) -> KubeObject:
        raise AssertionError("not expected")

    def create(self, body: Mapping[str, Any]) -> KubeObject:
        raise AssertionError("not expected")

    def replace(self, body: Mapping[str, Any]) -> KubeObject:
        raise AssertionError("not expected")

    def delete(
        self, api_version: str, kind: str, name: str, namespace: str = "", propagation: str = "Background"
    ) -> None:
        raise AssertionError("not expected")

    def watch(self, api_version: str, kind: str, **_: Any) -> Iterator[WatchEvent]:
        raise AssertionError("not expected")


def _manifest(name: str, **spec: Any) -> Manifest:
    body = {
        "apiVersion": API,
        "kind": "RedisCluster",
        "metadata": {"name": name, "namespace": "ns"},
        "spec": spec,
    }
    key = ObjectKey("c1", "redis.syncer.dev", "RedisCluster", "ns", name)
    return Manifest(key, API, body, Location("test"))


def test_a_refused_apply_never_echoes_a_secret_into_the_change_set() -> None:
    secret = "app on >s3cret-value ~* +@all"
    manifest = _manifest("a", redisConfig={"user": secret})
    plan = ClusterPlan("c1", (Change(manifest.key, API, Action.UPDATE),))
    result = ClusterApplier(RefusingKube()).apply(ClusterManifests.of("c1", [manifest]), plan, "r1")
    assert not result.ok
    assert "s3cret-value" not in result.error
    assert all("s3cret-value" not in e.message for e in result.entries)
    assert digest(secret) in result.error


def test_a_plan_with_an_error_or_a_conflict_writes_nothing() -> None:
    ok, bad = _manifest("ok"), _manifest("bad")
    for blocking in (Action.ERROR, Action.CONFLICT):
        kube = RefusingKube()
        plan = ClusterPlan(
            "c1",
            (Change(ok.key, API, Action.UPDATE), Change(bad.key, API, blocking, message="refused")),
        )
        result = ClusterApplier(kube).apply(ClusterManifests.of("c1", [ok, bad]), plan, "r1")
        assert kube.applied == []
        assert not result.ok
        assert result.writes == 0
