"""Which fields a CRD marks secret (``format: password``), read from CRD files as shipped."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml

from syncer.crds import crd_path, load_crd, shipped_sensitive_fields
from syncer.domain.secrets import digest, masked_document, secret_values, sensitive_fields


def _spec_properties(crd: dict[str, Any]) -> dict[str, Any]:
    props: dict[str, Any] = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]
    return props["spec"]["properties"]  # type: ignore[no-any-return]


def _marked_crd(tmp_path: Path) -> dict[str, Any]:
    """The shipped CRD with secret fields added the way a CRD author marks them, read back from a file."""
    crd = copy.deepcopy(load_crd())
    spec = _spec_properties(crd)
    spec["auth"]["properties"]["password"] = {"type": "string", "format": "password"}
    spec["tokens"] = {"type": "object", "additionalProperties": {"type": "string", "format": "password"}}
    spec["users"] = {
        "type": "array",
        "items": {
            "type": "object",
            "properties": {"name": {"type": "string"}, "pass": {"type": "string", "format": "password"}},
        },
    }
    spec["either"] = {"anyOf": [{"type": "string", "format": "password"}, {"type": "integer"}]}
    path = tmp_path / "crd.yaml"
    path.write_text(yaml.safe_dump(crd))
    return yaml.safe_load(path.read_text())  # type: ignore[no-any-return]


def test_fields_marked_format_password_are_found_through_maps_lists_and_alternatives(tmp_path: Path) -> None:
    marked = sensitive_fields(_marked_crd(tmp_path))

    assert set(marked.by_kind) == {"RedisCluster"}
    assert set(marked.by_kind["RedisCluster"]) == {
        ("spec", "auth", "password"),
        ("spec", "tokens", "*"),
        ("spec", "users", "*", "pass"),
        ("spec", "either"),
    }
    assert not marked.marks("RedisCluster", ("spec", "users", "0", "name"))
    assert not marked.marks("Namespace", ("spec", "auth", "password"))


def test_marked_fields_are_masked_with_a_digest_and_others_kept(tmp_path: Path) -> None:
    marked = sensitive_fields(_marked_crd(tmp_path))
    body = {
        "apiVersion": "redis.syncer.dev/v1alpha1",
        "kind": "RedisCluster",
        "metadata": {"name": "cache", "namespace": "redis"},
        "spec": {
            "version": "7.2",
            "auth": {"password": "hunter2-pw", "secretRef": {"name": "s"}},
            "tokens": {"a": "tok-aaaa", "b": "tok-bbbb"},
            "users": [{"name": "app", "pass": "app-pass"}],
            "either": "either-secret",
            "redisConfig": {"maxmemory-policy": "allkeys-lru", "requirepass": "rp-secret"},
        },
    }

    shown = masked_document(body, marked)

    assert shown is not None
    text = yaml.safe_dump(shown)
    for secret in ("hunter2-pw", "tok-aaaa", "tok-bbbb", "app-pass", "either-secret", "rp-secret"):
        assert secret not in text
    assert shown["spec"]["auth"]["password"] == digest("hunter2-pw")
    assert shown["spec"]["users"][0] == {"name": "app", "pass": digest("app-pass")}
    assert shown["spec"]["redisConfig"]["maxmemory-policy"] == "allkeys-lru"
    assert shown["spec"]["auth"]["secretRef"] == {"name": "s"}
    assert {"hunter2-pw", "tok-aaaa", "app-pass", "rp-secret"} <= secret_values([body], marked)


def test_the_shipped_crd_is_read_for_marked_fields() -> None:
    """The shipped CRD file is the source: what it marks is exactly what the masking uses."""
    assert shipped_sensitive_fields() == sensitive_fields(yaml.safe_load(crd_path().read_text()))
