"""The two-person rule on real repositories signed with real SSH keys: one signer is refused, two
distinct signers covering the change are trusted (a signed change and an approving signed merge)."""

from __future__ import annotations

from pathlib import Path

import pytest

from syncer.config import load_trust_policy
from syncer.errors import ConfigError, VerificationError
from syncer.verify import Verdict, VerifyOptions, verify_revision
from tests.integration.verify.conftest import KeySet
from tests.integration.verify.kit import GitRepo, write_policy

pytestmark = pytest.mark.integration

PROD_FILE = "clusters/prod-eu/redis.yaml"


def policy(tmp: Path, ks: KeySet, *, mode: str = "head") -> Path:
    signers: list[dict[str, object]] = [
        {"name": "ops", "ssh": ks.ops_ssh.public_line},
        {"name": "prod-operators", "ssh": ks.prod_ssh.public_line, "paths": ["clusters/prod-*/**"]},
        {"name": "docs", "ssh": ks.stranger_ssh.public_line, "paths": ["docs/**"]},
    ]
    path = write_policy(tmp / "trust.yaml", signers=signers, keys=[], mode=mode)
    path.write_text(path.read_text() + "twoPersonRules:\n  - name: prod\n    paths: ['clusters/prod-*/**']\n")
    return path


@pytest.fixture
def repo(tmp_path: Path, keyset: KeySet) -> tuple[GitRepo, str]:
    """A fleet repository whose first commit (signed by ops) is the last verified revision."""
    fleet = GitRepo(tmp_path / "fleet")
    base = fleet.commit(
        "base", {PROD_FILE: "version: 7.2.4\n", "docs/readme.md": "fleet\n"}, sign=keyset.ops_ssh
    )
    return fleet, base


def verify(repo: GitRepo, trust: Path, since: str) -> Verdict:
    result = verify_revision(repo.path, load_trust_policy(trust), VerifyOptions(revision="HEAD", since=since))
    return result.verdict


def test_one_signer_is_refused_and_two_distinct_signers_are_trusted(
    tmp_path: Path, keyset: KeySet, repo: tuple[GitRepo, str]
) -> None:
    fleet, base = repo
    trust = policy(tmp_path, keyset)
    fleet.git("checkout", "-q", "-b", "change")
    change = fleet.commit("bump prod", {PROD_FILE: "version: 7.4.1\n"}, sign=keyset.ops_ssh)
    fleet.git("checkout", "-q", "main")

    # The change alone, fast-forwarded: one signer.
    fleet.git("merge", "-q", "--ff-only", "change")
    result = verify_revision(fleet.path, load_trust_policy(trust), VerifyOptions(revision="HEAD", since=base))
    assert result.commits[-1].verdict is Verdict.TRUSTED  # the signature itself is good
    assert not result.trusted
    assert result.verdict is Verdict.NOT_APPROVED
    assert result.failure == (
        f"not-approved: two-person rule prod: the revision changes {PROD_FILE}, which needs good"
        " signatures of 2 distinct signers covering it in the commits it adds; found 1 (ops)"
    )
    with pytest.raises(VerificationError) as caught:
        result.require_trusted()
    assert caught.value.verdict == "not-approved"

    # The same person approving their own change does not count twice.
    fleet.git("reset", "-q", "--hard", base)
    fleet.merge("change", "approve bump", sign=keyset.ops_ssh)
    assert verify(fleet, trust, base) is Verdict.NOT_APPROVED

    # A signer whose scope does not reach the change does not count.
    fleet.git("reset", "-q", "--hard", base)
    fleet.merge("change", "approve bump", sign=keyset.stranger_ssh)
    outcome = verify_revision(
        fleet.path, load_trust_policy(trust), VerifyOptions(revision="HEAD", since=base)
    )
    assert outcome.verdict is Verdict.OUT_OF_SCOPE  # and the merge itself is out of the docs signer's scope

    # A second person, covering prod, approves with a signed merge commit: trusted.
    fleet.git("reset", "-q", "--hard", base)
    merge = fleet.merge("change", "approve bump", sign=keyset.prod_ssh)
    result = verify_revision(fleet.path, load_trust_policy(trust), VerifyOptions(revision="HEAD", since=base))
    assert result.trusted, result.failure
    assert result.revision == merge
    assert [(a.rule, a.signers) for a in result.approvals] == [("prod", ("ops", "prod-operators"))]
    assert change in fleet.git("rev-list", merge)


def test_strict_mode_applies_the_same_rule(tmp_path: Path, keyset: KeySet, repo: tuple[GitRepo, str]) -> None:
    fleet, base = repo
    trust = policy(tmp_path, keyset, mode="strict")
    fleet.git("checkout", "-q", "-b", "change")
    fleet.commit("bump prod", {PROD_FILE: "version: 7.4.1\n"}, sign=keyset.prod_ssh)
    fleet.git("checkout", "-q", "main")
    fleet.git("merge", "-q", "--ff-only", "change")
    assert verify(fleet, trust, base) is Verdict.NOT_APPROVED
    fleet.git("reset", "-q", "--hard", base)
    fleet.merge("change", "approve bump", sign=keyset.ops_ssh)
    assert verify(fleet, trust, base) is Verdict.TRUSTED


def test_changes_outside_the_rule_need_one_signer(
    tmp_path: Path, keyset: KeySet, repo: tuple[GitRepo, str]
) -> None:
    fleet, base = repo
    trust = policy(tmp_path, keyset)
    fleet.commit("docs", {"docs/readme.md": "the fleet\n"}, sign=keyset.stranger_ssh)
    result = verify_revision(fleet.path, load_trust_policy(trust), VerifyOptions(revision="HEAD", since=base))
    assert result.trusted, result.failure
    assert [(a.rule, a.paths, a.satisfied) for a in result.approvals] == [("prod", (), True)]


def test_without_a_verified_base_the_whole_history_must_hold_two_signers(
    tmp_path: Path, keyset: KeySet, repo: tuple[GitRepo, str]
) -> None:
    fleet, _ = repo
    trust = policy(tmp_path, keyset)
    assert verify(fleet, trust, "") is Verdict.NOT_APPROVED
    fleet.commit("approve", {"docs/approved.md": "yes\n"}, sign=keyset.prod_ssh)
    # prod-operators may not change docs/: the tip itself is out of scope.
    assert verify(fleet, trust, "") is Verdict.OUT_OF_SCOPE


@pytest.mark.parametrize(
    ("rules", "message"),
    [
        ("twoPersonRules:\n  - name: prod\n", "twoPersonRules[0].paths: is required (or clusters)"),
        (
            "twoPersonRules:\n  - name: prod\n    paths: ['a/**']\n"
            "    clusters: {matchLabels: {tier: prod}}\n",
            "twoPersonRules[0].clusters: give paths or clusters, not both",
        ),
        (
            "twoPersonRules:\n  - name: prod\n    clusters: {matchLabels: {tier: [prod]}}\n",
            "twoPersonRules[0].clusters.matchLabels: must map label names to string values",
        ),
        (
            "twoPersonRules:\n  - name: prod\n    paths: ['a/**']\n    signers: 1\n",
            "twoPersonRules[0].signers: must be a whole number of at least 2, not 1",
        ),
        (
            "twoPersonRules:\n  - name: prod\n    paths: ['../a']\n",
            "twoPersonRules[0].paths: '../a' must be relative to the repository root",
        ),
        (
            "twoPersonRules:\n  - name: prod\n    paths: ['a/**']\n    approvers: [x]\n",
            "twoPersonRules[0]: unknown key(s) approvers",
        ),
    ],
)
def test_bad_rules_are_config_errors(tmp_path: Path, rules: str, message: str) -> None:
    path = tmp_path / "trust.yaml"
    path.write_text("mode: head\n" + rules)
    with pytest.raises(ConfigError) as caught:
        load_trust_policy(path)
    assert message in str(caught.value)
