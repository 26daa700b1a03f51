from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import yaml
from click.testing import CliRunner

from syncer.cli import cli
from syncer.domain.secrets import digest
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


def _repo_with_passwords(root: Path) -> Path:
    repo = root / "repo"
    (repo / "clusters" / "one").mkdir(parents=True)
    (repo / "fleet.yaml").write_text(
        "apiVersion: syncer.dev/v1alpha1\nkind: Fleet\ndefaults: {namespace: redis}\n"
        "clusters:\n  - name: one\n"
    )
    (repo / "clusters" / "one" / "cache.yaml").write_text(
        "apiVersion: redis.syncer.dev/v1alpha1\nkind: RedisCluster\nmetadata: {name: cache}\n"
        "spec:\n  version: '7.2'\n  redisConfig:\n    maxmemory-policy: allkeys-lru\n"
        "    requirepass: correct-horse-battery\n    masterauth: staple-masterauth\n"
    )
    return repo


def _render(*args: str) -> subprocess.CompletedProcess[str]:
    """``syncer render`` as a whole process, as a person runs it."""
    return subprocess.run(
        [sys.executable, "-m", "syncer", "render", *args], capture_output=True, text=True, check=False
    )


def test_render_masks_secrets_by_default_in_a_real_process(tmp_path: Path) -> None:
    repo = _repo_with_passwords(tmp_path)

    done = _render("--repo", str(repo))

    assert done.returncode == 0, done.stderr
    assert "correct-horse-battery" not in done.stdout + done.stderr
    assert "staple-masterauth" not in done.stdout + done.stderr
    (body,) = [d for d in yaml.safe_load_all(done.stdout) if d]
    config = body["spec"]["redisConfig"]
    assert config == {
        "maxmemory-policy": "allkeys-lru",
        "requirepass": digest("correct-horse-battery"),
        "masterauth": digest("staple-masterauth"),
    }


def test_render_shows_secrets_only_when_asked(tmp_path: Path) -> None:
    repo = _repo_with_passwords(tmp_path)

    done = _render("--repo", str(repo), "--show-secrets")

    assert done.returncode == 0, done.stderr
    (body,) = [d for d in yaml.safe_load_all(done.stdout) if d]
    assert body["spec"]["redisConfig"]["requirepass"] == "correct-horse-battery"
    assert body["spec"]["redisConfig"]["masterauth"] == "staple-masterauth"


def test_masking_keeps_the_content_hash_of_what_is_applied(tmp_path: Path) -> None:
    """The header names the hash of the real content: masked and clear output name the same one."""
    repo = _repo_with_passwords(tmp_path)

    masked, clear = _render("--repo", str(repo)), _render("--repo", str(repo), "--show-secrets")

    hashes = [re.findall(r"^# content-hash: (\S+)$", out.stdout, re.MULTILINE) for out in (masked, clear)]
    assert hashes[0] == hashes[1] == [f"sha256:{load_fleet(repo, 'local').clusters['one'].content_hash}"]
