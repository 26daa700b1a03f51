"""Judging a revision against the trust policy: which commits to check, their signatures, their paths.

``head`` mode judges the tip commit; its signer must cover every path changed since ``since`` (or,
with no ``since``, what the tip changes against each of its parents). ``strict`` mode judges every
commit reachable from the tip and not from ``since``, merges and both sides of them included; each
commit's signer must cover what that commit changes (for merges, the paths the merge itself decides,
see ``scope.merge_paths``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from syncer.config import KeyKind, Signer, TrustPolicy, VerifyMode
from syncer.errors import SourceError, VerificationError
from syncer.verify.environment import PinnedGit
from syncer.verify.model import CommitVerdict, Verdict, VerificationResult, VerifyOptions
from syncer.verify.scope import merge_paths, outside
from syncer.verify.status import Outcome, SignatureCheck, SignatureKind, parse_gpg_status, parse_ssh_check
from syncer.verify.status import signature_kind as kind_of

_LISTED_PATHS = 5
_OUTCOME_VERDICT = {
    Outcome.UNKNOWN_KEY: Verdict.UNKNOWN_KEY,
    Outcome.EXPIRED_KEY: Verdict.EXPIRED_KEY,
    Outcome.REVOKED_KEY: Verdict.REVOKED_KEY,
    Outcome.BAD: Verdict.BAD_SIGNATURE,
    Outcome.ERROR: Verdict.BAD_SIGNATURE,
}


@dataclass(frozen=True)
class _Commit:
    sha: str
    parents: tuple[str, ...]
    subject: str
    signature: SignatureKind


def verify_revision(
    repo: Path, policy: TrustPolicy, options: VerifyOptions | None = None
) -> VerificationResult:
    """Verify ``options.revision`` of the git repository at ``repo`` under ``policy``.

    Returns the verdict of each commit; raises ``SourceError`` when git cannot read the revisions,
    ``ConfigError`` when the policy's keys do not load, and ``VerificationError`` when ``since`` is
    not an ancestor of the revision (history was rewritten).
    """
    options = options or VerifyOptions()
    mode = options.mode or policy.mode
    with PinnedGit(repo, policy, timeout=options.timeout) as git:
        judge = _Judge(git, policy, mode)
        tip = judge.resolve(options.revision)
        since = judge.resolve(options.since) if options.since else ""
        if since and git.git(["merge-base", "--is-ancestor", since, tip], check=False).returncode != 0:
            raise VerificationError(
                f"history was rewritten: {since} (the last verified revision) is not an ancestor of {tip}"
            )
        shas = [tip]
        if mode is VerifyMode.STRICT:
            listed = git.git(
                ["rev-list", "--reverse", "--topo-order", tip, *([f"^{since}"] if since else [])]
            )
            shas = listed.stdout.decode().split() or [tip]
        commits = judge.read_commits(shas)
        verdicts = tuple(judge.commit(c, since=since) for c in commits)
    return VerificationResult(revision=tip, mode=mode, since=since, commits=verdicts)


class _Judge:
    def __init__(self, git: PinnedGit, policy: TrustPolicy, mode: VerifyMode) -> None:
        self.git = git
        self.policy = policy
        self.mode = mode

    def resolve(self, revision: str) -> str:
        done = self.git.git(
            ["rev-parse", "--verify", "--end-of-options", f"{revision}^{{commit}}"], check=False
        )
        if done.returncode != 0:
            raise SourceError(f"revision {revision!r} is not a commit of {self.git.repo}")
        return done.stdout.decode().strip()

    def read_commits(self, shas: list[str]) -> list[_Commit]:
        """The raw objects of ``shas`` through one ``git cat-file --batch``."""
        out = self.git.git(["cat-file", "--batch"], stdin="".join(f"{s}\n" for s in shas).encode()).stdout
        commits: list[_Commit] = []
        pos = 0
        for sha in shas:
            end = out.index(b"\n", pos)
            header = out[pos:end].split()
            size = int(header[2])
            raw = out[end + 1 : end + 1 + size]
            pos = end + 1 + size + 1
            head, _, message = raw.partition(b"\n\n")
            parents = tuple(
                line.split()[1].decode() for line in head.split(b"\n") if line.startswith(b"parent ")
            )
            subject = message.decode(errors="replace").strip().split("\n", 1)[0] if message else ""
            commits.append(_Commit(sha=sha, parents=parents, subject=subject, signature=kind_of(raw)))
        return commits

    def commit(self, commit: _Commit, *, since: str) -> CommitVerdict:
        def verdict(
            v: Verdict, reason: str, check: SignatureCheck | None = None, out: tuple[str, ...] = ()
        ) -> CommitVerdict:
            return CommitVerdict(
                commit=commit.sha,
                subject=commit.subject,
                verdict=v,
                reason=reason,
                signer=name,
                fingerprint=check.fingerprint if check else "",
                key_kind=commit.signature.value if check else "",
                out_of_scope=out,
            )

        name = ""
        if commit.signature is SignatureKind.NONE:
            return verdict(Verdict.UNSIGNED, "the commit has no signature")
        if commit.signature is SignatureKind.X509:
            return verdict(Verdict.UNKNOWN_KEY, "X.509 signatures are not accepted by the trust policy")
        check = self._check_signature(commit)
        kind = KeyKind.OPENPGP if commit.signature is SignatureKind.OPENPGP else KeyKind.SSH
        signer = self.policy.signer_for(kind, check.fingerprint) if check.fingerprint else None
        name = signer.name if signer else ""
        if check.outcome is not Outcome.GOOD:
            reason = check.detail
            if check.outcome in {Outcome.EXPIRED_KEY, Outcome.REVOKED_KEY}:
                state = "has expired" if check.outcome is Outcome.EXPIRED_KEY else "is revoked"
                reason = (
                    f"signed with {kind} key {check.fingerprint} ({name or check.identity}), which {state}"
                )
            return verdict(_OUTCOME_VERDICT[check.outcome], reason, check)
        if signer is None or (kind is KeyKind.SSH and check.identity != signer.name):
            return verdict(
                Verdict.UNKNOWN_KEY,
                f"signed with {kind} key {check.fingerprint}, which no signer of the policy holds",
                check,
            )
        out = self._out_of_scope(commit, signer, since=since)
        if out:
            listed = ", ".join(out[:_LISTED_PATHS]) + (
                f" and {len(out) - _LISTED_PATHS} more" if len(out) > _LISTED_PATHS else ""
            )
            reason = (
                f"signer {signer.name!r} may change only {', '.join(signer.paths)}, but this changes {listed}"
            )
            return verdict(Verdict.OUT_OF_SCOPE, reason, check, out)
        return verdict(Verdict.TRUSTED, f"good signature by {signer.name}", check)

    def _check_signature(self, commit: _Commit) -> SignatureCheck:
        if commit.signature is SignatureKind.OPENPGP:
            done = self.git.git(["verify-commit", "--raw", commit.sha], check=False)
            return parse_gpg_status(done.stderr.decode(errors="replace"))
        done = self.git.git(["log", "-1", "--no-walk", "--format=%G?%x00%GF%x00%GS", commit.sha], check=False)
        return parse_ssh_check(done.stdout.decode(errors="replace"))

    def _out_of_scope(self, commit: _Commit, signer: Signer, *, since: str) -> tuple[str, ...]:
        if signer.unrestricted:
            return ()
        if self.mode is VerifyMode.HEAD and since:
            return outside(self._diff(since, commit.sha), signer.paths)
        if not commit.parents:
            return outside(self._files(commit.sha), signer.paths)
        against = [self._diff(parent, commit.sha) for parent in commit.parents]
        if len(against) == 1 or self.mode is VerifyMode.HEAD:
            return outside(frozenset().union(*against), signer.paths)
        return outside(merge_paths(against, self._changed_since_base(commit.parents)), signer.paths)

    def _changed_since_base(self, parents: tuple[str, ...]) -> list[frozenset[str]]:
        flag = ["--all"] if len(parents) == 2 else ["--octopus"]
        done = self.git.git(["merge-base", *flag, *parents], check=False)
        bases = done.stdout.decode().split() if done.returncode == 0 else []
        if not bases:
            return [self._files(p) for p in parents]
        return [frozenset().union(*(self._diff(b, p) for b in bases)) for p in parents]

    def _diff(self, old: str, new: str) -> frozenset[str]:
        out = self.git.git(["diff-tree", "-r", "-z", "--no-renames", "--name-only", old, new]).stdout
        return frozenset(p.decode(errors="surrogateescape") for p in out.split(b"\0") if p)

    def _files(self, commit: str) -> frozenset[str]:
        out = self.git.git(["ls-tree", "-r", "-z", "--name-only", commit]).stdout
        return frozenset(p.decode(errors="surrogateescape") for p in out.split(b"\0") if p)
