"""Which branch the source follows, on real repositories: a full ref name means its branch and never
a ref that merely ends like it, and without a branch the repository's HEAD branch is followed as
``git clone`` does, by the agent's source and by ``syncer verify``, ``render`` and ``diff``."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from syncer.cli import cli
from syncer.errors import SourceError
from syncer.source import GitSource, SourceOptions
from tests.integration.verify.kit import GitRepo, Keys, SshKey, base_env, run, write_policy

pytestmark = pytest.mark.integration


@dataclass(frozen=True)
class Repository:
    bare: Path
    work: GitRepo
    tip: str


def _repository(root: Path, branch: str, key: SshKey | None = None) -> Repository:
    bare = root / "remote.git"
    run(["git", "init", "-q", "--bare", "-b", branch, str(bare)], env=base_env(root / ".bare-home"))
    work = GitRepo(root / "work", branch=branch)
    fleet_file = {"apiVersion": "syncer.dev/v1alpha1", "kind": "Fleet", "clusters": [{"name": "canary"}]}
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": f"from-{branch}"}}
    files = {"fleet.yaml": yaml.safe_dump(fleet_file), "base/ns.yaml": yaml.safe_dump(namespace)}
    tip = work.commit(f"fleet on {branch}", files, sign=key)
    work.git("push", "-q", str(bare), f"HEAD:refs/heads/{branch}")
    return Repository(bare, work, tip)


@pytest.fixture(scope="module")
def ops(tmp_path_factory: pytest.TempPathFactory) -> SshKey:
    with Keys(tmp_path_factory.mktemp("branch-keys")) as keys:
        return keys.ssh("ops")


def test_a_full_ref_name_means_its_branch_not_a_ref_a_pusher_made_to_end_like_it(tmp_path: Path) -> None:
    repo = _repository(tmp_path, "main")
    planted = repo.work.commit("pushed under refs/heads/refs/heads/main")
    repo.work.git("push", "-q", str(repo.bare), f"{planted}:refs/heads/refs/heads/main")
    listing = run(["git", "ls-remote", str(repo.bare)], env=repo.work.env)
    assert "\trefs/heads/refs/heads/main" in listing
    assert "\trefs/heads/main" in listing

    source = GitSource(
        SourceOptions(url=str(repo.bare), cache_dir=tmp_path / "cache", branch="refs/heads/main")
    )
    assert source.poll().tip == repo.tip
    assert source.branch == "main"
    assert source.checkout(repo.tip).revision == repo.tip


@pytest.mark.parametrize(
    "name", ["refs/tags/v1", "refs/heads/refs/heads/main", "HEAD", "refs/remotes/origin/main"]
)
def test_a_ref_name_that_is_no_branch_is_refused_clearly(tmp_path: Path, name: str) -> None:
    with pytest.raises(SourceError, match=r"is not a branch name: give the branch \(main\)"):
        GitSource(SourceOptions(url=str(tmp_path / "remote.git"), cache_dir=tmp_path / "cache", branch=name))


@pytest.fixture
def on_master(tmp_path: Path, ops: SshKey) -> tuple[Repository, Path]:
    repo = _repository(tmp_path, "master", ops)
    policy = write_policy(tmp_path / "trust.yaml", signers=[{"name": "ops", "ssh": ops.public_line}], keys=[])
    return repo, policy


def test_without_a_branch_the_source_follows_the_repositorys_head_branch(
    on_master: tuple[Repository, Path], tmp_path: Path
) -> None:
    repo, _ = on_master
    for url in (str(repo.bare), repo.bare.as_uri()):
        source = GitSource(SourceOptions(url=url, cache_dir=tmp_path / f"cache-{len(url)}", branch=""))
        assert source.poll().tip == repo.tip
        assert source.branch == "master"


def test_an_agent_config_without_a_branch_follows_the_repositorys_head_branch(
    on_master: tuple[Repository, Path], tmp_path: Path
) -> None:
    from syncer.config import load_agent_config

    repo, policy = on_master
    config = {"source": {"url": str(repo.bare), "cacheDir": "agent-cache"}, "trustPolicy": str(policy)}
    (tmp_path / "agent.yaml").write_text(yaml.safe_dump(config))
    source = GitSource(load_agent_config(tmp_path / "agent.yaml").source)
    assert source.poll().tip == repo.tip
    assert source.branch == "master"


def test_verify_of_a_repository_on_master_judges_master_and_says_so(
    on_master: tuple[Repository, Path],
) -> None:
    repo, policy = on_master
    for target in (repo.work.path, repo.bare):
        result = CliRunner().invoke(cli, ["verify", "--repo", str(target), "--policy", str(policy)])
        assert result.exit_code == 0, result.output
        assert f"branch 'master', revision {repo.tip}" in result.output
        assert f"trusted: {repo.tip}" in result.output


def test_render_and_diff_of_a_repository_on_master_take_master_and_say_so(
    on_master: tuple[Repository, Path],
) -> None:
    repo, _ = on_master
    rendered = CliRunner().invoke(cli, ["render", "--repo", repo.bare.as_uri()])
    assert rendered.exit_code == 0, rendered.output
    assert "name: from-master" in rendered.stdout
    assert f"rendering revision {repo.tip} of branch 'master'" in rendered.stderr
    diffed = CliRunner().invoke(cli, ["diff", "--repo", str(repo.bare), "--offline"])
    assert diffed.exit_code == 1, diffed.output  # 1: the revision would create its namespace
    assert "from-master" in diffed.stdout
    assert f"diffing revision {repo.tip} of branch 'master'" in diffed.stderr
