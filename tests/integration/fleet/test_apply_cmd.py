"""`syncer-fleet apply` installs files (the RedisCluster CRD) into every cluster of the fleet."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from devfleet.cli import cli
from syncer.crds import crd_path
from syncer.kube import ClusterClient
from tests.integration.conftest import FleetHandle

pytestmark = pytest.mark.integration


def test_the_crd_is_applied_to_every_cluster_and_established(fleet: FleetHandle) -> None:
    result = CliRunner().invoke(
        cli, ["apply", "--state-dir", str(fleet.state.root), "-f", str(crd_path())], catch_exceptions=False
    )
    assert result.exit_code == 0, result.output
    assert result.output.count("CustomResourceDefinition/redisclusters.redis.syncer.dev applied") == 3
    for name in fleet.names:
        client = ClusterClient.from_kubeconfig(str(fleet.kubeconfig), name)
        try:
            assert client.list("redis.syncer.dev/v1alpha1", "RedisCluster").items is not None
        finally:
            client.close()
