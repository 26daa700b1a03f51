"""Which clusters concern a two-person rule keyed on clusters: those it selects that a revision changes."""

from __future__ import annotations

from typing import Any

from syncer.config.two_person import TwoPersonRule
from syncer.domain.objects import ClusterManifests, DesiredFleet, Manifest, ObjectKey
from syncer.domain.selectors import LabelSelector
from syncer.engine.approvals import changed_clusters
from syncer.errors import Location

PROD = TwoPersonRule("prod", clusters=LabelSelector.from_dict({"matchLabels": {"tier": "prod"}}))
PATHS = TwoPersonRule("docs", paths=("docs/**",))


def rc(cluster: str, version: str) -> Manifest:
    body: dict[str, Any] = {
        "kind": "RedisCluster",
        "metadata": {"name": "orders"},
        "spec": {"version": version},
    }
    return Manifest(
        ObjectKey(cluster, "redis.syncer.dev", "RedisCluster", "redis", "orders"), "v", body, Location("f")
    )


def fleet(revision: str, clusters: dict[str, tuple[dict[str, str], list[Manifest]]]) -> DesiredFleet:
    return DesiredFleet(
        revision, {n: ClusterManifests.of(n, ms, labels) for n, (labels, ms) in clusters.items()}
    )


CANARY, PRODL = {"tier": "canary"}, {"tier": "prod"}
BASE = fleet(
    "a", {"c": (CANARY, [rc("c", "7.2")]), "p": (PRODL, [rc("p", "7.2")]), "q": (PRODL, [rc("q", "7.2")])}
)


def test_only_selected_clusters_whose_objects_change_concern_the_rule() -> None:
    canary_only = fleet(
        "b", {"c": (CANARY, [rc("c", "7.4")]), "p": (PRODL, [rc("p", "7.2")]), "q": (PRODL, [rc("q", "7.2")])}
    )
    assert changed_clusters((PROD, PATHS), canary_only, BASE) == {}
    one_prod = fleet(
        "b", {"c": (CANARY, [rc("c", "7.2")]), "p": (PRODL, [rc("p", "7.4")]), "q": (PRODL, [rc("q", "7.2")])}
    )
    assert changed_clusters((PROD, PATHS), one_prod, BASE) == {"prod": ("p",)}
    emptied = fleet("b", {"c": (CANARY, [rc("c", "7.2")]), "p": (PRODL, []), "q": (PRODL, [rc("q", "7.2")])})
    assert changed_clusters((PROD,), emptied, BASE) == {"prod": ("p",)}


def test_moving_a_cluster_in_or_out_of_the_selection_and_adding_or_dropping_one_count() -> None:
    promoted = fleet(
        "b", {"c": (PRODL, [rc("c", "7.2")]), "p": (PRODL, [rc("p", "7.2")]), "q": (PRODL, [rc("q", "7.2")])}
    )
    assert changed_clusters((PROD,), promoted, BASE) == {"prod": ("c",)}
    demoted = fleet(
        "b",
        {"c": (CANARY, [rc("c", "7.2")]), "p": (CANARY, [rc("p", "7.2")]), "q": (PRODL, [rc("q", "7.2")])},
    )
    assert changed_clusters((PROD,), demoted, BASE) == {"prod": ("p",)}
    dropped = fleet("b", {"c": (CANARY, [rc("c", "7.2")]), "p": (PRODL, [rc("p", "7.2")])})
    assert changed_clusters((PROD,), dropped, BASE) == {"prod": ("q",)}
    added = fleet(
        "b", {**{n: (dict(c.labels), list(c.manifests)) for n, c in BASE.clusters.items()}, "r": (PRODL, [])}
    )
    assert changed_clusters((PROD,), added, BASE) == {"prod": ("r",)}


def test_without_a_base_every_selected_cluster_counts() -> None:
    assert changed_clusters((PROD,), BASE, None) == {"prod": ("p", "q")}
