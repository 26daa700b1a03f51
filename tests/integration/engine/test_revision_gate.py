"""A git remote through source, verify and manifests: bad revisions are rejected whole and the last
good revision stays in force. Real git repositories, real ssh-keygen signatures."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from syncer.cli import cli
from syncer.config import load_trust_policy
from syncer.engine.revision import Outcome, RevisionGate, RevisionOptions, Stage
from syncer.errors import ManifestError
from syncer.source import GitSource, SourceOptions
from tests.integration.verify.kit import GitRepo, SshKey, bare_remote, write_policy

pytestmark = pytest.mark.integration

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "repo"


class Fixture:
    def __init__(self, root: Path, key: SshKey, mode: str = "head") -> None:
        self.remote = bare_remote(root / "remote.git")
        self.work = GitRepo(root / "work")
        shutil.copytree(EXAMPLES, self.work.path, dirs_exist_ok=True)
        self.key = key
        policy_file = write_policy(
            root / "trust.yaml", signers=[{"name": "ops", "ssh": key.public_line}], keys=[], mode=mode
        )
        self.policy = load_trust_policy(policy_file)
        self.policy_file = policy_file
        self.source = GitSource(SourceOptions(url=str(self.remote), cache_dir=root / "cache"))
        self.gate = RevisionGate(self.source, self.policy, RevisionOptions(timeout=30))

    def push(self, message: str, files: dict[str, str] | None = None, *, signed: bool = True) -> str:
        sha = self.work.commit(message, files or {}, sign=self.key if signed else None)
        self.work.git("push", "-q", str(self.remote), "main")
        return sha


@pytest.fixture
def repo(tmp_path: Path, ops_key: SshKey) -> Fixture:
    fixture = Fixture(tmp_path, ops_key)
    fixture.push("the example fleet")
    return fixture


BROKEN_YAML = "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: [unclosed\n"
BAD_SHARDS = (EXAMPLES / "base" / "sessions.yaml").read_text().replace("shards: 3", "shards: 0", 1)


def test_a_signed_valid_revision_is_accepted_and_an_unchanged_tip_is_not_fetched(repo: Fixture) -> None:
    first = repo.gate.advance()
    assert first.outcome is Outcome.ACCEPTED
    assert first.current is not None
    assert sorted(first.current.fleet.clusters) == ["canary", "eu-1", "us-1"]
    assert first.current.verification.trusted
    assert [c.signer for c in first.current.verification.commits] == ["ops"]
    fetches = repo.source.fetch_count

    again = repo.gate.advance()
    assert again.outcome is Outcome.UNCHANGED
    assert again.current == first.current
    assert repo.source.fetch_count == fetches


def test_a_bad_revision_is_rejected_whole_with_every_problem_and_the_last_good_stays(repo: Fixture) -> None:
    good = repo.gate.advance().current
    assert good is not None
    bad = repo.push(
        "break two files",
        {"base/namespaces-extra.yaml": BROKEN_YAML, "base/sessions.yaml": BAD_SHARDS},
    )

    result = repo.gate.advance()
    assert result.outcome is Outcome.REJECTED
    assert result.rejection is not None
    assert result.rejection.revision == bad
    assert result.rejection.stage is Stage.MANIFESTS
    assert isinstance(result.rejection.error, ManifestError)
    where = {(p.location.path, p.location.line) for p in result.rejection.error.problems}
    assert ("base/namespaces-extra.yaml", 5) in where  # the end of the file, where the sequence stays open
    assert any(path == "base/sessions.yaml" for path, _ in where)
    assert result.current == good, "the last good revision must stay in force"

    fetches = repo.source.fetch_count
    repeat = repo.gate.advance()
    assert repeat.outcome is Outcome.REJECTED
    assert repeat.rejection == result.rejection
    assert repo.source.fetch_count == fetches


def test_an_unsigned_revision_is_rejected_before_its_manifests_are_read(repo: Fixture) -> None:
    good = repo.gate.advance().current
    unsigned = repo.push("unsigned change", {"base/namespaces-extra.yaml": BROKEN_YAML}, signed=False)

    result = repo.gate.advance()
    assert result.outcome is Outcome.REJECTED
    assert result.rejection is not None
    assert result.rejection.stage is Stage.VERIFY
    assert unsigned[:12] in str(result.rejection.error)
    assert "unsigned" in str(result.rejection.error)
    assert result.current == good

    fixed = repo.push("signed fix", {"base/namespaces-extra.yaml": "# nothing here\n"})
    after = repo.gate.advance()
    assert after.outcome is Outcome.ACCEPTED
    assert after.current is not None
    assert after.current.revision == fixed


def test_strict_mode_rejects_an_unsigned_commit_hidden_below_a_signed_tip(
    tmp_path: Path, ops_key: SshKey
) -> None:
    strict = Fixture(tmp_path, ops_key, mode="strict")
    strict.push("signed start")
    assert strict.gate.advance().outcome is Outcome.ACCEPTED
    hidden = strict.push("unsigned in the middle", {"notes/a.txt": "a\n"}, signed=False)
    strict.push("signed tip", {"notes/b.txt": "b\n"})

    result = strict.gate.advance()
    assert result.outcome is Outcome.REJECTED
    assert result.rejection is not None
    assert result.rejection.stage is Stage.VERIFY
    assert hidden[:12] in str(result.rejection.error)


def test_syncer_verify_accepts_a_signed_copy_of_the_example_repo(repo: Fixture) -> None:
    runner = CliRunner()
    verified = runner.invoke(
        cli, ["verify", "--repo", str(repo.work.path), "--policy", str(repo.policy_file)]
    )
    assert verified.exit_code == 0, verified.output
    assert "trusted" in verified.output

    rendered = runner.invoke(cli, ["render", "--repo", f"file://{repo.remote}", "--cluster", "canary"])
    assert rendered.exit_code == 0, rendered.output
    assert rendered.output.startswith("# cluster: canary\n")
    assert "kind: RedisCluster" in rendered.output


def test_syncer_render_of_a_bad_revision_lists_problems_and_exits_2(repo: Fixture) -> None:
    bad = repo.push("break", {"base/namespaces-extra.yaml": BROKEN_YAML})
    result = CliRunner().invoke(cli, ["render", "--repo", str(repo.work.path), "--rev", bad])
    assert result.exit_code == 2
    assert "base/namespaces-extra.yaml:5:1: yaml-syntax: while parsing a flow sequence started at line 4" in (
        result.output
    )


def test_a_bare_repository_folder_is_rendered_at_its_branch_tip(repo: Fixture) -> None:
    result = CliRunner().invoke(cli, ["render", "--repo", str(repo.remote), "--cluster", "eu-1"])
    assert result.exit_code == 0, result.output
    assert result.output.startswith("# cluster: eu-1\n")
