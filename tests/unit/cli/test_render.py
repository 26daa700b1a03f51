from __future__ import annotations

import re
import shutil
from pathlib import Path

import yaml
from click.testing import CliRunner

from syncer.cli import cli
from syncer.manifests import load_fleet

ROOT = Path(__file__).parents[3]
EXAMPLE = ROOT / "examples" / "repo"
MULTI_PROBLEM = ROOT / "tests" / "unit" / "manifests" / "corpus" / "multi-problem" / "repo"
PROBLEM_LINE = re.compile(r"^(?P<file>[^:\s]+)(:(?P<line>\d+):(?P<column>\d+))?: (?P<kind>[a-z-]+): .+$")


def test_render_prints_every_cluster_with_its_hash() -> None:
    result = CliRunner().invoke(cli, ["render", "--repo", str(EXAMPLE)])

    assert result.exit_code == 0, result.output
    fleet = load_fleet(EXAMPLE, "local")
    for name, cluster in fleet.clusters.items():
        assert f"# cluster: {name}\n# content-hash: sha256:{cluster.content_hash}\n" in result.stdout
    documents = [d for d in yaml.safe_load_all(result.stdout) if d is not None]
    assert len(documents) == sum(len(c.manifests) for c in fleet.clusters.values())
    assert documents[0] == dict(fleet.clusters["canary"].manifests[0].body)
    assert result.stderr == ""


def test_render_selects_clusters_in_the_order_given() -> None:
    result = CliRunner().invoke(
        cli, ["render", "--repo", str(EXAMPLE), "--cluster", "us-1", "--cluster", "eu-1"]
    )

    assert result.exit_code == 0, result.output
    headers = re.findall(r"^# cluster: (\S+)$", result.stdout, flags=re.MULTILINE)
    assert headers == ["us-1", "eu-1"]
    kinds_and_names = [(d["kind"], d["metadata"]["name"]) for d in yaml.safe_load_all(result.stdout) if d]
    assert ("RedisCluster", "rate-limiter") in kinds_and_names
    assert kinds_and_names.count(("RedisCluster", "leaderboard")) == 1


def test_render_output_is_identical_across_runs(tmp_path: Path) -> None:
    shutil.copytree(EXAMPLE, tmp_path / "repo")

    first = CliRunner().invoke(cli, ["render", "--repo", str(EXAMPLE)])
    second = CliRunner().invoke(cli, ["render", "--repo", str(tmp_path / "repo")])

    assert first.stdout == second.stdout


def test_an_unknown_cluster_is_a_usage_error() -> None:
    result = CliRunner().invoke(cli, ["render", "--repo", str(EXAMPLE), "--cluster", "mars-1"])

    assert result.exit_code == 2
    assert "mars-1" in result.stderr
    assert result.stdout == ""


def test_invalid_manifests_list_every_problem_and_exit_2() -> None:
    result = CliRunner().invoke(cli, ["render", "--repo", str(MULTI_PROBLEM)])

    assert result.exit_code == 2
    assert result.stdout == ""
    *problem_lines, summary = result.stderr.strip().splitlines()
    parsed = [PROBLEM_LINE.match(line) for line in problem_lines]
    assert all(parsed), problem_lines
    assert [(m["kind"], m["file"], int(m["line"] or 0)) for m in parsed if m] == [
        ("yaml-duplicate-key", "base/ns.yaml", 5),
        ("kind-not-allowed", "base/secret.yaml", 2),
        ("schema", "clusters/eu-1/a.yaml", 6),
        ("schema", "clusters/eu-1/a.yaml", 7),
        ("schema", "clusters/eu-1/a.yaml", 8),
        ("yaml-syntax", "clusters/eu-1/b.yaml", 4),
        ("overlay-target", "clusters/eu-1/patches.yaml", 2),
        ("unknown-cluster", "clusters/ghost", 0),
    ]
    assert summary == "8 problem(s); the revision is rejected."


def test_long_problem_lines_are_not_wrapped(tmp_path: Path) -> None:
    shutil.copytree(EXAMPLE, tmp_path / "repo")
    sessions = tmp_path / "repo" / "base" / "sessions.yaml"
    sessions.write_text(
        sessions.read_text().replace("maxmemory: 900mb", "maxmemory: 900mb\n    " + "x" * 150 + ": 1")
    )

    result = CliRunner().invoke(cli, ["render", "--repo", str(tmp_path / "repo")])

    assert result.exit_code == 2
    (line, _summary) = result.stderr.strip().splitlines()
    assert line.startswith("base/sessions.yaml:23:5: schema: ")


def test_a_missing_repo_directory_is_a_usage_error(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["render", "--repo", str(tmp_path / "missing")])

    assert result.exit_code == 2
