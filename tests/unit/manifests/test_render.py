"""The example fleet repository renders cleanly, deterministically, with the documented semantics."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from syncer.domain.objects import DesiredFleet
from syncer.errors import ManifestError
from syncer.manifests import load_fleet

EXAMPLE = Path(__file__).parents[3] / "examples" / "repo"


@pytest.fixture(scope="module")
def fleet() -> DesiredFleet:
    return load_fleet(EXAMPLE, "example")


def _subjects(fleet: DesiredFleet, cluster: str) -> list[str]:
    return [m.key.subject for m in fleet.clusters[cluster].manifests]


def _spec(fleet: DesiredFleet, cluster: str, name: str) -> dict[str, object]:
    found = next(m for m in fleet.clusters[cluster].manifests if m.key.name == name)
    return dict(found.body["spec"])


def test_every_cluster_receives_its_objects_in_key_order(fleet: DesiredFleet) -> None:
    assert fleet.revision == "example"
    assert list(fleet.clusters) == ["canary", "eu-1", "us-1"]
    eu = [
        "Namespace/games",
        "Namespace/redis",
        "RedisCluster/games/leaderboard",
        "RedisCluster/redis/orders-cache",
        "RedisCluster/redis/sessions",
    ]
    assert _subjects(fleet, "canary") == eu
    assert _subjects(fleet, "eu-1") == eu
    assert _subjects(fleet, "us-1") == [
        "Namespace/redis",
        "RedisCluster/redis/orders-cache",
        "RedisCluster/redis/rate-limiter",
        "RedisCluster/redis/sessions",
    ]


def test_keys_carry_cluster_and_api_group(fleet: DesiredFleet) -> None:
    for name, cluster in fleet.clusters.items():
        for manifest in cluster.manifests:
            assert manifest.key.cluster == name
            expected_group = "" if manifest.key.kind == "Namespace" else "redis.syncer.dev"
            assert manifest.key.group == expected_group
            assert manifest.body["kind"] == manifest.key.kind


def test_namespaces_are_defaulted_only_for_namespaced_kinds(fleet: DesiredFleet) -> None:
    manifests = {m.key.subject: m for m in fleet.clusters["us-1"].manifests}

    assert manifests["RedisCluster/redis/rate-limiter"].body["metadata"]["namespace"] == "redis"
    assert "namespace" not in manifests["Namespace/redis"].body["metadata"]


def test_overlays_change_only_their_own_cluster(fleet: DesiredFleet) -> None:
    assert _spec(fleet, "eu-1", "sessions")["shards"] == 6
    assert _spec(fleet, "us-1", "sessions")["shards"] == 3
    assert _spec(fleet, "canary", "sessions")["version"] == "7.4.1"
    assert _spec(fleet, "eu-1", "sessions")["version"] == "7.2.5"
    assert _spec(fleet, "canary", "orders-cache")["shards"] == 2
    assert _spec(fleet, "eu-1", "sessions")["redisConfig"] == {
        "maxmemory-policy": "allkeys-lru",
        "maxmemory": "1800mb",
    }


def test_sources_point_at_the_declaring_document(fleet: DesiredFleet) -> None:
    sources = {m.key.subject: str(m.source) for m in fleet.clusters["eu-1"].manifests}

    assert sources["Namespace/games"] == "base/eu/leaderboard.yaml:34:1"
    assert sources["RedisCluster/redis/sessions"] == "base/sessions.yaml:2:1"


def test_rendering_is_deterministic_and_hashes_are_stable(fleet: DesiredFleet, tmp_path: Path) -> None:
    copy = tmp_path / "repo"
    shutil.copytree(EXAMPLE, copy)

    again = load_fleet(copy, "example")

    assert {n: c.content_hash for n, c in again.clusters.items()} == {
        n: c.content_hash for n, c in fleet.clusters.items()
    }
    assert [m.key for m in again.clusters["eu-1"].manifests] == [
        m.key for m in fleet.clusters["eu-1"].manifests
    ]
    assert len({c.content_hash for c in fleet.clusters.values()}) == 3


def test_a_changed_manifest_changes_only_the_hashes_of_clusters_receiving_it(
    fleet: DesiredFleet, tmp_path: Path
) -> None:
    copy = tmp_path / "repo"
    shutil.copytree(EXAMPLE, copy)
    leaderboard = copy / "base" / "eu" / "leaderboard.yaml"
    leaderboard.write_text(leaderboard.read_text().replace("shards: 4", "shards: 5"))

    changed = load_fleet(copy, "example")

    assert changed.clusters["us-1"].content_hash == fleet.clusters["us-1"].content_hash
    assert changed.clusters["eu-1"].content_hash != fleet.clusters["eu-1"].content_hash
    assert changed.clusters["canary"].content_hash != fleet.clusters["canary"].content_hash


def test_cosmetic_yaml_changes_do_not_change_the_hash(fleet: DesiredFleet, tmp_path: Path) -> None:
    copy = tmp_path / "repo"
    shutil.copytree(EXAMPLE, copy)
    rate_limiter = copy / "clusters" / "us-1" / "rate-limiter.yaml"
    rate_limiter.write_text("# reformatted\n" + rate_limiter.read_text().replace('"7.2.5"', "'7.2.5'"))

    assert load_fleet(copy, "example").clusters["us-1"].content_hash == fleet.clusters["us-1"].content_hash


def test_a_cluster_without_a_directory_gets_the_shared_objects(tmp_path: Path) -> None:
    shutil.copytree(EXAMPLE, tmp_path / "repo")
    fleet_file = tmp_path / "repo" / "fleet.yaml"
    fleet_file.write_text(
        fleet_file.read_text().replace(
            "clusters:\n", "clusters:\n  - name: dev-1\n    labels: {tier: dev}\n", 1
        )
    )

    fleet = load_fleet(tmp_path / "repo", "example")

    assert _subjects(fleet, "dev-1") == ["Namespace/redis", "RedisCluster/redis/sessions"]


def test_a_missing_root_is_a_manifest_error(tmp_path: Path) -> None:
    with pytest.raises(ManifestError) as caught:
        load_fleet(tmp_path / "nowhere", "x")

    assert caught.value.problems[0].kind == "layout"


def test_each_cluster_carries_its_labels_from_the_fleet_file(fleet: DesiredFleet) -> None:
    labels = {name: dict(cluster.labels) for name, cluster in fleet.clusters.items()}
    assert labels == {
        "canary": {"tier": "canary", "region": "eu-west"},
        "eu-1": {"tier": "prod", "region": "eu-west"},
        "us-1": {"tier": "prod", "region": "us-east"},
    }


@pytest.mark.parametrize(
    ("value", "said"),
    [
        (
            "9" * 5000,
            "yaml-value: integer 99999999999999999999... (5000 characters) is outside the 64-bit range",
        ),
        (".inf", "yaml-value: '.inf' is not a finite number"),
    ],
)
def test_a_value_yaml_cannot_hold_is_one_problem_at_its_line_and_not_judged_again(
    tmp_path: Path, value: str, said: str
) -> None:
    shutil.copytree(EXAMPLE, tmp_path / "repo")
    sessions = tmp_path / "repo" / "base" / "sessions.yaml"
    sessions.write_text(sessions.read_text().replace("shards: 3", f"shards: {value}", 1))

    with pytest.raises(ManifestError) as raised:
        load_fleet(tmp_path / "repo", "hostile")

    (found,) = raised.value.problems
    assert str(found).startswith(f"base/sessions.yaml:9:11: {said}")
