from __future__ import annotations

from typing import Any

import pytest
from jsonschema import Draft4Validator, Draft202012Validator

from syncer.crds import load_crd
from syncer.manifests.documents import METADATA_SCHEMA
from syncer.manifests.fleet_config import FLEET_SCHEMA
from syncer.manifests.options import REDIS_CLUSTER
from syncer.manifests.overlays import PATCHES_SCHEMA
from syncer.manifests.schema import crd_validators, dotted, json_schema_validator, kube_to_json_schema


def _redis_cluster(spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": REDIS_CLUSTER.api_version,
        "kind": REDIS_CLUSTER.kind,
        "metadata": {"name": "cache", "namespace": "redis"},
        "spec": spec,
    }


def _messages(spec: dict[str, Any]) -> list[str]:
    validator = crd_validators()[(REDIS_CLUSTER.api_version, REDIS_CLUSTER.kind)]
    return [e.message for e in validator.iter_errors(_redis_cluster(spec))]


def test_int_or_string_becomes_a_choice_of_integer_and_string() -> None:
    schema = kube_to_json_schema({"x-kubernetes-int-or-string": True, "pattern": "^[0-9]+Gi$"})

    assert schema == {"pattern": "^[0-9]+Gi$", "anyOf": [{"type": "integer"}, {"type": "string"}]}


def test_objects_with_properties_are_closed_unless_they_preserve_unknown_fields() -> None:
    schema = kube_to_json_schema(
        {
            "type": "object",
            "description": "dropped",
            "properties": {
                "strict": {"type": "object", "properties": {"a": {"type": "string"}}},
                "open": {"type": "object", "x-kubernetes-preserve-unknown-fields": True, "properties": {}},
                "map": {"type": "object", "additionalProperties": {"type": "string"}},
            },
            "oneOf": [{"required": ["strict"], "properties": {"strict": {"required": ["a"]}}}],
        }
    )

    assert schema["additionalProperties"] is False
    assert schema["properties"]["strict"]["additionalProperties"] is False
    assert "additionalProperties" not in schema["properties"]["open"]
    assert schema["properties"]["map"]["additionalProperties"] == {"type": "string"}
    assert "additionalProperties" not in schema["oneOf"][0]
    assert "description" not in schema


def test_the_translated_crd_schema_is_a_valid_draft4_schema() -> None:
    for version in load_crd()["spec"]["versions"]:
        Draft4Validator.check_schema(kube_to_json_schema(version["schema"]["openAPIV3Schema"]))


@pytest.mark.parametrize("schema", [METADATA_SCHEMA, FLEET_SCHEMA, PATCHES_SCHEMA])
def test_syncer_own_file_schemas_are_valid_2020_12_schemas(schema: Any) -> None:
    """They are not checked against the meta-schema when a repository is loaded: this test does it."""
    Draft202012Validator.check_schema(schema)


def test_a_complete_spec_is_valid() -> None:
    spec = {
        "shards": 3,
        "replicasPerShard": 1,
        "version": "7.2.5",
        "image": "redis:7.2.5",
        "resources": {"requests": {"cpu": "250m", "memory": "1Gi"}, "limits": {"cpu": 2, "memory": "1.5Gi"}},
        "persistence": {
            "enabled": True,
            "size": "10Gi",
            "storageClassName": "ssd",
            "retentionPolicy": "Delete",
        },
        "auth": {"secretRef": {"name": "cache-auth", "key": "password"}},
        "tls": {"secretRef": {"name": "cache-tls"}},
        "redisConfig": {"maxmemory-policy": "allkeys-lru"},
        "exporter": {"enabled": True, "image": "exporter:1", "resources": {"requests": {"cpu": "10m"}}},
        "affinity": {"podAntiAffinity": {"anything": ["goes"]}},
        "tolerations": [{"key": "dedicated", "operator": "Exists", "unknownToUs": 1}],
        "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "zone"}],
        "securityContext": {"runAsNonRoot": True},
        "podDisruptionBudget": {"enabled": True, "maxUnavailable": 1},
        "rolloutStrategy": {
            "steps": [{"pods": 1, "pause": "30s"}, {"percent": 50, "pause": "1h30m"}, {"percent": 100}],
            "stepTimeout": "10m",
            "revertOnFailure": True,
        },
    }

    assert _messages(spec) == []


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ({"version": "7.2", "shards": 101}, "101 is greater than the maximum of 100"),
        ({"version": "7.2", "replicasPerShard": -1}, "-1 is less than the minimum of 0"),
        ({"version": "7"}, "'7' does not match"),
        ({"version": "7.2", "resources": {"limits": {"memory": "1GB"}}}, "'1GB' does not match"),
        ({"version": "7.2", "persistence": {"size": 1.5}}, "1.5 is not valid under any of the given schemas"),
        ({"version": "7.2", "redisConfig": {"appendonly": True}}, "True is not of type 'string'"),
        ({"version": "7.2", "auth": {}}, "'secretRef' is a required property"),
        ({"version": "7.2", "rolloutStrategy": {"steps": [{"pause": "1m"}]}}, "is not valid under any"),
        ({"version": "7.2", "rolloutStrategy": {"stepTimeout": "ten minutes"}}, "does not match"),
        ({"version": "7.2", "extra": 1}, "Additional properties are not allowed ('extra' was unexpected)"),
        ({"version": "7.2", "podDisruptionBudget": {"maxUnavailable": 0}}, "0 is less than the minimum of 1"),
    ],
)
def test_invalid_specs_are_rejected(spec: dict[str, Any], expected: str) -> None:
    messages = _messages(spec)

    assert any(expected in m for m in messages), messages


def test_dotted_paths_read_like_kubectl_field_paths() -> None:
    assert dotted(("spec", "rolloutStrategy", "steps", 2, "pause")) == "spec.rolloutStrategy.steps[2].pause"
    assert dotted(()) == ""


@pytest.mark.parametrize(
    ("spec", "why"),
    [
        ({"version": "\u0667.\u0664"}, "RE2's \\d is ASCII only: Arabic-Indic digits are not digits"),
        ({"version": "7.4\n"}, "RE2's $ matches only at the very end, not before a final newline"),
        ({"version": "7.2", "resources": {"limits": {"cpu": "\uff12"}}}, "full-width digits are not digits"),
        ({"version": "7.2", "shards": 3.5}, "a fraction is not an integer"),
        ({"version": "7.2", "persistence": {"size": True}}, "a boolean is neither integer nor string"),
    ],
)
def test_values_the_apiserver_refuses_are_refused_offline(spec: dict[str, Any], why: str) -> None:
    assert _messages(spec), why


@pytest.mark.parametrize(
    ("spec", "why"),
    [
        ({"version": "7.2", "resources": {"limits": {"cpu": 3.0}}}, "a whole-number float is an integer"),
        ({"version": "7.2", "shards": 3.0, "replicasPerShard": 1.0}, "integers written as floats"),
        ({"version": "7.2.5", "resources": {"requests": {"memory": "1.5Gi"}}}, "plain ASCII values"),
    ],
)
def test_values_the_apiserver_accepts_are_accepted_offline(spec: dict[str, Any], why: str) -> None:
    assert _messages(spec) == [], why


def test_own_file_formats_match_patterns_like_the_apiserver() -> None:
    validator = json_schema_validator(METADATA_SCHEMA)
    assert not list(validator.iter_errors({"name": "cache", "namespace": "redis"}))
    assert list(validator.iter_errors({"name": "cache\n", "namespace": "redis"}))
    assert list(validator.iter_errors({"name": "cache", "namespace": "redis\n"}))
