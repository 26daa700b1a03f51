"""The signature matrix: real repositories signed with real keys, each case with its exact verdict.

Each case builds a repository, a trust policy file and options, and names the commit whose verdict
decides the result (the first failing commit, or the tip when all are trusted) with the exact reason.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from syncer.config import load_trust_policy
from syncer.errors import HistoryRewritten, VerificationError
from syncer.source import GitSource, SourceOptions
from syncer.verify import Verdict, VerifyOptions, verify_revision
from tests.integration.verify.conftest import KeySet
from tests.integration.verify.kit import (
    GitRepo,
    bare_remote,
    plain_git,
    plant_hostile_git_config,
    run,
    write_policy,
)

pytestmark = pytest.mark.integration

PROD_SCOPE = "clusters/prod-*/**"


@dataclass
class Ctx:
    tmp: Path
    ks: KeySet
    monkeypatch: pytest.MonkeyPatch

    def repo(self) -> GitRepo:
        return GitRepo(self.tmp / "fleet")

    def policy(self, *, mode: str = "head", extra_keys: tuple[str, ...] = ()) -> Path:
        ks = self.ks
        signers: list[dict[str, object]] = [
            {"name": "release", "openpgp": ks.release.fingerprint},
            {"name": "old-release", "openpgp": ks.expired.fingerprint},
            {"name": "retired", "openpgp": ks.revoked.fingerprint},
            {"name": "ops", "ssh": ks.ops_ssh.public_line},
            {"name": "prod-operators", "ssh": ks.prod_ssh.public_line, "paths": [PROD_SCOPE]},
        ]
        keys = [ks.release.public, ks.expired.public, ks.revoked.public, ks.revocation, *extra_keys]
        return write_policy(self.tmp / "trust.yaml", signers=signers, keys=keys, mode=mode)


@dataclass
class Case:
    """What to verify and what must come out; ``error`` cases expect an exception with ``reason``."""

    repo: Path
    policy: Path
    verdict: Verdict | None
    commit: str
    reason: str
    signer: str = ""
    fingerprint: str = ""
    options: VerifyOptions = field(default_factory=VerifyOptions)
    error: type[Exception] | None = None
    action: Callable[[], object] | None = None


def unsigned_tip(c: Ctx) -> Case:
    r = c.repo()
    r.commit("base", sign=c.ks.release)
    tip = r.commit("unsigned change")
    return Case(r.path, c.policy(), Verdict.UNSIGNED, tip, "the commit has no signature")


def untrusted_ssh(c: Ctx) -> Case:
    r = c.repo()
    tip = r.commit("by a stranger", sign=c.ks.stranger_ssh)
    fp = c.ks.stranger_ssh.fingerprint
    return Case(r.path, c.policy(), Verdict.UNKNOWN_KEY, tip, f"no trusted SSH key {fp}", fingerprint=fp)


def untrusted_openpgp(c: Ctx) -> Case:
    r = c.repo()
    tip = r.commit("by a stranger", sign=c.ks.stranger_pgp)
    fp = c.ks.stranger_pgp.fingerprint
    return Case(r.path, c.policy(), Verdict.UNKNOWN_KEY, tip, f"no trusted OpenPGP key {fp}", fingerprint=fp)


def openpgp_key_listed_but_no_signer(c: Ctx) -> Case:
    r = c.repo()
    tip = r.commit("by a key in the keyring only", sign=c.ks.stranger_pgp)
    fp = c.ks.stranger_pgp.fingerprint
    reason = f"signed with openpgp key {fp}, which no signer of the policy holds"
    policy = c.policy(extra_keys=(c.ks.stranger_pgp.public,))
    return Case(r.path, policy, Verdict.UNKNOWN_KEY, tip, reason, fingerprint=fp)


def trusted_ssh(c: Ctx) -> Case:
    r = c.repo()
    tip = r.commit("by ops", sign=c.ks.ops_ssh)
    fp = c.ks.ops_ssh.fingerprint
    return Case(r.path, c.policy(), Verdict.TRUSTED, tip, "good signature by ops", "ops", fp)


def trusted_openpgp(c: Ctx) -> Case:
    r = c.repo()
    tip = r.commit("release", sign=c.ks.release)
    fp = c.ks.release.fingerprint
    return Case(r.path, c.policy(), Verdict.TRUSTED, tip, "good signature by release", "release", fp)


def expired_openpgp(c: Ctx) -> Case:
    r = c.repo()
    tip = r.commit("signed while the key was valid", sign=c.ks.expired)
    fp = c.ks.expired.fingerprint
    reason = f"signed with openpgp key {fp} (old-release), which has expired"
    return Case(r.path, c.policy(), Verdict.EXPIRED_KEY, tip, reason, "old-release", fp)


def revoked_openpgp(c: Ctx) -> Case:
    r = c.repo()
    tip = r.commit("signed before the revocation", sign=c.ks.revoked)
    fp = c.ks.revoked.fingerprint
    reason = f"signed with openpgp key {fp} (retired), which is revoked"
    return Case(r.path, c.policy(), Verdict.REVOKED_KEY, tip, reason, "retired", fp)


def bad_signature(c: Ctx) -> Case:
    """A signed commit whose message was changed afterwards, keeping the signature."""
    r = c.repo()
    r.commit("genuine", sign=c.ks.release)
    raw = r.git("cat-file", "commit", "HEAD") + "\n"
    forged = raw.replace("\ngenuine\n", "\nforged\n").encode()
    sha = run(
        ["git", "hash-object", "-w", "-t", "commit", "--stdin"], env=r.env, cwd=r.path, stdin=forged
    ).strip()
    r.git("update-ref", "refs/heads/main", sha)
    key_id = c.ks.release.fingerprint[-16:]
    return Case(r.path, c.policy(), Verdict.BAD_SIGNATURE, sha, f"bad signature from key {key_id}")


def _unsigned_inside(c: Ctx) -> tuple[GitRepo, str, str, str]:
    r = c.repo()
    base = r.commit("base", sign=c.ks.release)
    middle = r.commit("unsigned in the middle")
    tip = r.commit("signed tip", sign=c.ks.release)
    return r, base, middle, tip


def strict_unsigned_inside_range(c: Ctx) -> Case:
    r, base, middle, _tip = _unsigned_inside(c)
    options = VerifyOptions(since=base)
    return Case(
        r.path,
        c.policy(mode="strict"),
        Verdict.UNSIGNED,
        middle,
        "the commit has no signature",
        options=options,
    )


def head_mode_same_range_trusts_tip(c: Ctx) -> Case:
    r, base, _middle, tip = _unsigned_inside(c)
    fp = c.ks.release.fingerprint
    options = VerifyOptions(since=base)
    return Case(
        r.path,
        c.policy(mode="head"),
        Verdict.TRUSTED,
        tip,
        "good signature by release",
        "release",
        fp,
        options,
    )


def strict_merge_of_unsigned_branch(c: Ctx) -> Case:
    r = c.repo()
    base = r.commit("base", sign=c.ks.release)
    r.git("checkout", "-q", "-b", "feature")
    side = r.commit("unsigned feature work")
    r.git("checkout", "-q", "main")
    r.commit("mainline", sign=c.ks.release)
    r.merge("feature", "merge feature", sign=c.ks.release)
    options = VerifyOptions(since=base)
    return Case(
        r.path,
        c.policy(mode="strict"),
        Verdict.UNSIGNED,
        side,
        "the commit has no signature",
        options=options,
    )


def scoped_signer_out_of_scope(c: Ctx) -> Case:
    r = c.repo()
    r.commit("base", sign=c.ks.release)
    files = {"clusters/prod-eu/redis.yaml": "a\n", "clusters/staging/redis.yaml": "b\n"}
    tip = r.commit("prod and staging", files, sign=c.ks.prod_ssh)
    reason = (
        f"signer 'prod-operators' may change only {PROD_SCOPE}, but with no verified base revision "
        "clusters/staging/redis.yaml differ(s) from what a signer covering them signed"
    )
    fp = c.ks.prod_ssh.fingerprint
    return Case(r.path, c.policy(), Verdict.OUT_OF_SCOPE, tip, reason, "prod-operators", fp)


def scoped_signer_in_scope(c: Ctx) -> Case:
    r = c.repo()
    r.commit("base", {"clusters/staging/redis.yaml": "b\n"}, sign=c.ks.release)
    tip = r.commit("prod only", {"clusters/prod-eu/redis.yaml": "a\n"}, sign=c.ks.prod_ssh)
    fp = c.ks.prod_ssh.fingerprint
    return Case(
        r.path, c.policy(), Verdict.TRUSTED, tip, "good signature by prod-operators", "prod-operators", fp
    )


def head_mode_scope_covers_everything_since(c: Ctx) -> Case:
    """In head mode the tip's signer answers for every change since the last verified revision."""
    r = c.repo()
    base = r.commit("base", sign=c.ks.release)
    r.commit("unsigned staging change", {"clusters/staging/redis.yaml": "evil\n"})
    tip = r.commit("prod change", {"clusters/prod-eu/redis.yaml": "a\n"}, sign=c.ks.prod_ssh)
    reason = (
        f"signer 'prod-operators' may change only {PROD_SCOPE}, but this changes clusters/staging/redis.yaml"
    )
    fp = c.ks.prod_ssh.fingerprint
    return Case(
        r.path, c.policy(), Verdict.OUT_OF_SCOPE, tip, reason, "prod-operators", fp, VerifyOptions(since=base)
    )


def _scoped_merge(c: Ctx, merge_files: dict[str, str] | None) -> tuple[GitRepo, str, str]:
    r = c.repo()
    base = r.commit(
        "base",
        {"clusters/staging/redis.yaml": "1\n", "clusters/prod-eu/redis.yaml": "1\n"},
        sign=c.ks.release,
    )
    r.git("checkout", "-q", "-b", "staging-work")
    r.commit("staging change", {"clusters/staging/redis.yaml": "2\n"}, sign=c.ks.release)
    r.git("checkout", "-q", "main")
    r.commit("prod change", {"clusters/prod-eu/redis.yaml": "2\n"}, sign=c.ks.prod_ssh)
    merge = r.merge("staging-work", "merge staging work", sign=c.ks.prod_ssh, files=merge_files)
    return r, base, merge


def strict_scoped_merge_of_signed_side(c: Ctx) -> Case:
    """A prod-scoped signer merges a side whose staging change is signed by release: the merge decides
    no staging path itself, so it is in scope."""
    r, base, merge = _scoped_merge(c, None)
    fp = c.ks.prod_ssh.fingerprint
    options = VerifyOptions(since=base)
    return Case(
        r.path,
        c.policy(mode="strict"),
        Verdict.TRUSTED,
        merge,
        "good signature by prod-operators",
        "prod-operators",
        fp,
        options,
    )


def strict_scoped_evil_merge(c: Ctx) -> Case:
    """The same merge, but the merge commit itself edits a staging file: out of scope."""
    r, base, merge = _scoped_merge(c, {"clusters/staging/redis.yaml": "edited in the merge\n"})
    reason = (
        f"signer 'prod-operators' may change only {PROD_SCOPE}, but this changes clusters/staging/redis.yaml"
    )
    fp = c.ks.prod_ssh.fingerprint
    options = VerifyOptions(since=base)
    return Case(
        r.path, c.policy(mode="strict"), Verdict.OUT_OF_SCOPE, merge, reason, "prod-operators", fp, options
    )


def force_push_rewrite_through_source(c: Ctx) -> Case:
    remote = bare_remote(c.tmp / "remote.git")
    r = c.repo()
    r.git("remote", "add", "origin", str(remote))
    old = r.commit("first", sign=c.ks.release)
    r.git("push", "-q", "origin", "main")
    source = GitSource(SourceOptions(url=str(remote), cache_dir=c.tmp / "cache"))
    first = source.poll()
    assert first.tip == old
    source.mark_synced(first.tip)
    r.git("reset", "-q", "--hard", "HEAD")
    r.git("commit", "-q", "--amend", "-m", "rewritten first")
    new = r.git("rev-parse", "HEAD")
    r.git("push", "-q", "--force", "origin", "main")
    reason = (
        f"history of branch 'main' on {remote} was rewritten: the new tip {new} does not descend from the "
        f"last synced revision {old}; refusing it (allowHistoryRewrite is off)"
    )
    return Case(remote, c.policy(), None, new, reason, error=HistoryRewritten, action=source.poll)


def rewrite_seen_by_verify(c: Ctx) -> Case:
    r = c.repo()
    old = r.commit("first", sign=c.ks.release)
    r.git("commit", "-q", "--amend", "-m", "rewritten")
    new = r.git("rev-parse", "HEAD")
    policy = load_trust_policy(c.policy())
    reason = f"history was rewritten: {old} (the last verified revision) is not an ancestor of {new}"
    action = lambda: verify_revision(r.path, policy, VerifyOptions(since=old))  # noqa: E731
    return Case(r.path, c.tmp / "trust.yaml", None, new, reason, error=VerificationError, action=action)


def hostile_config_openpgp(c: Ctx) -> Case:
    r = c.repo()
    tip = r.commit("by a stranger", sign=c.ks.stranger_pgp)
    policy = c.policy()
    plant_hostile_git_config(
        c.tmp, c.monkeypatch, c.ks.release.fingerprint, f"ops {c.ks.stranger_ssh.public_line}"
    )
    (r.path / ".git" / "config").write_text(
        (r.path / ".git" / "config").read_text() + f"[gpg]\n\tprogram = {c.tmp / 'always-good-gpg'}\n"
    )
    plain = plain_git(r.path, "verify-commit", "--raw", tip)
    assert plain.returncode == 0, "the hostile config must fool plain git"
    assert "GOODSIG" in plain.stderr
    fp = c.ks.stranger_pgp.fingerprint
    return Case(r.path, policy, Verdict.UNKNOWN_KEY, tip, f"no trusted OpenPGP key {fp}", fingerprint=fp)


def hostile_config_ssh(c: Ctx) -> Case:
    r = c.repo()
    tip = r.commit("by a stranger", sign=c.ks.stranger_ssh)
    policy = c.policy()
    plant_hostile_git_config(
        c.tmp, c.monkeypatch, c.ks.release.fingerprint, f"ops {c.ks.stranger_ssh.public_line}"
    )
    plain = plain_git(r.path, "log", "-1", "--format=%G?:%GS", tip)
    assert plain.stdout.strip() == "G:ops", "the hostile config must fool plain git"
    fp = c.ks.stranger_ssh.fingerprint
    return Case(r.path, policy, Verdict.UNKNOWN_KEY, tip, f"no trusted SSH key {fp}", fingerprint=fp)


CASES = [
    unsigned_tip,
    untrusted_ssh,
    untrusted_openpgp,
    openpgp_key_listed_but_no_signer,
    trusted_ssh,
    trusted_openpgp,
    expired_openpgp,
    revoked_openpgp,
    bad_signature,
    strict_unsigned_inside_range,
    head_mode_same_range_trusts_tip,
    strict_merge_of_unsigned_branch,
    scoped_signer_out_of_scope,
    scoped_signer_in_scope,
    head_mode_scope_covers_everything_since,
    strict_scoped_merge_of_signed_side,
    strict_scoped_evil_merge,
    force_push_rewrite_through_source,
    rewrite_seen_by_verify,
    hostile_config_openpgp,
    hostile_config_ssh,
]


@pytest.mark.parametrize("build", CASES, ids=[f.__name__ for f in CASES])
def test_signature_matrix(
    build: Callable[[Ctx], Case], keyset: KeySet, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    case = build(Ctx(tmp_path, keyset, monkeypatch))
    if case.error is not None:
        assert case.action is not None
        with pytest.raises(case.error) as raised:
            case.action()
        assert str(raised.value) == case.reason
        return
    result = verify_revision(case.repo, load_trust_policy(case.policy), case.options)
    judged = result.first_failure or result.commits[-1]
    assert (result.verdict, judged.commit, judged.reason) == (case.verdict, case.commit, case.reason)
    assert (judged.signer, judged.fingerprint) == (case.signer, case.fingerprint)
    assert result.trusted is (case.verdict is Verdict.TRUSTED)
    if result.trusted:
        assert result.require_trusted() is result
    else:
        with pytest.raises(VerificationError, match=judged.commit[:12]):
            result.require_trusted()
