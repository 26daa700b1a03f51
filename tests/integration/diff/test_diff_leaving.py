"""A cluster the agent's config names but the revision's fleet no longer lists is named by the diff,
with the objects syncer applied there, and the sync then leaves those objects as the diff says."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from syncer.cli import cli
from syncer.config.rollout import RolloutPolicy, WaveGate, WavePolicy
from syncer.engine.rollout import FleetRollout
from syncer.engine.rollout_model import RolloutOptions
from syncer.errors import NotFound
from syncer.kube import ClusterClient
from syncer.manifests import load_fleet
from tests.integration.conftest import FleetHandle
from tests.integration.diff.conftest import write_repo
from tests.support.unfenced import UNFENCED_HOOKS

pytestmark = pytest.mark.integration


def _namespace(name: str) -> dict[str, object]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}


def test_a_cluster_leaving_the_fleet_is_named_with_its_objects_and_the_sync_leaves_them(
    fleet: FleetHandle, namespace: str, tmp_path: Path
) -> None:
    leaving, staying = fleet.names[0], fleet.names[1]
    kept = f"{namespace}-kept"
    state_namespace = f"{namespace}-state"
    apis = {n: ClusterClient.from_kubeconfig(str(fleet.kubeconfig), n) for n in (leaving, staying)}
    gate = WaveGate(max_concurrent=2, health_timeout=60.0, bake=0.0)
    options = RolloutOptions(
        rollout=RolloutPolicy((WavePolicy("all", 100.0, None, gate),), rollback=False),
        state_namespace=state_namespace,
        health_poll=0.5,
    )
    try:
        first = write_repo(tmp_path / "r1", [leaving, staying], {leaving: [_namespace(kept)], staying: []})
        FleetRollout(apis, options, hooks=UNFENCED_HOOKS).sync(load_fleet(first, "r1"))
        assert apis[leaving].get("v1", "Namespace", kept)

        second = write_repo(tmp_path / "r2", [staying], {staying: []})
        (tmp_path / "trust.yaml").write_text("mode: head\n")
        agent = tmp_path / "agent.yaml"
        clusters = {n: {"context": n, "kubeconfig": str(fleet.kubeconfig)} for n in (leaving, staying)}
        agent.write_text(
            yaml.safe_dump(
                {"source": {"url": str(second)}, "trustPolicy": "trust.yaml", "clusters": clusters}
            )
        )
        args = ["diff", "--repo", str(second), "--config", str(agent), "--state-namespace", state_namespace]
        result = CliRunner().invoke(cli, [*args, "-o", "json"])
        assert result.exit_code == 1, result.output
        (named,) = json.loads(result.stdout)["leaving"]
        assert (named["name"], named["objects"], named["error"]) == (leaving, 1, "")
        assert "syncer no longer applies, prunes or repairs anything there" in named["message"]
        text = CliRunner().invoke(cli, args)
        assert f"cluster {leaving} leaves the fleet" in text.stdout

        FleetRollout(apis, options, hooks=UNFENCED_HOOKS).sync(load_fleet(second, "r2"))
        assert apis[leaving].get("v1", "Namespace", kept)["metadata"]["name"] == kept
    finally:
        for api in apis.values():
            for extra in (kept, state_namespace):
                with contextlib.suppress(NotFound):
                    api.delete("v1", "Namespace", extra)
            api.close()
