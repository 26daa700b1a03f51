"""``syncer status --cluster``: only the clusters named, and a clear error for a name the config
does not have (the command notifications point people to)."""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from click.testing import CliRunner

from syncer.cli import cli


def _config(tmp_path: Path) -> Path:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "x", "cluster": {"server": "https://127.0.0.1:1"}}],
                "users": [{"name": "x", "user": {"token": "t"}}],
                "contexts": [{"name": n, "context": {"cluster": "x", "user": "x"}} for n in ("eu-1", "us-1")],
            }
        )
    )
    (tmp_path / "trust.yaml").write_text("mode: head\n")
    agent = tmp_path / "agent.yaml"
    clusters = {n: {"context": n, "kubeconfig": "kubeconfig"} for n in ("eu-1", "us-1")}
    agent.write_text(
        yaml.safe_dump(
            {
                "source": {"url": "https://git.example.org/f.git"},
                "trustPolicy": "trust.yaml",
                "clusters": clusters,
            }
        )
    )
    return agent


def test_status_of_one_cluster_reads_only_that_cluster(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        cli, ["status", "--config", str(_config(tmp_path)), "--cluster", "us-1", "-o", "json"]
    )
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)["clusters"]
    assert [r["cluster"] for r in rows] == ["us-1"]
    assert rows[0]["error"]  # nobody listens there: said in the row, not a traceback


def test_a_cluster_the_config_does_not_have_is_a_clear_error(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["status", "--config", str(_config(tmp_path)), "--cluster", "mars"])
    assert result.exit_code == 2
    assert "mars not in the agent config (clusters: eu-1, us-1)" in result.output
    assert "Traceback" not in result.output
