"""``syncer verify`` through click's runner, on real repositories signed with real SSH keys."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner

from syncer.cli import cli
from tests.integration.verify.kit import GitRepo, Keys, SshKey, bare_remote, write_policy

pytestmark = pytest.mark.integration


@dataclass(frozen=True)
class Fleet:
    repo: GitRepo
    policy: Path
    ops: SshKey
    base: str
    unsigned: str
    tip: str


@pytest.fixture(scope="module")
def keys(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[SshKey, SshKey]]:
    maker = Keys(tmp_path_factory.mktemp("cli-keys"))
    yield maker.ssh("ops"), maker.ssh("stranger")
    maker.close()


@pytest.fixture
def fleet(tmp_path: Path, keys: tuple[SshKey, SshKey]) -> Fleet:
    ops, _ = keys
    repo = GitRepo(tmp_path / "fleet")
    base = repo.commit("add redis cluster", {"clusters/a/redis.yaml": "replicas: 1\n"}, sign=ops)
    unsigned = repo.commit("unsigned tweak", {"clusters/a/redis.yaml": "replicas: 2\n"})
    tip = repo.commit("scale up", {"clusters/a/redis.yaml": "replicas: 3\n"}, sign=ops)
    policy = write_policy(tmp_path / "trust.yaml", signers=[{"name": "ops", "ssh": ops.public_line}], keys=[])
    return Fleet(repo, policy, ops, base, unsigned, tip)


def invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, ["verify", *args], catch_exceptions=False)
    return result.exit_code, result.output


def test_trusted_tip_exits_zero_with_a_table(fleet: Fleet) -> None:
    code, out = invoke("--repo", str(fleet.repo.path), "--policy", str(fleet.policy))
    assert code == 0, out
    row = next(line for line in out.splitlines() if line.startswith(f"│ {fleet.tip[:12]}"))
    for cell in ("scale up", "ops", fleet.ops.fingerprint, "trusted", "good signature by ops"):
        assert cell in row
    assert f"trusted: {fleet.tip} (head mode)" in out


def test_strict_mode_lists_every_commit_and_exits_one(fleet: Fleet) -> None:
    code, out = invoke(
        "--repo",
        str(fleet.repo.path),
        "--policy",
        str(fleet.policy),
        "--mode",
        "strict",
        "--since",
        fleet.base,
    )
    assert code == 1, out
    assert fleet.tip[:12] in out
    row = next(line for line in out.splitlines() if line.startswith(f"│ {fleet.unsigned[:12]}"))
    assert "unsigned" in row
    assert "the commit has no signature" in row
    assert f"not trusted: commit {fleet.unsigned[:12]} ('unsigned tweak')" in out


def test_unsigned_revision_exits_one(fleet: Fleet) -> None:
    code, out = invoke("--repo", str(fleet.repo.path), "--policy", str(fleet.policy), "--rev", fleet.unsigned)
    assert code == 1, out
    assert "unsigned" in out


def test_stranger_signature_exits_one(fleet: Fleet, keys: tuple[SshKey, SshKey]) -> None:
    tip = fleet.repo.commit("by a stranger", sign=keys[1])
    code, out = invoke("--repo", str(fleet.repo.path), "--policy", str(fleet.policy))
    assert code == 1, out
    assert f"commit {tip[:12]}" in out
    assert f"no trusted SSH key {keys[1].fingerprint}" in out


def test_url_is_cloned_into_a_temporary_cache(fleet: Fleet, tmp_path: Path) -> None:
    remote = bare_remote(tmp_path / "remote.git")
    fleet.repo.git("push", "-q", str(remote), "main")
    code, out = invoke("--repo", f"file://{remote}", "--policy", str(fleet.policy))
    assert code == 0, out
    assert fleet.tip[:12] in out


def test_rewritten_since_exits_one(fleet: Fleet) -> None:
    fleet.repo.git("commit", "-q", "--amend", "-m", "amended")
    code, out = invoke("--repo", str(fleet.repo.path), "--policy", str(fleet.policy), "--since", fleet.tip)
    assert code == 1, out
    assert "history was rewritten" in out


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--rev", "no-such-branch"], "revision 'no-such-branch' is not a commit"),
        (["--policy", "missing.yaml"], "missing.yaml: cannot read"),
    ],
)
def test_errors_exit_two(fleet: Fleet, extra: list[str], message: str) -> None:
    code, out = invoke("--repo", str(fleet.repo.path), "--policy", str(fleet.policy), *extra)
    assert code == 2, out
    assert message in out


def test_bad_policy_exits_two(fleet: Fleet) -> None:
    fleet.policy.write_text("mode: sometimes\n")
    code, out = invoke("--repo", str(fleet.repo.path), "--policy", str(fleet.policy))
    assert code == 2, out
    assert f"{fleet.policy}:1:1: mode: must be one of head, strict" in out


def test_unreachable_url_exits_two(fleet: Fleet, tmp_path: Path) -> None:
    code, out = invoke("--repo", f"file://{tmp_path}/absent.git", "--policy", str(fleet.policy))
    assert code == 2, out
    assert "absent.git" in out
