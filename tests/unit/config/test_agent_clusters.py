"""The optional ``clusters:`` mapping of the agent config: cluster name -> kubeconfig context."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from syncer.config import ClusterAccess, load_agent_config
from syncer.errors import ConfigError


def _write(tmp_path: Path, clusters: Any) -> Path:
    (tmp_path / "trust.yaml").write_text("mode: head\n")
    config = {"source": {"url": "https://h/f.git"}, "trustPolicy": "trust.yaml", "clusters": clusters}
    (tmp_path / "agent.yaml").write_text(yaml.safe_dump(config))
    return tmp_path / "agent.yaml"


def test_clusters_map_to_contexts_and_kubeconfigs(tmp_path: Path) -> None:
    path = _write(tmp_path, {"eu-1": {"context": "prod-eu", "kubeconfig": "kube/eu.yaml"}, "us-1": None})
    loaded = load_agent_config(path)
    assert loaded.clusters == {
        "eu-1": ClusterAccess("prod-eu", tmp_path / "kube" / "eu.yaml"),
        "us-1": ClusterAccess("us-1"),
    }


def test_without_clusters_the_mapping_is_empty(tmp_path: Path) -> None:
    path = _write(tmp_path, None)
    assert load_agent_config(path).clusters == {}


@pytest.mark.parametrize(
    ("clusters", "problem"),
    [
        (["eu-1"], "clusters: must be a mapping"),
        ({"eu-1": {"ctx": "x"}}, "unknown key(s) ctx"),
        ({"eu-1": {"context": ""}}, "clusters.eu-1.context: must be a non-empty string"),
    ],
)
def test_invalid_clusters(tmp_path: Path, clusters: Any, problem: str) -> None:
    with pytest.raises(ConfigError) as raised:
        load_agent_config(_write(tmp_path, clusters))
    assert problem in str(raised.value)


def test_the_lease_home_is_the_first_cluster_when_clusters_name_their_own_kubeconfigs(tmp_path: Path) -> None:
    from syncer.config.agent import home_cluster
    from syncer.config.settings import HomeCluster

    config = load_agent_config(
        _write(
            tmp_path,
            {"eu-1": {"context": "prod-eu", "kubeconfig": "kube/eu.yaml"}, "us-1": {"kubeconfig": "us"}},
        )
    )
    assert home_cluster(config, "", "") == HomeCluster(str(tmp_path / "kube" / "eu.yaml"), "prod-eu")
    # --kubeconfig ($KUBECONFIG) or --lease-context say where it is instead.
    assert home_cluster(config, "/k", "") == HomeCluster(context="")
    assert home_cluster(config, "", "home") == HomeCluster(context="home")
    # Clusters of the default kubeconfig: its current context, as before.
    assert home_cluster(load_agent_config(_write(tmp_path, {"eu-1": None})), "", "") == HomeCluster()
