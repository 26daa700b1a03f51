"""``syncer diff`` without clusters: offline output in each format, exit codes, bad input."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import jsonschema
import yaml
from click.testing import CliRunner

from syncer.cli import cli
from syncer.plan import diff_schema

EXAMPLE = Path(__file__).parents[3] / "examples" / "repo"


def _run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, ["diff", *args])
    return result.exit_code, result.stdout, result.stderr


def test_offline_json_follows_the_schema_and_exits_1_for_changes() -> None:
    code, out, _ = _run("--repo", str(EXAMPLE), "--offline", "-o", "json")
    assert code == 1
    document = json.loads(out)
    jsonschema.Draft202012Validator(diff_schema()).validate(document)
    assert document["offline"] is True
    actions = {o["action"] for w in document["waves"] for c in w["clusters"] for o in c["objects"]}
    assert actions == {"create"}


def test_offline_yaml_is_the_same_document() -> None:
    _, as_json, _ = _run("--repo", str(EXAMPLE), "--offline", "-o", "json")
    _, as_yaml, _ = _run("--repo", str(EXAMPLE), "--offline", "-o", "yaml")
    assert yaml.safe_load(as_yaml) == json.loads(as_json)


def test_offline_text_names_waves_clusters_objects_and_a_summary(tmp_path: Path) -> None:
    policy = tmp_path / "rollout.yaml"
    policy.write_text(
        yaml.safe_dump(
            {
                "waves": [
                    {"name": "canary", "percent": 1, "selector": {"matchLabels": {"tier": "canary"}}},
                    {"name": "rest", "percent": 100},
                ]
            }
        )
    )
    code, out, _ = _run("--repo", str(EXAMPLE), "--offline", "--rollout-policy", str(policy))
    assert code == 1
    assert out.index("wave 1: canary") < out.index("cluster canary") < out.index("wave 2: rest")
    assert "create    RedisCluster/redis/sessions" in out
    assert "summary" in out


def test_an_empty_fleet_has_no_changes(tmp_path: Path) -> None:
    (tmp_path / "fleet.yaml").write_text(
        "apiVersion: syncer.dev/v1alpha1\nkind: Fleet\nclusters:\n  - name: lonely\n"
    )
    code, out, _ = _run("--repo", str(tmp_path), "--offline", "-o", "json")
    assert code == 0
    assert json.loads(out)["changed"] is False


def test_invalid_manifests_exit_2_with_file_and_line(tmp_path: Path) -> None:
    (tmp_path / "fleet.yaml").write_text("apiVersion: syncer.dev/v1alpha1\nkind: Fleet\nclusters: []\n")
    code, _, err = _run("--repo", str(tmp_path), "--offline")
    assert code == 2
    assert "fleet.yaml:" in err


def test_an_unknown_cluster_exits_2() -> None:
    code, _, err = _run("--repo", str(EXAMPLE), "--offline", "--cluster", "mars")
    assert code == 2
    assert "mars" in err


def test_an_unreachable_cluster_is_an_error_of_that_cluster(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "x", "cluster": {"server": "https://127.0.0.1:1"}}],
                "users": [{"name": "x", "user": {"token": "t"}}],
                "contexts": [{"name": "far", "context": {"cluster": "x", "user": "x"}}],
            }
        )
    )
    agent = tmp_path / "agent.yaml"
    (tmp_path / "trust.yaml").write_text("mode: head\n")
    agent.write_text(
        yaml.safe_dump(
            {
                "source": {"url": "https://git.example.org/fleet.git"},
                "trustPolicy": "trust.yaml",
                "clusters": {"us-1": {"context": "far", "kubeconfig": "kubeconfig"}},
            }
        )
    )
    code, out, _ = _run("--repo", str(EXAMPLE), "--cluster", "us-1", "--config", str(agent), "-o", "json")
    assert code == 2
    document = json.loads(out)
    (cluster,) = document["waves"][0]["clusters"]
    assert cluster["name"] == "us-1"
    assert "cannot reach the apiserver" in cluster["error"]
    assert document["errors"] == [f"cluster us-1: {cluster['error']}"]


def test_a_rejected_revision_still_prints_a_document_naming_file_and_line(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    shutil.copytree(EXAMPLE, repo)
    sessions = repo / "base" / "sessions.yaml"
    text = sessions.read_text()
    sessions.write_text(text.replace('version: "7.2.5"', 'version: "7.4\\n"', 1))
    assert sessions.read_text() != text
    for output in ("json", "yaml"):
        code, out, err = _run("--repo", str(repo), "--offline", "-o", output)
        assert code == 2
        document = yaml.safe_load(out)
        jsonschema.Draft202012Validator(diff_schema()).validate(document)
        assert document["waves"] == []
        (error,) = document["errors"]
        assert error.startswith("base/sessions.yaml:11:")
        assert "spec.version" in error
        assert "the revision is rejected" in err


def test_clusters_are_listed_by_name_within_a_wave(tmp_path: Path) -> None:
    names = ["zeta", "alpha", "mid", "beta", "omega", "delta", "kappa", "gamma"]
    clusters = "".join(f"  - name: {n}\n" for n in names)
    (tmp_path / "fleet.yaml").write_text(
        f"apiVersion: syncer.dev/v1alpha1\nkind: Fleet\nclusters:\n{clusters}"
    )
    code, out, _ = _run("--repo", str(tmp_path), "--offline", "-o", "json")
    assert code == 0
    (wave,) = json.loads(out)["waves"]
    assert [c["name"] for c in wave["clusters"]] == sorted(names)
