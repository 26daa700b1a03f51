"""A git remote through source, verify and manifests: bad revisions are rejected whole and the last
good revision stays in force. Real git repositories, real ssh-keygen signatures."""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner

from syncer.cli import cli
from syncer.config import TrustPolicy, load_trust_policy
from syncer.domain.progress import Step
from syncer.domain.sync_state import ClusterSyncState, SyncPhase
from syncer.engine.cluster_reads import ClusterReads
from syncer.engine.fleet_pass import git_revisions, rejection_event
from syncer.engine.revision import PollOutcome, RevisionGate, RevisionOptions, Stage
from syncer.engine.rollout_model import RolloutOptions
from syncer.errors import HistoryRewritten, ManifestError, UnexpectedFailure
from syncer.kube import ClusterClient
from syncer.source import GitSource, SourceOptions
from syncer.status import StateStore
from tests.integration.verify.kit import GitRepo, Keys, SshKey, bare_remote, write_policy
from tests.support.unfenced import UNFENCED_EVERYWHERE

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

    def push(
        self, message: str, files: dict[str, str] | None = None, *, signed: bool = True, force: bool = False
    ) -> str:
        sha = self.work.commit(message, files or {}, sign=self.key if signed else None)
        self.work.git("push", "-q", *(["--force"] if force else []), str(self.remote), "main")
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
    assert first.outcome is PollOutcome.ACCEPTED
    assert first.current is not None
    assert sorted(first.current.fleet.clusters) == ["canary", "eu-1", "us-1"]
    assert first.current.verification.trusted
    assert [c.signer for c in first.current.verification.commits] == ["ops"]
    fetches = repo.source.fetch_count

    again = repo.gate.advance()
    assert again.outcome is PollOutcome.UNCHANGED
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
    assert result.outcome is PollOutcome.REJECTED
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
    assert repeat.outcome is PollOutcome.REJECTED
    assert repeat.rejection == result.rejection
    assert repo.source.fetch_count == fetches


HUGE_SHARDS = (
    (EXAMPLES / "base" / "sessions.yaml").read_text().replace("shards: 3", "shards: " + "9" * 5000, 1)
)


def test_a_5000_digit_integer_is_a_rejection_at_its_line_and_the_last_good_stays(repo: Fixture) -> None:
    good = repo.gate.advance().current
    assert good is not None
    bad = repo.push("shards beyond any integer", {"base/sessions.yaml": HUGE_SHARDS})

    result = repo.gate.advance()
    assert result.outcome is PollOutcome.REJECTED
    assert result.rejection is not None
    assert (result.rejection.revision, result.rejection.stage) == (bad, Stage.MANIFESTS)
    assert isinstance(result.rejection.error, ManifestError)
    (found,) = result.rejection.error.problems
    assert (found.kind, str(found.location)) == ("yaml-value", "base/sessions.yaml:9:11")
    assert "(5000 characters) is outside the 64-bit range" in found.message
    assert rejection_event(result.rejection).step is Step.REVISION_REJECTED
    assert result.current == good, "the last good revision must stay in force"

    repeat = repo.gate.advance()
    assert (repeat.outcome, repeat.rejection, repeat.current) == (
        PollOutcome.REJECTED,
        result.rejection,
        good,
    )


def test_an_unforeseen_failure_on_a_tips_content_is_a_rejection_not_an_exception(
    repo: Fixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    good = repo.gate.advance().current
    assert good is not None
    bad = repo.push("a tip the loader trips on", {"base/extra.yaml": "apiVersion: v1\nkind: Namespace\n"})

    def trips(*_: object) -> None:
        raise RuntimeError("a defect met on this content")

    monkeypatch.setattr("syncer.engine.revision.load_fleet", trips)
    result = repo.gate.advance()

    assert result.outcome is PollOutcome.REJECTED
    assert result.rejection is not None
    assert (result.rejection.revision, result.rejection.stage) == (bad, Stage.INTERNAL)
    assert isinstance(result.rejection.error, UnexpectedFailure)
    assert isinstance(result.rejection.error.cause, RuntimeError)
    assert result.rejection.message.endswith(
        "rejected by internal-error: unexpected RuntimeError: a defect met on this content"
    )
    assert rejection_event(result.rejection).step is Step.REVISION_REJECTED
    assert result.current == good


def test_an_unsigned_revision_is_rejected_before_its_manifests_are_read(repo: Fixture) -> None:
    good = repo.gate.advance().current
    unsigned = repo.push("unsigned change", {"base/namespaces-extra.yaml": BROKEN_YAML}, signed=False)

    result = repo.gate.advance()
    assert result.outcome is PollOutcome.REJECTED
    assert result.rejection is not None
    assert result.rejection.stage is Stage.VERIFY
    assert unsigned[:12] in str(result.rejection.error)
    assert "unsigned" in str(result.rejection.error)
    assert result.current == good

    fixed = repo.push("signed fix", {"base/namespaces-extra.yaml": "# nothing here\n"})
    after = repo.gate.advance()
    assert after.outcome is PollOutcome.ACCEPTED
    assert after.current is not None
    assert after.current.revision == fixed


def test_strict_mode_rejects_an_unsigned_commit_hidden_below_a_signed_tip(
    tmp_path: Path, ops_key: SshKey
) -> None:
    strict = Fixture(tmp_path, ops_key, mode="strict")
    strict.push("signed start")
    assert strict.gate.advance().outcome is PollOutcome.ACCEPTED
    hidden = strict.push("unsigned in the middle", {"notes/a.txt": "a\n"}, signed=False)
    strict.push("signed tip", {"notes/b.txt": "b\n"})

    result = strict.gate.advance()
    assert result.outcome is PollOutcome.REJECTED
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
    assert rendered.stdout.startswith("# cluster: canary\n")
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
    assert result.stdout.startswith("# cluster: eu-1\n")


# -- the base comes from the fleet, not from a cache ------------------------------------------------------


def fresh_gate(
    fx: Fixture, cache: Path, recorded: dict[str, str] | None, policy: TrustPolicy | None = None
) -> RevisionGate:
    """A replica that never polled this remote (an empty cache) whose clusters record ``recorded``."""
    source = GitSource(SourceOptions(url=str(fx.remote), cache_dir=cache))
    return RevisionGate(
        source, policy or fx.policy, RevisionOptions(timeout=30), lambda _: dict(recorded or {})
    )


def force_push(fx: Fixture, revision: str) -> None:
    fx.work.git("reset", "-q", "--hard", revision)
    fx.work.git("push", "-q", "--force", str(fx.remote), "main")


RECORDED_BY = "the revision canary, eu-1 record(s) as applied"


def test_a_new_replica_with_an_empty_cache_refuses_a_force_push_back_to_what_the_fleet_left(
    repo: Fixture, tmp_path: Path
) -> None:
    a = repo.work.git("rev-parse", "HEAD")
    b = repo.push("newer signed revision", {"notes/b.txt": "b\n"})
    force_push(repo, a)

    gate = fresh_gate(repo, tmp_path / "fresh", {b: RECORDED_BY})
    result = gate.advance()
    assert (result.outcome, result.current) == (PollOutcome.REJECTED, None)
    assert result.rejection is not None
    assert result.rejection.stage is Stage.VERIFY
    assert isinstance(result.rejection.error, HistoryRewritten)
    assert result.rejection.error.verdict == "history-rewritten"
    assert str(result.rejection.error) == (
        f"history of branch 'main' on {repo.remote} was rewritten: the new tip {a} does not descend from "
        f"{RECORDED_BY} {b}; refusing it (allowHistoryRewrite is off)"
    )
    assert gate.advance().rejection is result.rejection, "the same refusal is not reported twice"

    # The record is what refuses it: the same replica without it takes the older signed revision.
    forgetful = fresh_gate(repo, tmp_path / "forgetful", None)
    taken = forgetful.advance()
    assert taken.outcome is PollOutcome.ACCEPTED
    assert taken.current is not None
    assert taken.current.revision == a


def test_a_replica_whose_own_cache_is_behind_still_refuses_what_the_fleet_moved_past(
    repo: Fixture, tmp_path: Path
) -> None:
    recorded: dict[str, str] = {}
    gate = fresh_gate(repo, tmp_path / "cache-a", recorded)
    a = gate.advance().current
    assert a is not None
    b = repo.push("applied by another replica", {"notes/b.txt": "b\n"})
    force_push(repo, a.revision)
    recorded[b] = RECORDED_BY  # another replica rolled b out meanwhile
    gate.recorded = lambda _: dict(recorded)
    result = gate.advance()
    assert result.outcome is PollOutcome.REJECTED
    assert isinstance(result.rejection and result.rejection.error, HistoryRewritten)


def test_the_fleet_base_bounds_what_a_path_limited_tip_signer_vouches_for(
    tmp_path: Path, ops_key: SshKey
) -> None:
    keys = Keys(tmp_path / "keys")
    prod = keys.ssh("prod-operators")
    fx = Fixture(tmp_path, ops_key)
    policy = load_trust_policy(
        write_policy(
            tmp_path / "scoped.yaml",
            signers=[
                {"name": "ops", "ssh": ops_key.public_line},
                {"name": "prod-operators", "ssh": prod.public_line, "paths": ["clusters/prod-*/**"]},
            ],
            keys=[],
        )
    )
    b = fx.push("the example fleet")
    fx.push("unsigned out-of-scope change", {"base/evil.yaml": "# unsigned\n"}, signed=False)
    tip = fx.work.commit("prod change", {"clusters/prod-eu/notes.txt": "p\n"}, sign=prod)
    fx.work.git("push", "-q", str(fx.remote), "main")

    result = fresh_gate(fx, tmp_path / "fresh", {b: RECORDED_BY}, policy).advance()
    assert result.outcome is PollOutcome.REJECTED
    assert result.rejection is not None
    assert result.rejection.stage is Stage.VERIFY
    assert str(result.rejection.error) == (
        f"revision {tip} is not trusted (head mode): commit {tip[:12]} ('prod change') is not trusted: "
        "out-of-scope: signer 'prod-operators' may change only clusters/prod-*/**, but this changes "
        "base/evil.yaml"
    )
    keys.close()


def test_strict_mode_ranges_start_at_the_fleet_base(tmp_path: Path, ops_key: SshKey) -> None:
    fx = Fixture(tmp_path, ops_key, mode="strict")
    start = fx.push("unsigned before the policy's start", {"notes/old.txt": "old\n"}, signed=False)
    policy = replace(fx.policy, since=start)
    b = fx.push("signed base")
    hidden = fx.push("unsigned after the base", {"notes/a.txt": "a\n"}, signed=False)
    fx.push("signed tip", {"notes/b.txt": "b\n"})
    result = fresh_gate(fx, tmp_path / "fresh", {b: RECORDED_BY}, policy).advance()
    assert result.rejection is not None
    assert result.rejection.error.verdict == "unsigned"  # type: ignore[attr-defined]
    assert f"commit {hidden[:12]} ('unsigned after the base')" in str(result.rejection.error)
    fx.work.git("reset", "-q", "--hard", b)
    fx.push("signed fix", {"notes/c.txt": "c\n"}, force=True)
    taken = fresh_gate(fx, tmp_path / "fresh-2", {b: RECORDED_BY}, policy).advance()
    assert taken.outcome is PollOutcome.ACCEPTED, taken.rejection
    assert taken.current is not None
    assert taken.current.verification.since == b


def test_a_record_older_than_the_policys_since_is_not_the_base(tmp_path: Path, ops_key: SshKey) -> None:
    fx = Fixture(tmp_path, ops_key, mode="strict")
    older = fx.push("signed, recorded")
    start = fx.push("unsigned, where the policy starts", {"notes/s.txt": "s\n"}, signed=False)
    tip = fx.push("signed tip", {"notes/t.txt": "t\n"})
    policy = replace(fx.policy, since=start)
    taken = fresh_gate(fx, tmp_path / "fresh", {older: RECORDED_BY}, policy).advance()
    assert taken.outcome is PollOutcome.ACCEPTED, taken.rejection
    assert taken.current is not None
    assert (taken.current.revision, taken.current.verification.since) == (tip, start)
    assert [(i.revision, i.reason) for i in taken.ignored_bases] == [
        (older, f"it is older than the trust policy's since ({start[:12]}), where the checks start")
    ]


def test_allow_history_rewrite_takes_a_rewritten_tip_end_to_end_and_judges_it_from_the_fork_point(
    tmp_path: Path, ops_key: SshKey
) -> None:
    fx = Fixture(tmp_path, ops_key, mode="strict")
    policy = replace(fx.policy, allow_history_rewrite=True)
    a = fx.push("signed base")
    b = fx.push("signed, later dropped", {"notes/b.txt": "b\n"})
    source = GitSource(
        SourceOptions(url=str(fx.remote), cache_dir=tmp_path / "cache", allow_history_rewrite=True)
    )
    gate = RevisionGate(source, policy, RevisionOptions(timeout=30), lambda _: {b: RECORDED_BY})
    assert gate.advance().outcome is PollOutcome.ACCEPTED
    fx.work.git("reset", "-q", "--hard", a)
    c = fx.push("signed replacement", {"notes/c.txt": "c\n"}, force=True)

    taken = gate.advance()
    assert taken.outcome is PollOutcome.ACCEPTED, taken.rejection
    assert taken.current is not None
    assert (taken.current.revision, taken.current.verification.since) == (c, a)
    assert [v.commit for v in taken.current.verification.commits] == [c]

    fx.work.git("reset", "-q", "--hard", a)
    unsigned = fx.push("unsigned replacement", {"notes/d.txt": "d\n"}, signed=False, force=True)
    fx.push("signed on top", {"notes/e.txt": "e\n"})
    refused = gate.advance()
    assert refused.outcome is PollOutcome.REJECTED
    assert f"commit {unsigned[:12]} ('unsigned replacement') is not trusted: unsigned" in str(
        refused.rejection and refused.rejection.error
    )


def test_a_gate_built_on_the_clusters_reads_judges_with_their_records_before_any_pass_exists(
    repo: Fixture, tmp_path: Path, clients: dict[str, ClusterClient], prefix: str
) -> None:
    a = repo.work.git("rev-parse", "HEAD")
    b = repo.push("newer signed revision", {"notes/b.txt": "b\n"})
    force_push(repo, a)
    state_namespace = f"{prefix}-state"
    for name in ("canary", "eu-1"):  # the fleet rolled b out; us-1 records nothing yet
        StateStore(clients[name], state_namespace).save(
            ClusterSyncState(name, revision=b, phase=SyncPhase.HEALTHY, last_good=b)
        )
    # Built as the agent builds them: the clusters' reads first, the gate on them; no pass at all.
    options = RolloutOptions(state_namespace=state_namespace)
    reads = ClusterReads(clients.__getitem__, UNFENCED_EVERYWHERE, options, known=sorted(clients))
    source = SourceOptions(url=str(repo.remote), cache_dir=tmp_path / "fresh")
    gate = git_revisions(source, repo.policy, reads.recorded_revisions)

    result = gate.advance()
    assert (result.outcome, result.current) == (PollOutcome.REJECTED, None)
    assert result.rejection is not None
    assert isinstance(result.rejection.error, HistoryRewritten)
    assert f"does not descend from {RECORDED_BY} {b}" in str(result.rejection.error)
