"""A tip holding objects git's own checks refuse (a tree with a ``.git`` entry, made with ``git mktree``)
is a rejected revision, judged once per tip: not a git outage, and not fetched again every poll.
Real git repositories, real ssh-keygen signatures, the real ``syncer render`` command."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from syncer.cli import cli
from syncer.engine.revision import PollOutcome, RevisionGate, RevisionOptions, Stage
from syncer.errors import RefusedObjects
from syncer.source import GitSource
from tests.integration.engine.test_revision_gate import Fixture
from tests.integration.verify.kit import SshKey, run

pytestmark = pytest.mark.integration


def push_dot_git_tree(repo: Fixture) -> str:
    """A commit on top of the tip whose tree also holds a ``.git`` blob, pushed as the new tip (the
    bare remote accepts it: it does not check what is pushed)."""
    work = repo.work
    blob = run(
        ["git", "hash-object", "-w", "--stdin"], env=work.env, cwd=work.path, stdin=b"[core]\n"
    ).strip()
    entries = work.git("ls-tree", "HEAD") + f"\n100644 blob {blob}\t.git\n"
    tree = run(["git", "mktree"], env=work.env, cwd=work.path, stdin=entries.encode()).strip()
    commit = work.git("commit-tree", tree, "-p", "HEAD", "-m", "a tree with a .git entry")
    work.git("push", "-q", str(repo.remote), f"{commit}:refs/heads/main")
    return commit


@pytest.fixture
def repo(tmp_path_factory: pytest.TempPathFactory, ops_key: SshKey) -> Fixture:
    fixture = Fixture(tmp_path_factory.mktemp("refused"), ops_key)
    fixture.push("the example fleet")
    return fixture


def test_a_tip_git_refuses_is_rejected_once_and_not_fetched_again(repo: Fixture) -> None:
    good = repo.gate.advance().current
    assert good is not None
    bad = push_dot_git_tree(repo)

    result = repo.gate.advance()
    assert result.outcome is PollOutcome.REJECTED
    assert result.rejection is not None
    assert result.rejection.revision == bad
    assert result.rejection.stage is Stage.VERIFY
    assert isinstance(result.rejection.error, RefusedObjects)
    assert "hasDotgit" in str(result.rejection.error)
    assert result.current == good, "the last good revision must stay in force"

    fetches = repo.source.fetch_count
    for _ in range(2):
        again = repo.gate.advance()
        assert again.outcome is PollOutcome.REJECTED
        assert again.rejection == result.rejection
    assert repo.source.fetch_count == fetches, "a refused tip is not fetched again"

    # A restarted replica over the same cache takes what the clusters record as the revision in force.
    restarted = RevisionGate(
        GitSource(repo.source.options),
        repo.policy,
        RevisionOptions(timeout=30),
        recorded=lambda _: {good.revision: "cluster canary"},
    )
    resumed = restarted.advance()
    assert resumed.rejection is not None
    assert (resumed.rejection.revision, resumed.rejection.stage) == (bad, Stage.VERIFY)
    assert resumed.current is not None
    assert resumed.current.revision == good.revision

    fixed = repo.push("signed fix on top of the last good tip", force=True)
    after = repo.gate.advance()
    assert after.outcome is PollOutcome.ACCEPTED
    assert after.current is not None
    assert after.current.revision == fixed


def test_a_fresh_clone_of_a_refused_tip_is_a_clear_rejection_for_render_and_the_gate(repo: Fixture) -> None:
    bad = push_dot_git_tree(repo)
    result = repo.gate.advance()
    assert result.rejection is not None
    assert (result.rejection.revision, result.rejection.stage) == (bad, Stage.VERIFY)
    clones = repo.source.fetch_count
    assert repo.gate.advance().rejection == result.rejection
    assert repo.source.fetch_count == clones, "a refused tip is not cloned again"

    rendered = CliRunner().invoke(cli, ["render", "--repo", str(repo.remote)])
    assert rendered.exit_code == 2, rendered.output
    assert rendered.exception is None or isinstance(rendered.exception, SystemExit), rendered.exception
    assert f"the tip {bad} of branch 'main'" in rendered.stderr
    assert "hasDotgit" in rendered.stderr
