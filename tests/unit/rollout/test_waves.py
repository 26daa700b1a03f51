from __future__ import annotations

from pathlib import Path

import pytest

from syncer.config.rollout import RolloutPolicy, WavePolicy, load_rollout_policy
from syncer.domain.selectors import LabelSelector
from syncer.rollout import plan_waves, stable_rank

POLICY = load_rollout_policy(Path(__file__).resolve().parents[3] / "policies" / "rollout.yaml")
PERCENTS = RolloutPolicy(tuple(WavePolicy(f"w{p}", p) for p in (1, 10, 50, 100)))


def fleet(n: int, canaries: int = 0) -> dict[str, dict[str, str]]:
    clusters = {f"prod-{i:03d}": {"tier": "prod"} for i in range(n - canaries)}
    clusters.update({f"canary-{i}": {"tier": "canary"} for i in range(canaries)})
    return clusters


@pytest.mark.parametrize(
    ("size", "expected"),
    [(1, [1]), (3, [1, 1, 1]), (10, [1, 4, 5]), (100, [1, 9, 40, 50]), (250, [3, 22, 100, 125])],
)
def test_waves_hold_cumulative_percentages_of_the_fleet(size: int, expected: list[int]) -> None:
    waves = plan_waves(fleet(size), PERCENTS)
    assert [len(w.clusters) for w in waves] == expected
    placed = [c for w in waves for c in w.clusters]
    assert sorted(placed) == sorted(fleet(size)), "every cluster exactly once"


def test_the_first_wave_always_has_a_cluster() -> None:
    tiny = RolloutPolicy((WavePolicy("first", 0.01), WavePolicy("rest", 100)))
    waves = plan_waves(fleet(5), tiny)
    assert len(waves[0].clusters) == 1
    assert waves[0].name == "first"


def test_clusters_matching_a_wave_selector_are_pinned_to_it() -> None:
    waves = plan_waves(fleet(20, canaries=2), POLICY)
    assert waves[0].name == "canary"
    assert sorted(waves[0].clusters) == ["canary-0", "canary-1"]
    assert all(not c.startswith("canary") for w in waves[1:] for c in w.clusters)


def test_the_example_fleet_rolls_canary_first() -> None:
    clusters = {
        "canary": {"tier": "canary", "region": "eu-west"},
        "eu-1": {"tier": "prod", "region": "eu-west"},
        "us-1": {"tier": "prod", "region": "us-east"},
    }
    waves = plan_waves(clusters, POLICY)
    assert (waves[0].name, waves[0].clusters) == ("canary", ("canary",))
    assert sorted(c for w in waves[1:] for c in w.clusters) == ["eu-1", "us-1"]
    assert [w.index for w in waves] == sorted(w.index for w in waves)


def test_assignment_is_stable_across_runs_and_input_order() -> None:
    clusters = fleet(40)
    forward = plan_waves(clusters, PERCENTS)
    backward = plan_waves(dict(reversed(list(clusters.items()))), PERCENTS)
    assert forward == backward
    assert forward[0].clusters == (min(clusters, key=stable_rank),)


def test_adding_a_cluster_keeps_the_canary_unless_the_newcomer_ranks_first() -> None:
    clusters = fleet(40)
    before = plan_waves(clusters, PERCENTS)[0].clusters
    newcomer = next(f"new-{i}" for i in range(1000) if stable_rank(f"new-{i}") > stable_rank(before[0]))
    after = plan_waves({**clusters, newcomer: {"tier": "prod"}}, PERCENTS)[0].clusters
    assert after == before


def test_a_selector_matching_nothing_leaves_its_share_to_hashing() -> None:
    policy = RolloutPolicy(
        (
            WavePolicy("canary", 1, LabelSelector.from_dict({"matchLabels": {"tier": "nope"}})),
            WavePolicy("rest", 100),
        )
    )
    waves = plan_waves(fleet(10), policy)
    assert [len(w.clusters) for w in waves] == [1, 9]


def test_no_clusters_no_waves() -> None:
    assert plan_waves({}, PERCENTS) == ()
