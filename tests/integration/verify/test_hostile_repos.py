"""The repository as an attacker with push access (or a hand on the folder) would prepare it.

Each test builds one hostile state with real git, gpg and ssh-keygen, shows that plain git is fooled
by it (or runs the planted program), then asserts syncer's exact verdict and reason, and that no
program named by the repository ran: every planted program appends to a marker file.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner

from syncer.cli import cli
from syncer.config import TrustPolicy, load_trust_policy
from syncer.errors import HistoryRewritten, SourceError, VerificationError
from syncer.source import GitSource, SourceOptions
from syncer.verify import Verdict, VerificationResult, VerifyOptions, verify_revision
from tests.integration.verify.conftest import KeySet
from tests.integration.verify.kit import GitRepo, plain_git, run, write_policy

pytestmark = pytest.mark.integration

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "repo"
PROD_SCOPE = "clusters/prod-*/**"
EVIL_NAMESPACE = "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: replaced-tree\n"
HOOKS = (
    "pre-commit",
    "post-checkout",
    "post-merge",
    "pre-push",
    "post-rewrite",
    "reference-transaction",
    "pre-auto-gc",
    "post-index-change",
    "fsmonitor-watchman",
    "push-to-checkout",
    "update",
    "post-update",
    "pre-receive",
    "post-receive",
)


@dataclass
class Trap:
    """A program that records every run of it in a marker file."""

    program: Path
    marker: Path

    def ran(self) -> list[str]:
        return self.marker.read_text().splitlines() if self.marker.exists() else []

    def reset(self) -> None:
        self.marker.unlink(missing_ok=True)


@pytest.fixture
def trap(tmp_path: Path) -> Trap:
    marker = tmp_path / "marker"
    program = tmp_path / "planted-program"
    program.write_text(f'#!/bin/sh\necho "ran $0 $*" >> {marker}\ncat >/dev/null 2>&1 </dev/null\nexit 0\n')
    program.chmod(0o755)
    return Trap(program, marker)


@pytest.fixture
def policy_file(tmp_path: Path, keyset: KeySet) -> Path:
    signers: list[dict[str, object]] = [
        {"name": "release", "openpgp": keyset.release.fingerprint},
        {"name": "ops", "ssh": keyset.ops_ssh.public_line},
        {"name": "prod-operators", "ssh": keyset.prod_ssh.public_line, "paths": [PROD_SCOPE]},
    ]
    return write_policy(tmp_path / "trust.yaml", signers=signers, keys=[keyset.release.public])


def policy_of(path: Path, mode: str = "head") -> TrustPolicy:
    text = path.read_text().replace("mode: head", f"mode: {mode}")
    other = path.with_name(f"trust-{mode}.yaml")
    other.write_text(text)
    return load_trust_policy(other)


def invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    return result.exit_code, result.output


def verify_clone(repo: Path, policy: TrustPolicy, cache: Path, **options: str) -> VerificationResult:
    """What the agent and ``syncer verify`` do with a repository: clone it, judge the clone."""
    source = GitSource(SourceOptions(url=str(repo), cache_dir=cache, timeout=30))
    tip = source.poll().tip
    return verify_revision(source.git_dir, policy, VerifyOptions(revision=tip, **options))


def fleet_repo(tmp: Path, keyset: KeySet) -> GitRepo:
    repo = GitRepo(tmp / "fleet")
    shutil.copytree(EXAMPLES, repo.path, dirs_exist_ok=True)
    repo.commit("the example fleet", {}, sign=keyset.ops_ssh)
    return repo


# -- 1. the repository's own config, hooks, fsmonitor, filters and alternates -------------------------


def plant_config(repo: GitRepo, trap: Trap, tmp: Path) -> None:
    hooks = tmp / "planted-hooks"
    hooks.mkdir()
    for name in HOOKS:
        os.symlink(trap.program, hooks / name)
        os.symlink(trap.program, repo.path / ".git" / "hooks" / name)
    settings = {
        "core.fsmonitor": str(trap.program),
        "core.hooksPath": str(hooks),
        "core.sshCommand": str(trap.program),
        "core.pager": str(trap.program),
        "core.alternateRefsCommand": str(trap.program),
        "uploadpack.packObjectsHook": str(trap.program),
        "uploadpack.allowLazyFetch": "true",
        "gpg.program": str(trap.program),
        "gpg.ssh.program": str(trap.program),
        "gpg.ssh.allowedSignersFile": str(tmp / "nowhere"),
        "diff.external": str(trap.program),
        "filter.planted.smudge": str(trap.program),
        "filter.planted.clean": str(trap.program),
        "filter.planted.process": str(trap.program),
        "filter.planted.required": "true",
        "protocol.ext.allow": "always",
    }
    for key, value in settings.items():
        repo.git("config", key, value)


def test_foreign_config_hooks_fsmonitor_filters_and_alternates_take_no_part(
    tmp_path: Path, keyset: KeySet, trap: Trap, policy_file: Path
) -> None:
    repo = fleet_repo(tmp_path, keyset)
    tip = repo.commit("attributes", {".gitattributes": "* filter=planted\n"}, sign=keyset.ops_ssh)
    other = GitRepo(tmp_path / "elsewhere")
    other.commit("objects elsewhere")
    (repo.path / ".git" / "objects" / "info").mkdir(parents=True, exist_ok=True)
    (repo.path / ".git" / "objects" / "info" / "alternates").write_text(
        f"{other.path / '.git' / 'objects'}\n"
    )
    plant_config(repo, trap, tmp_path)
    plain_git(repo.path, "status")
    assert trap.ran(), "the planted fsmonitor must run under plain git"
    trap.reset()

    code, out = invoke("verify", "--repo", str(repo.path), "--policy", str(policy_file))
    assert code == 0, out
    assert f"trusted: {tip} (head mode)" in out
    render = ["render", "--repo", str(repo.path), "--rev", tip, "--cluster", "canary"]
    rendered = CliRunner().invoke(cli, render)
    assert rendered.exit_code == 0, rendered.output
    assert rendered.stdout.startswith("# cluster: canary\n")
    code, out = invoke("diff", "--repo", str(repo.path), "--rev", tip, "--offline")
    assert code in (0, 1), out

    cache = tmp_path / "cache"
    result = verify_clone(repo.path, load_trust_policy(policy_file), cache)
    assert (result.verdict, result.commits[-1].reason) == (Verdict.TRUSTED, "good signature by ops")
    assert not (cache / "repo.git" / "objects" / "info" / "alternates").exists()
    assert trap.ran() == []


# -- 2. refs/replace -----------------------------------------------------------------------------------


def test_replace_refs_cannot_swap_the_tree_of_a_signed_commit(
    tmp_path: Path, keyset: KeySet, trap: Trap, policy_file: Path
) -> None:
    repo = fleet_repo(tmp_path, keyset)
    tip = repo.git("rev-parse", "HEAD")
    repo.git("checkout", "-q", "-b", "evil")
    repo.commit("unsigned evil tree", {"base/evil.yaml": EVIL_NAMESPACE})
    evil_tree = repo.git("rev-parse", "HEAD^{tree}")
    repo.git("checkout", "-q", "main")
    repo.git("branch", "-q", "-D", "evil")
    repo.git("replace", repo.git("rev-parse", f"{tip}^{{tree}}"), evil_tree)
    plant_config(repo, trap, tmp_path)
    fooled = plain_git(
        repo.path, "-c", f"gpg.ssh.allowedSignersFile={tmp_path / 'allowed'}", "ls-tree", "-r", tip
    )
    assert "base/evil.yaml" in fooled.stdout, "plain git must show the replaced tree under the signed commit"
    trap.reset()

    result = verify_clone(repo.path, load_trust_policy(policy_file), tmp_path / "cache")
    assert (result.verdict, result.commits[-1].reason) == (Verdict.TRUSTED, "good signature by ops")
    code, out = invoke("render", "--repo", str(repo.path), "--rev", tip)
    assert code == 0, out
    assert "replaced-tree" not in out
    assert "base/evil.yaml" not in out
    assert trap.ran() == []


# -- 3. info/grafts ------------------------------------------------------------------------------------


def test_grafts_cannot_hide_an_unsigned_commit_from_strict_mode(
    tmp_path: Path, keyset: KeySet, trap: Trap, policy_file: Path
) -> None:
    repo = fleet_repo(tmp_path, keyset)
    base = repo.git("rev-parse", "HEAD")
    middle = repo.commit("unsigned in the middle", {"base/evil.yaml": "# unsigned\n"})
    tip = repo.commit("signed tip", {"notes/tip.txt": "tip\n"}, sign=keyset.ops_ssh)
    (repo.path / ".git" / "info").mkdir(exist_ok=True)
    (repo.path / ".git" / "info" / "grafts").write_text(f"{tip} {base}\n")
    plant_config(repo, trap, tmp_path)
    hidden = plain_git(repo.path, "rev-list", tip, f"^{base}")
    assert hidden.stdout.split() == [tip], "the graft must hide the middle commit from plain git"
    trap.reset()

    # git's transport honours the grafts of the repository it serves and leaves the hidden commit out:
    # the clone cannot be completed, and nothing is judged.
    with pytest.raises(SourceError) as raised:
        verify_clone(repo.path, policy_of(policy_file, "strict"), tmp_path / "cache", since=base)
    assert str(raised.value).endswith(
        f"fatal: did not receive expected object {middle} | fatal: fetch-pack: invalid index-pack output"
    )
    code, out = invoke(
        "verify", "--repo", str(repo.path), "--policy", str(policy_file), "--mode", "strict", "--since", base
    )
    assert code == 2, out
    assert f"did not receive expected object {middle}" in out
    assert trap.ran() == []


# -- 4. shallow boundary, and strict mode on shallow history ------------------------------------------


def shallow_copy(tmp: Path, keyset: KeySet) -> tuple[Path, str, str]:
    full = fleet_repo(tmp, keyset)
    hidden = full.commit("unsigned, below the boundary", {"base/evil.yaml": "# unsigned\n"})
    tip = full.commit("signed tip", {"notes/tip.txt": "tip\n"}, sign=keyset.ops_ssh)
    shallow = tmp / "shallow"
    run(
        ["git", "clone", "-q", "--depth", "1", "--no-local", f"file://{full.path}", str(shallow)],
        env=full.env,
    )
    return shallow, hidden, tip


def test_strict_mode_refuses_a_shallow_history_instead_of_trusting_it(
    tmp_path: Path, keyset: KeySet, trap: Trap, policy_file: Path
) -> None:
    shallow, _hidden, tip = shallow_copy(tmp_path, keyset)
    assert plain_git(shallow, "rev-list", tip).stdout.split() == [tip]
    strict = policy_of(policy_file, "strict")

    with pytest.raises(VerificationError) as raised:
        verify_clone(shallow, strict, tmp_path / "cache")
    assert raised.value.verdict == "incomplete-history"
    assert str(raised.value) == (
        f"strict mode cannot judge {tip}: the repository's history is shallow (commits below its "
        "boundary are missing), so the range of new commits cannot be walked whole"
    )
    code, out = invoke("verify", "--repo", str(shallow), "--policy", str(policy_file), "--mode", "strict")
    assert code == 1, out
    assert "the repository's history is shallow" in out
    assert trap.ran() == []


@pytest.mark.parametrize("mode", ["strict", "head"])
def test_a_last_verified_revision_below_a_shallow_boundary_is_incomplete_history_not_a_rewrite(
    tmp_path: Path, keyset: KeySet, policy_file: Path, mode: str
) -> None:
    shallow, hidden, tip = shallow_copy(tmp_path, keyset)
    policy = policy_of(policy_file, mode)

    with pytest.raises(VerificationError) as raised:
        verify_clone(shallow, policy, tmp_path / "cache", since=hidden)
    assert raised.value.verdict == "incomplete-history"
    assert not isinstance(raised.value, HistoryRewritten)
    assert f"cannot judge {tip}" in str(raised.value)
    assert "the repository's history is shallow" in str(raised.value)
    code, out = invoke(
        "verify", "--repo", str(shallow), "--policy", str(policy_file), "--mode", mode, "--since", hidden
    )
    assert code == 1, out
    assert "history was rewritten" not in out
    assert "the repository's history is shallow" in out


def test_a_shallow_boundary_does_not_let_a_scoped_signer_vouch_for_what_it_cannot_see(
    tmp_path: Path, keyset: KeySet, policy_file: Path
) -> None:
    full = fleet_repo(tmp_path, keyset)
    full.commit("unsigned staging", {"clusters/staging/redis.yaml": "evil\n"})
    tip = full.commit("prod", {"clusters/prod-eu/redis.yaml": "1\n"}, sign=keyset.prod_ssh)
    shallow = tmp_path / "shallow"
    run(
        ["git", "clone", "-q", "--depth", "1", "--no-local", f"file://{full.path}", str(shallow)],
        env=full.env,
    )
    result = verify_clone(shallow, load_trust_policy(policy_file), tmp_path / "cache")
    judged = result.commits[-1]
    assert (result.verdict, judged.commit) == (Verdict.OUT_OF_SCOPE, tip)
    assert "clusters/staging/redis.yaml" in judged.out_of_scope
    assert "with no verified base revision " in judged.reason


# -- 5. partial-clone promisors and missing objects ------------------------------------------------------


def test_a_partial_clone_with_a_planted_promisor_is_never_asked_for_objects(
    tmp_path: Path, keyset: KeySet, trap: Trap, policy_file: Path
) -> None:
    full = fleet_repo(tmp_path, keyset)
    full.git("config", "uploadpack.allowFilter", "true")
    partial = tmp_path / "partial"
    run(
        [
            "git",
            "clone",
            "-q",
            "--bare",
            "--filter=blob:none",
            "--no-local",
            f"file://{full.path}",
            str(partial),
        ],
        env=full.env,
    )
    hook = f"ext::sh -c {trap.program}% >&2"
    run(["git", "config", "remote.origin.url", hook], env=full.env, cwd=partial)
    run(["git", "config", "protocol.ext.allow", "always"], env=full.env, cwd=partial)
    run(["git", "config", "uploadpack.allowLazyFetch", "true"], env=full.env, cwd=partial)
    blob = run(["git", "rev-parse", "HEAD:fleet.yaml"], env=full.env, cwd=full.path).strip()
    plain_git(partial, "cat-file", "-p", blob)
    assert trap.ran(), "plain git must try the planted promisor"
    trap.reset()

    with pytest.raises(SourceError, match=r"^clone \(.*partial\) failed: "):
        verify_clone(partial, load_trust_policy(policy_file), tmp_path / "cache")
    code, out = invoke("verify", "--repo", str(partial), "--policy", str(policy_file))
    assert code == 2, out
    assert out.startswith("error: clone (")
    code, out = invoke("render", "--repo", str(partial))
    assert code == 2, out
    assert trap.ran() == []


# -- 6. git's exit status --------------------------------------------------------------------------------


def loose_object_path(repo: Path, sha: str) -> Path:
    return repo / ".git" / "objects" / sha[:2] / sha[2:]


def test_a_range_git_cannot_walk_is_an_error_not_a_verdict(
    tmp_path: Path, keyset: KeySet, policy_file: Path
) -> None:
    repo = GitRepo(tmp_path / "fleet")
    base = repo.commit("base", sign=keyset.ops_ssh)
    middle = repo.commit("middle", sign=keyset.ops_ssh)
    tip = repo.commit("tip", sign=keyset.ops_ssh)
    loose_object_path(repo.path, middle).unlink()
    with pytest.raises(VerificationError) as raised:
        verify_revision(repo.path, policy_of(policy_file, "strict"), VerifyOptions(revision=tip, since=base))
    assert raised.value.verdict == "incomplete-history"
    walk = f"git cannot walk its history (fatal: Failed to traverse parents of commit {tip})"
    assert str(raised.value) == f"cannot judge {tip}: {walk}"
    with pytest.raises(VerificationError) as raised:
        verify_revision(repo.path, policy_of(policy_file, "strict"), VerifyOptions(revision=tip))
    assert raised.value.verdict == "incomplete-history"
    assert str(raised.value) == (
        f"strict mode cannot judge {tip}: git cannot walk the history (fatal: revision walk setup failed)"
    )

    loose_object_path(repo.path, tip).unlink()
    with pytest.raises(SourceError, match=rf"^revision '{tip}' is not a commit of "):
        verify_revision(repo.path, load_trust_policy(policy_file), VerifyOptions(revision=tip))


def test_a_remote_with_a_missing_object_fails_the_poll(tmp_path: Path, keyset: KeySet) -> None:
    repo = GitRepo(tmp_path / "fleet")
    repo.commit("base", sign=keyset.ops_ssh)
    middle = repo.commit("middle", sign=keyset.ops_ssh)
    repo.commit("tip", sign=keyset.ops_ssh)
    loose_object_path(repo.path, middle).unlink()
    source = GitSource(SourceOptions(url=str(repo.path), cache_dir=tmp_path / "cache", timeout=30))
    with pytest.raises(SourceError, match=r"^clone \(.*fleet\) failed: "):
        source.poll()
    assert source.last_accepted == ""


# -- 7. options smuggled in through a repository, revision or branch ---------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ["render", "--repo", "--upload-pack=PROGRAM"],
        ["render", "--repo=--upload-pack=PROGRAM", "--rev", "main"],
        ["verify", "--repo=--upload-pack=PROGRAM"],
        ["diff", "--repo=--upload-pack=PROGRAM", "--offline"],
        ["render", "--repo", "ext::sh -c PROGRAM"],
        ["verify", "--repo", "ext::sh -c PROGRAM"],
    ],
    ids=["render", "render-rev", "verify", "diff", "render-ext", "verify-ext"],
)
def test_options_cannot_be_smuggled_in_through_the_repository_argument(
    args: list[str], trap: Trap, tmp_path: Path, policy_file: Path
) -> None:
    argv = [a.replace("PROGRAM", str(trap.program)) for a in args]
    if argv[0] == "verify":
        argv += ["--policy", str(policy_file)]
    code, out = invoke(*argv)
    assert code == 2, out
    if "ext::" in argv[2] and argv[0] == "verify":
        assert "is neither an existing folder nor a URL" in out
    elif "ext::" in argv[2]:
        assert "transport 'ext' not allowed" in out
    else:
        assert "starts with '-': refusing it" in out
    assert trap.ran() == []


def test_a_branch_or_revision_starting_with_a_dash_is_refused(
    tmp_path: Path, keyset: KeySet, trap: Trap, policy_file: Path
) -> None:
    repo = fleet_repo(tmp_path, keyset)
    code, out = invoke(
        "verify",
        "--repo",
        str(repo.path),
        "--policy",
        str(policy_file),
        f"--branch=--upload-pack={trap.program}",
    )
    assert code == 2, out
    assert "the branch '--upload-pack=" in out
    assert "starts with '-': refusing it" in out
    code, out = invoke("verify", "--repo", str(repo.path), "--policy", str(policy_file), "--rev=--output=x")
    assert code == 2, out
    assert "revision '--output=x' starts with '-': refusing it" in out
    with pytest.raises(SourceError, match="starts with '-'"):
        GitSource(SourceOptions(url=f"-oProxyCommand={trap.program}", cache_dir=tmp_path / "c"))
    assert trap.ran() == []


# -- 9. path scopes without a base -------------------------------------------------------------------------


@dataclass(frozen=True)
class ScopeCase:
    name: str
    build: Callable[[GitRepo, KeySet], None]
    verdict: Verdict
    reason: str


def _unsigned_staging(repo: GitRepo, ks: KeySet) -> None:
    repo.commit("unsigned staging", {"clusters/staging/redis.yaml": "evil\n"})


def _signed_staging(repo: GitRepo, ks: KeySet) -> None:
    repo.commit("staging by release", {"clusters/staging/redis.yaml": "2\n"}, sign=ks.release)


def _unsigned_delete(repo: GitRepo, ks: KeySet) -> None:
    repo.git("rm", "-q", "clusters/staging/redis.yaml")
    repo.commit("unsigned deletion", {})


def _unsigned_delete_all(repo: GitRepo, ks: KeySet) -> None:
    repo.git("rm", "-q", "clusters/staging/redis.yaml")
    repo.commit("unsigned deletion of everything outside prod", {"clusters/prod-eu/a.yaml": "a\n"})


NO_BASE = (
    f"signer 'prod-operators' may change only {PROD_SCOPE}, but with no verified base revision "
    "clusters/staging/redis.yaml differ(s) from what a signer covering them signed"
)
SCOPE_CASES = [
    ScopeCase("unsigned-out-of-scope-change", _unsigned_staging, Verdict.OUT_OF_SCOPE, NO_BASE),
    ScopeCase("out-of-scope-change-signed-by-a-covering-signer", _signed_staging, Verdict.TRUSTED, ""),
    ScopeCase(
        "unsigned-out-of-scope-deletion",
        _unsigned_delete,
        Verdict.OUT_OF_SCOPE,
        NO_BASE.replace("redis.yaml differ", "redis.yaml, notes/unsigned-deletion.txt differ"),
    ),
    ScopeCase(
        "unsigned-deletion-of-every-out-of-scope-path", _unsigned_delete_all, Verdict.OUT_OF_SCOPE, NO_BASE
    ),
]


@pytest.mark.parametrize("case", SCOPE_CASES, ids=[c.name for c in SCOPE_CASES])
def test_a_path_limited_tip_signer_vouches_only_for_its_paths_without_a_base(
    case: ScopeCase, tmp_path: Path, keyset: KeySet, policy_file: Path
) -> None:
    repo = GitRepo(tmp_path / "fleet")
    repo.commit("base", {"clusters/staging/redis.yaml": "1\n"}, sign=keyset.release)
    case.build(repo, keyset)
    tip = repo.commit("prod change", {"clusters/prod-eu/redis.yaml": "1\n"}, sign=keyset.prod_ssh)
    result = verify_clone(repo.path, load_trust_policy(policy_file), tmp_path / "cache")
    judged = result.commits[-1]
    assert (result.verdict, judged.commit, judged.signer) == (case.verdict, tip, "prod-operators")
    assert judged.reason == (case.reason or "good signature by prod-operators")


# -- 11. the same signed content re-wrapped under a new commit id --------------------------------------------


def _signature_block(raw: str) -> str:
    lines = raw.split("\n")
    start = next(i for i, line in enumerate(lines) if line.startswith("gpgsig "))
    end = start + 1
    while lines[end].startswith(" "):
        end += 1
    return "\n".join(lines[start:end]) + "\n"


def rewrap(repo: GitRepo, sha: str, how: str) -> str:
    raw = repo.git("cat-file", "commit", sha) + "\n"
    block = _signature_block(raw)
    if how == "extra-sha256-header":
        raw = raw.replace(block, block + block.replace("gpgsig ", "gpgsig-sha256 ", 1))
    elif how == "second-gpgsig-header":
        raw = raw.replace(block, block + block)
    else:
        raw = raw.replace(block, block.replace("gpgsig ", "gpgsig-sha256 ", 1))
    argv = ["git", "hash-object", "-w", "-t", "commit", "--stdin"]
    new = run(argv, env=repo.env, cwd=repo.path, stdin=raw.encode()).strip()
    repo.git("update-ref", "refs/heads/main", new)
    return new


REWRAPS = {
    "extra-sha256-header": (
        "the commit carries 2 signature headers (gpgsig, gpgsig-sha256); exactly one is accepted"
    ),
    "second-gpgsig-header": (
        "the commit carries 2 signature headers (gpgsig, gpgsig); exactly one is accepted"
    ),
    "only-sha256-header": (
        "the commit carries a gpgsig-sha256 signature header, which a sha1 repository does not check"
    ),
}


@pytest.mark.parametrize("how", sorted(REWRAPS))
def test_a_signed_commit_rewrapped_with_other_signature_headers_is_rejected(
    how: str, tmp_path: Path, keyset: KeySet, policy_file: Path
) -> None:
    repo = GitRepo(tmp_path / "fleet")
    signed = repo.commit("release", {"clusters/a/redis.yaml": "1\n"}, sign=keyset.release)
    rewrapped = rewrap(repo, signed, how)
    assert rewrapped != signed
    assert repo.git("rev-parse", f"{rewrapped}^{{tree}}") == repo.git("rev-parse", f"{signed}^{{tree}}")
    if how == "extra-sha256-header":
        # Plain git checks only the header of the repository's hash algorithm: the new id verifies.
        run(
            ["git", "verify-commit", rewrapped],
            env={**repo.env, "GNUPGHOME": str(keyset.release.home)},
            cwd=repo.path,
        )

    result = verify_clone(repo.path, load_trust_policy(policy_file), tmp_path / "cache")
    judged = result.commits[-1]
    assert (result.verdict, judged.commit, judged.reason) == (Verdict.BAD_SIGNATURE, rewrapped, REWRAPS[how])
