"""The RedisCluster CRD is a valid apiextensions.k8s.io/v1 CRD with a structural schema, as far as that can
be checked without an apiserver: every node typed, value validations free of types and defaults,
defaults valid against their own schema, only fields the apiextensions v1 schema knows."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import pytest
from jsonschema import Draft4Validator

from syncer.crds import REDISCLUSTER_CRD, crd_path, load_crd
from syncer.manifests.schema import kube_to_json_schema

SCHEMA_FIELDS = {
    "type", "format", "description", "title", "default", "maximum", "exclusiveMaximum", "minimum",
    "exclusiveMinimum", "maxLength", "minLength", "pattern", "maxItems", "minItems", "uniqueItems",
    "multipleOf", "enum", "maxProperties", "minProperties", "required", "items", "allOf", "oneOf", "anyOf",
    "not", "properties", "additionalProperties", "nullable", "example", "externalDocs",
    "x-kubernetes-preserve-unknown-fields", "x-kubernetes-embedded-resource", "x-kubernetes-int-or-string",
    "x-kubernetes-list-map-keys", "x-kubernetes-list-type", "x-kubernetes-map-type",
    "x-kubernetes-validations",
}  # fmt: skip
FORBIDDEN_IN_VALUE_VALIDATIONS = {"type", "additionalProperties", "description", "default", "nullable"}
TYPES = {"object", "array", "string", "integer", "number", "boolean"}


def _nodes(node: Mapping[str, Any], path: str = "") -> Iterator[tuple[str, Mapping[str, Any]]]:
    """Every schema node that specifies a field or item (not the value validations)."""
    yield path, node
    for name, sub in node.get("properties", {}).items():
        yield from _nodes(sub, f"{path}.{name}")
    if isinstance(node.get("additionalProperties"), Mapping):
        yield from _nodes(node["additionalProperties"], f"{path}.*")
    if isinstance(node.get("items"), Mapping):
        yield from _nodes(node["items"], f"{path}[]")


def _value_validations(node: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
    for key in ("allOf", "anyOf", "oneOf"):
        for sub in node.get(key, ()):
            yield sub
            yield from _value_validations(sub)
    if "not" in node:
        yield node["not"]


@pytest.fixture(scope="module")
def crd() -> dict[str, Any]:
    return load_crd()


@pytest.fixture(scope="module")
def schema(crd: dict[str, Any]) -> dict[str, Any]:
    (version,) = crd["spec"]["versions"]
    openapi: dict[str, Any] = version["schema"]["openAPIV3Schema"]
    return openapi


def test_the_file_ships_with_the_package() -> None:
    assert crd_path().name == REDISCLUSTER_CRD
    assert crd_path().is_file()


def test_names_scope_and_version(crd: dict[str, Any]) -> None:
    assert crd["apiVersion"] == "apiextensions.k8s.io/v1"
    assert crd["kind"] == "CustomResourceDefinition"
    spec = crd["spec"]
    assert crd["metadata"]["name"] == f"{spec['names']['plural']}.{spec['group']}"
    assert spec["group"] == "redis.syncer.dev"
    assert spec["scope"] == "Namespaced"
    assert spec["names"]["kind"] == "RedisCluster"
    assert spec["names"]["plural"] == "redisclusters"
    assert spec["names"]["shortNames"] == ["rdc"]
    (version,) = spec["versions"]
    assert (version["name"], version["served"], version["storage"]) == ("v1alpha1", True, True)
    assert version["subresources"] == {"status": {}}


def test_printer_columns(crd: dict[str, Any]) -> None:
    columns = {c["name"]: c for c in crd["spec"]["versions"][0]["additionalPrinterColumns"]}

    assert list(columns) == ["Shards", "Replicas", "Version", "Ready", "Reason", "Running", "Step", "Age"]
    assert columns["Reason"]["jsonPath"] == '.status.conditions[?(@.type=="Ready")].reason'
    assert columns["Running"]["jsonPath"] == ".status.currentVersion"
    assert columns["Step"]["jsonPath"] == ".status.rolloutStep"
    assert columns["Ready"]["jsonPath"] == '.status.conditions[?(@.type=="Ready")].status'
    assert columns["Age"] == {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}
    for column in columns.values():
        assert column["type"] in {"integer", "number", "string", "boolean", "date"}
        assert column["jsonPath"].startswith(".")


def test_every_field_and_item_is_typed(schema: dict[str, Any]) -> None:
    for path, node in _nodes(schema):
        if node.get("x-kubernetes-int-or-string"):
            assert "type" not in node, path
            assert node.get("anyOf") == [{"type": "integer"}, {"type": "string"}], path
            continue
        assert node.get("type") in TYPES, path


def test_only_apiextensions_v1_schema_fields_are_used(schema: dict[str, Any]) -> None:
    for path, node in _nodes(schema):
        assert set(node) <= SCHEMA_FIELDS, (path, set(node) - SCHEMA_FIELDS)
        assert not ("properties" in node and "additionalProperties" in node), path
        assert node.get("uniqueItems") is not True, path
        assert node.get("x-kubernetes-preserve-unknown-fields", True) is True, path
        if node.get("x-kubernetes-preserve-unknown-fields"):
            assert node.get("type") == "object", path


def test_value_validations_only_restrict(schema: dict[str, Any]) -> None:
    for path, node in _nodes(schema):
        for sub in _value_validations(node):
            if sub in ({"type": "integer"}, {"type": "string"}):
                assert node.get("x-kubernetes-int-or-string"), path
                continue
            assert not set(sub) & FORBIDDEN_IN_VALUE_VALIDATIONS, path
            assert not any(k.startswith("x-kubernetes-") for k in sub), path
            assert set(sub.get("properties", {})) <= set(node.get("properties", {})), path


def test_metadata_is_left_to_the_apiserver(schema: dict[str, Any]) -> None:
    assert schema["properties"]["metadata"] == {"type": "object"}


def test_required_fields_exist_and_list_map_keys_are_required(schema: dict[str, Any]) -> None:
    for path, node in _nodes(schema):
        for name in node.get("required", ()):
            assert name in node.get("properties", {}), (path, name)
        if node.get("x-kubernetes-list-type") == "map":
            for key in node["x-kubernetes-list-map-keys"]:
                assert key in node["items"]["required"], path


def test_defaults_are_valid_against_their_own_schema(schema: dict[str, Any]) -> None:
    defaults = [(path, node) for path, node in _nodes(schema) if "default" in node]

    assert defaults
    for path, node in defaults:
        assert not path.startswith(".metadata"), path
        errors = list(Draft4Validator(kube_to_json_schema(node)).iter_errors(node["default"]))
        assert errors == [], path


def test_patterns_are_anchored(schema: dict[str, Any]) -> None:
    for path, node in _nodes(schema):
        if "pattern" in node:
            assert node["pattern"].startswith("^"), path
            assert node["pattern"].endswith("$"), path


def test_spec_defaults_match_the_documented_ones(schema: dict[str, Any]) -> None:
    spec = schema["properties"]["spec"]["properties"]

    assert (spec["shards"]["minimum"], spec["shards"]["maximum"], spec["shards"]["default"]) == (1, 100, 3)
    assert (spec["replicasPerShard"]["minimum"], spec["replicasPerShard"]["maximum"]) == (0, 5)
    assert spec["replicasPerShard"]["default"] == 1
    assert spec["persistence"]["properties"]["retentionPolicy"]["enum"] == ["Retain", "Delete"]


def test_status_conditions_have_the_metav1_condition_shape(schema: dict[str, Any]) -> None:
    conditions = schema["properties"]["status"]["properties"]["conditions"]["items"]

    assert set(conditions["required"]) == {"type", "status", "lastTransitionTime", "reason", "message"}
    assert conditions["properties"]["status"]["enum"] == ["True", "False", "Unknown"]
    assert conditions["properties"]["lastTransitionTime"]["format"] == "date-time"
