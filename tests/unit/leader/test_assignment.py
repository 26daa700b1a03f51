"""Clusters to replicas: every cluster placed once, loads bounded, few moves when replicas change."""

from __future__ import annotations

import random

import pytest

from syncer.leader.assignment import assign, capacity, moved, owned_by


def _fleet(n: int) -> list[str]:
    return [f"c-{i:04d}" for i in range(n)]


def _replicas(n: int) -> list[str]:
    return [f"syncer-{i}-{i * 7919 % 1000:03d}" for i in range(n)]


@pytest.mark.parametrize(("clusters", "replicas"), [(1, 1), (20, 2), (20, 3), (100, 2), (100, 7), (1000, 10)])
def test_every_cluster_has_exactly_one_owner_within_the_bound(clusters: int, replicas: int) -> None:
    names, members = _fleet(clusters), _replicas(replicas)
    placed = assign(names, members)
    assert set(placed) == set(names)
    assert set(placed.values()) <= set(members)
    bound = capacity(clusters, replicas)
    assert bound <= clusters / replicas * 1.1 + 1
    assert all(len(owned_by(placed, r)) <= bound for r in members)


def test_every_replica_computes_the_same_answer_whatever_the_order() -> None:
    names, members = _fleet(200), _replicas(4)
    shuffled_names, shuffled_members = names[:], members[:]
    random.Random(7).shuffle(shuffled_names)
    random.Random(8).shuffle(shuffled_members)
    assert assign(names, members) == assign(shuffled_names, shuffled_members)


def test_no_replica_means_no_owner() -> None:
    assert assign(_fleet(3), []) == {}


@pytest.mark.parametrize(("clusters", "replicas"), [(20, 2), (100, 2), (100, 5), (1000, 10)])
def test_a_joining_replica_takes_about_its_share_and_nothing_else_moves_much(
    clusters: int, replicas: int
) -> None:
    names, members = _fleet(clusters), _replicas(replicas + 1)
    before = assign(names, members[:-1])
    after = assign(names, members)
    share = clusters / len(members)
    # The newcomer's clusters move by necessity; the bound may move a few others.
    assert len(moved(before, after)) <= 1.3 * share + 2
    assert len(owned_by(after, members[-1])) >= 0.5 * share


@pytest.mark.parametrize(("clusters", "replicas"), [(20, 2), (100, 3), (100, 5), (1000, 10)])
def test_a_leaving_replica_moves_its_own_clusters_and_few_more(clusters: int, replicas: int) -> None:
    names, members = _fleet(clusters), _replicas(replicas)
    before = assign(names, members)
    gone = members[0]
    after = assign(names, members[1:])
    mine = owned_by(before, gone)
    changed = moved(before, after)
    assert mine <= changed
    assert len(changed - mine) <= 0.3 * len(mine) + 2


def test_a_new_cluster_moves_few_others() -> None:
    names, members = _fleet(100), _replicas(3)
    before = assign(names, members)
    after = assign([*names, "c-new"], members)
    assert len(moved(before, after)) <= 3
