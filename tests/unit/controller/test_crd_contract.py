"""What the controller writes and reads fits the one CRD file the manifests stage validates with."""

from __future__ import annotations

from typing import Any

import yaml
from jsonschema import Draft4Validator

from syncer.controller.model import ClusterSpec
from syncer.controller.status import Observed, ShardState, StallCause, compute
from syncer.controller.upgrade import Phase, RolloutState
from syncer.crds import load_crd
from syncer.manifests.schema import crd_validators, kube_to_json_schema

SPEC = ClusterSpec(name="c", namespace="n", uid="u", generation=2, version="7.4", shards=2)


def schema(part: str) -> Draft4Validator:
    (version,) = load_crd()["spec"]["versions"]
    return Draft4Validator(kube_to_json_schema(version["schema"]["openAPIV3Schema"]["properties"][part]))


def test_every_status_the_controller_writes_fits_the_status_schema() -> None:
    validator = schema("status")
    shards = [ShardState(0, True, True, 2, 2, 2, True, "7.4"), ShardState(1)]
    rollouts = [None, *(RolloutState("abc", phase, 1, 3, 1, 1e9, 1e9 + 5, "m") for phase in Phase)]
    for rollout in rollouts:
        for problem in (None, StallCause("SecretNotFound", "gone")):
            status = compute(Observed(SPEC, shards, rollout, None, problem), {}, 1e9)
            errors = [e.message for e in validator.iter_errors(status)]
            assert not errors, (rollout, problem, errors)


def test_the_manifests_validator_accepts_the_fields_the_controller_reads() -> None:
    validator = crd_validators()[("redis.syncer.dev/v1alpha1", "RedisCluster")]
    body: dict[str, Any] = yaml.safe_load(
        """
        apiVersion: redis.syncer.dev/v1alpha1
        kind: RedisCluster
        metadata: {name: c, namespace: n}
        spec:
          version: "7.4"
          podMetadata: {labels: {team: web}, annotations: {a: b}}
          rolloutStrategy:
            steps: [{pods: 1, pause: 30s}, {percent: 50, pause: 1m}]
            stepTimeout: 5m
            revertOnFailure: false
        """
    )
    assert not list(validator.iter_errors(body))
    body["spec"]["podMetadata"]["labels"] = {"team": 5}
    body["spec"]["redisConfig"] = {"maxmemory": "1gb\nport 1"}
    assert len(list(validator.iter_errors(body))) == 2
