from __future__ import annotations

from typing import Any

import pytest

from syncer.controller.model import RolloutStep, SecretRef, SpecError, parse, spec_duration


def cluster(**spec: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": "c", "namespace": "n", "uid": "u", "generation": 3},
        "spec": {"version": "7.2", **spec},
    }


@pytest.mark.parametrize(
    ("text", "seconds"), [("30s", 30.0), ("5m", 300.0), ("1h30m", 5400.0), ("1500ms", 1.5), ("1m0s", 60.0)]
)
def test_durations(text: str, seconds: float) -> None:
    assert spec_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "5", "1d", "m5", "5 m", "1h 30m"])
def test_bad_durations(text: str) -> None:
    with pytest.raises(SpecError, match="invalid duration"):
        spec_duration(text)


def test_defaults_are_applied_in_memory() -> None:
    raw = cluster()
    spec = parse(raw)
    assert (spec.shards, spec.replicas_per_shard, spec.pods_per_shard) == (3, 1, 2)
    assert spec.redis_image == "redis:7.2"
    assert (spec.persistence, spec.retention, spec.pdb, spec.max_unavailable) == (True, "Retain", True, 1)
    assert (spec.strategy.steps, spec.strategy.step_timeout, spec.strategy.revert_on_failure) == (
        (),
        600.0,
        True,
    )
    assert raw["spec"] == {"version": "7.2"}  # the object itself is not touched


def test_everything_is_read() -> None:
    spec = parse(
        cluster(
            shards=2,
            replicasPerShard=0,
            auth={"secretRef": {"name": "a"}},
            tls={"secretRef": {"name": "t"}},
            redisConfig={"maxmemory": "1gb"},
            rolloutStrategy={"steps": [{"pods": 1, "pause": "10s"}, {"percent": 50}], "stepTimeout": "2m"},
            tolerations=[{"key": "k"}],
        )
    )
    assert spec.auth == SecretRef("a", "password")
    assert spec.secret_names() == ("a", "t")
    assert spec.redis_config == (("maxmemory", "1gb"),)
    assert spec.strategy.steps == (RolloutStep(pods=1, pause=10.0), RolloutStep(percent=50))
    assert spec.strategy.step_timeout == 120.0
    assert spec.scheduling == {"tolerations": [{"key": "k"}]}


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"redisConfig": {"port": "7000"}}, "set by the controller"),
        ({"redisConfig": {"Bad Key": "x"}}, "not a redis.conf directive"),
        ({"redisConfig": {"maxmemory": "1\nport 1"}}, "spans lines"),
        ({"redisConfig": {"appendonly": "no"}}, "appendonly must be 'yes' .*comes back empty"),
        ({"rolloutStrategy": {"steps": [{"pods": 1, "percent": 5}]}}, "exactly one of pods and percent"),
        ({"version": ""}, "spec.version is required"),
    ],
)
def test_specs_the_schema_lets_through_but_the_controller_cannot_run(
    spec: dict[str, Any], message: str
) -> None:
    with pytest.raises(SpecError, match=message):
        parse(cluster(**spec))


def test_appendonly_may_be_stated_with_the_controllers_value() -> None:
    assert ("appendonly", "yes") in parse(cluster(redisConfig={"appendonly": "yes"})).redis_config
    assert ("appendonly", "YES") in parse(cluster(redisConfig={"appendonly": "YES"})).redis_config
