"""Judging a revision against the trust policy: which commits to check, their signatures, their paths.

``head`` mode judges the tip commit; its signer must cover every path changed since ``since``, or,
with no ``since``, every path of the tree outside its scopes must be as a signer covering it last
signed it (see ``vouch``). ``strict`` mode judges every commit reachable from the tip and not from
``since``, merges and both sides of them included; each commit's signer must cover what that commit
changes (for merges, the paths the merge itself decides, see ``scope.merge_paths``). A shallow
history, or a range git cannot walk, is an error in strict mode, never "trusted".

Git's exit status is part of every answer: a git process that fails is a ``SourceError`` (or, for
the range of strict mode, a ``VerificationError`` saying the history is incomplete).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from syncer.config import KeyKind, Signer, TrustPolicy, VerifyMode
from syncer.errors import HistoryRewritten, SourceError, VerificationError
from syncer.verify.environment import PinnedGit
from syncer.verify.results import CommitVerdict, Verdict, VerificationResult, VerifyOptions
from syncer.verify.scope import merge_paths, outside
from syncer.verify.status import (
    SignatureCheck,
    SignatureKind,
    SignatureOutcome,
    parse_gpg_status,
    parse_ssh_check,
    signature_header_problem,
)
from syncer.verify.status import signature_kind as kind_of
from syncer.verify.two_person import ApprovalVerdict, judge_cluster_rules, judge_two_person
from syncer.verify.vouch import unvouched

_LISTED_PATHS = 5
_FULL_SHA = re.compile(r"^[0-9a-f]{40}(?:[0-9a-f]{24})?$")
_OUTCOME_VERDICT = {
    SignatureOutcome.UNKNOWN_KEY: Verdict.UNKNOWN_KEY,
    SignatureOutcome.EXPIRED_KEY: Verdict.EXPIRED_KEY,
    SignatureOutcome.REVOKED_KEY: Verdict.REVOKED_KEY,
    SignatureOutcome.BAD: Verdict.BAD_SIGNATURE,
    SignatureOutcome.ERROR: Verdict.BAD_SIGNATURE,
}


@dataclass(frozen=True)
class _Commit:
    sha: str
    parents: tuple[str, ...]
    subject: str
    signature: SignatureKind
    header_problem: str = ""


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
        if mode is VerifyMode.STRICT:
            judge.require_deep(tip)
        start = options.since or policy.since  # no base given: the policy's start (or the root)
        since = judge.resolve_since(start, tip) if start else ""
        if since and git.git(["merge-base", "--is-ancestor", since, tip], accept=(0, 1)).returncode != 0:
            judge.require_walkable(tip)
            judge.require_deep(tip, since)
            raise HistoryRewritten(
                f"history was rewritten: {since} (the last verified revision) is not an ancestor of {tip}",
                revision=tip,
                base=since,
            )
        shas = judge.strict_range(tip, since) if mode is VerifyMode.STRICT else [tip]
        commits = judge.read_commits(shas)
        verdicts = tuple(judge.commit(c, since=since) for c in commits)
        approvals = judge_two_person(judge, policy.two_person, tip, since)
    return VerificationResult(revision=tip, mode=mode, since=since, commits=verdicts, approvals=approvals)


def approve_clusters(
    repo: Path, policy: TrustPolicy, concerned: Mapping[str, tuple[str, ...]], options: VerifyOptions
) -> tuple[ApprovalVerdict, ...]:
    """The trust policy's cluster-keyed two-person rules on ``options.revision`` (since
    ``options.since``), given the clusters each rule selects that the revision changes."""
    mode = options.mode or policy.mode
    with PinnedGit(repo, policy, timeout=options.timeout) as git:
        judge = _Judge(git, policy, mode)
        tip = judge.resolve(options.revision)
        start = options.since or policy.since
        since = judge.resolve_since(start, tip) if start else ""
        return judge_cluster_rules(judge, policy.two_person, concerned, tip, since)


class _Judge:
    def __init__(self, git: PinnedGit, policy: TrustPolicy, mode: VerifyMode) -> None:
        self.git = git
        self.policy = policy
        self.mode = mode
        self._object_format = ""

    def resolve(self, revision: str) -> str:
        if revision.startswith("-"):
            raise SourceError(f"revision {revision!r} starts with '-': refusing it")
        done = self.git.git(
            ["rev-parse", "--verify", "--end-of-options", f"{revision}^{{commit}}"], accept=range(256)
        )
        if done.returncode != 0:
            raise SourceError(f"revision {revision!r} is not a commit of {self.git.repo}")
        return done.stdout.decode().strip()

    def resolve_since(self, since: str, tip: str) -> str:
        """The last verified revision; one the repository does not hold (a full commit id) means the
        branch no longer contains it: its history was rewritten."""
        if _FULL_SHA.match(since):
            held = self.git.git(["cat-file", "-e", f"{since}^{{commit}}"], accept=range(256))
            if held.returncode != 0:
                self.require_deep(tip, since)
                raise HistoryRewritten(
                    f"history was rewritten: {since} (the last verified revision) is not in the history "
                    f"of {tip}",
                    revision=tip,
                    base=since,
                )
        return self.resolve(since)

    @property
    def object_format(self) -> str:
        if not self._object_format:
            done = self.git.git(["rev-parse", "--show-object-format"])
            self._object_format = done.stdout.decode().strip() or "sha1"
        return self._object_format

    def require_walkable(self, tip: str) -> None:
        """A ``VerificationError`` when git cannot walk the whole history of ``tip`` (git answers
        "not an ancestor" when an object on the way is missing)."""
        done = self.git.git(["rev-list", "--count", tip], accept=range(256))
        if done.returncode != 0:
            detail = done.stderr.decode(errors="replace").strip().splitlines()
            raise VerificationError(
                f"cannot judge {tip}: git cannot walk its history "
                f"({detail[-1] if detail else f'exit {done.returncode}'})",
                verdict="incomplete-history",
            )

    def require_deep(self, tip: str, since: str = "") -> None:
        """An ``incomplete-history`` ``VerificationError`` when the repository is shallow: strict mode
        cannot walk the range of new commits whole, and whether ``since`` (when given: it was not
        found below ``tip``) was rewritten away or lies below the boundary cannot be told."""
        shallow = self.git.git(["rev-parse", "--is-shallow-repository"]).stdout.decode().strip()
        if shallow != "true":
            return
        if since:
            raise VerificationError(
                f"cannot judge {tip} against {since}: the repository's history is shallow (commits below "
                "its boundary are missing), so whether it descends from that revision cannot be told",
                verdict="incomplete-history",
            )
        raise VerificationError(
            f"strict mode cannot judge {tip}: the repository's history is shallow (commits below its "
            "boundary are missing), so the range of new commits cannot be walked whole",
            verdict="incomplete-history",
        )

    def strict_range(self, tip: str, since: str) -> list[str]:
        """Every commit reachable from ``tip`` and not from ``since``, oldest first; a
        ``VerificationError`` when the history cannot be walked whole (shallow, or objects missing)."""
        self.require_deep(tip)
        done = self.git.git(
            ["rev-list", "--reverse", "--topo-order", tip, *([f"^{since}"] if since else [])],
            accept=range(256),
        )
        if done.returncode != 0:
            detail = done.stderr.decode(errors="replace").strip().splitlines()
            raise VerificationError(
                f"strict mode cannot judge {tip}: git cannot walk the history "
                f"({detail[-1] if detail else f'exit {done.returncode}'})",
                verdict="incomplete-history",
            )
        return done.stdout.decode().split() or [tip]

    def read_commits(self, shas: list[str]) -> list[_Commit]:
        """The raw objects of ``shas`` through one ``git cat-file --batch``."""
        out = self.git.git(["cat-file", "--batch"], stdin="".join(f"{s}\n" for s in shas).encode()).stdout
        commits: list[_Commit] = []
        pos = 0
        for sha in shas:
            end = out.find(b"\n", pos)
            header = out[pos:end].split() if end >= 0 else []
            if len(header) != 3 or header[1] != b"commit" or not header[2].isdigit():
                raise SourceError(f"commit {sha} is missing from {self.git.repo} (or is not a commit)")
            size = int(header[2])
            raw = out[end + 1 : end + 1 + size]
            pos = end + 1 + size + 1
            head, _, message = raw.partition(b"\n\n")
            parents = tuple(
                line.split()[1].decode() for line in head.split(b"\n") if line.startswith(b"parent ")
            )
            subject = message.decode(errors="replace").strip().split("\n", 1)[0] if message else ""
            problem = signature_header_problem(raw, self.object_format)
            commits.append(_Commit(sha, parents, subject, kind_of(raw), problem))
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
        if commit.header_problem:
            return verdict(Verdict.BAD_SIGNATURE, commit.header_problem)
        if commit.signature is SignatureKind.NONE:
            return verdict(Verdict.UNSIGNED, "the commit has no signature")
        if commit.signature is SignatureKind.X509:
            return verdict(Verdict.UNKNOWN_KEY, "X.509 signatures are not accepted by the trust policy")
        check, signer = self.signature(commit)
        kind = KeyKind.OPENPGP if commit.signature is SignatureKind.OPENPGP else KeyKind.SSH
        name = signer.name if signer else ""
        if check.outcome is not SignatureOutcome.GOOD:
            reason = check.detail
            if check.outcome in {SignatureOutcome.EXPIRED_KEY, SignatureOutcome.REVOKED_KEY}:
                state = "has expired" if check.outcome is SignatureOutcome.EXPIRED_KEY else "is revoked"
                reason = (
                    f"signed with {kind} key {check.fingerprint} ({name or check.identity}), which {state}"
                )
            return verdict(_OUTCOME_VERDICT[check.outcome], reason, check)
        if signer is None:
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
            changes = (
                f"with no verified base revision {listed} differ(s) from what a signer covering them signed"
                if self.mode is VerifyMode.HEAD and not since
                else f"this changes {listed}"
            )
            reason = f"signer {signer.name!r} may change only {', '.join(signer.paths)}, but {changes}"
            return verdict(Verdict.OUT_OF_SCOPE, reason, check, out)
        return verdict(Verdict.TRUSTED, f"good signature by {signer.name}", check)

    def signature(self, commit: _Commit) -> tuple[SignatureCheck, Signer | None]:
        """What the signature check of ``commit`` said and the policy's signer of its key (None when
        no signer holds it). Only a check git itself finished (exit 0) can be good."""
        if commit.signature is SignatureKind.OPENPGP:
            done = self.git.git(["verify-commit", "--raw", commit.sha], accept=(0, 1))
            check = parse_gpg_status(done.stderr.decode(errors="replace"))
        else:
            done = self.git.git(["log", "-1", "--no-walk", "--format=%G?%x00%GF%x00%GS", commit.sha])
            check = parse_ssh_check(done.stdout.decode(errors="replace"))
        if check.outcome is SignatureOutcome.GOOD and done.returncode != 0:
            check = SignatureCheck(SignatureOutcome.ERROR, check.fingerprint, detail="git reported a failure")
        kind = KeyKind.OPENPGP if commit.signature is SignatureKind.OPENPGP else KeyKind.SSH
        signer = self.policy.signer_for(kind, check.fingerprint) if check.fingerprint else None
        if signer is not None and kind is KeyKind.SSH and check.identity != signer.name:
            signer = None
        return check, signer

    def trusted_signer(self, sha: str) -> Signer | None:
        """The policy's signer of ``sha`` when its signature is good (paths not considered)."""
        commit = self.read_commits([sha])[0]
        if commit.header_problem or commit.signature in {SignatureKind.NONE, SignatureKind.X509}:
            return None
        check, signer = self.signature(commit)
        return signer if check.outcome is SignatureOutcome.GOOD else None

    def _out_of_scope(self, commit: _Commit, signer: Signer, *, since: str) -> tuple[str, ...]:
        if signer.unrestricted:
            return ()
        if self.mode is VerifyMode.HEAD and since:
            return outside(self._diff(since, commit.sha), signer.paths)
        if self.mode is VerifyMode.HEAD:
            return unvouched(self, commit.sha, signer)
        if not commit.parents:
            return outside(self._files(commit.sha), signer.paths)
        against = [self._diff(parent, commit.sha) for parent in commit.parents]
        if len(against) == 1:
            return outside(frozenset().union(*against), signer.paths)
        return outside(merge_paths(against, self._changed_since_base(commit.parents)), signer.paths)

    def _changed_since_base(self, parents: tuple[str, ...]) -> list[frozenset[str]]:
        flag = ["--all"] if len(parents) == 2 else ["--octopus"]
        done = self.git.git(["merge-base", *flag, *parents], accept=(0, 1))
        bases = done.stdout.decode().split() if done.returncode == 0 else []
        if not bases:
            return [self._files(p) for p in parents]
        return [frozenset().union(*(self._diff(b, p) for b in bases)) for p in parents]

    def changed(self, since: str, tip: str) -> frozenset[str]:
        """The paths ``tip`` changes since ``since`` (every path of its tree when there is none)."""
        return self._diff(since, tip) if since else self._files(tip)

    def _diff(self, old: str, new: str) -> frozenset[str]:
        out = self.git.git(["diff-tree", "-r", "-z", "--no-renames", "--name-only", old, new]).stdout
        return frozenset(p.decode(errors="surrogateescape") for p in out.split(b"\0") if p)

    def _files(self, commit: str) -> frozenset[str]:
        return frozenset(self.blobs(commit))

    def blobs(self, commit: str) -> dict[str, str]:
        """Every path of ``commit``'s tree with the id of the object it holds."""
        out = self.git.git(["ls-tree", "-r", "-z", "--full-tree", commit]).stdout
        found: dict[str, str] = {}
        for entry in out.split(b"\0"):
            meta, tab, path = entry.partition(b"\t")
            if tab:
                found[path.decode(errors="surrogateescape")] = meta.split()[-1].decode()
        return found

    def ancestors(self, tip: str, limit: int) -> list[str]:
        """Up to ``limit`` ancestors of ``tip`` (not ``tip`` itself), newest first."""
        done = self.git.git(["rev-list", "--topo-order", f"--max-count={limit}", f"{tip}^@"])
        return done.stdout.decode().split()
