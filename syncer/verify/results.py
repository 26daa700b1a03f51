"""Values of verification: the options, one verdict per commit, and the overall result."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from syncer.config import VerifyMode
from syncer.errors import VerificationError
from syncer.verify.two_person import ApprovalVerdict


class Verdict(StrEnum):
    TRUSTED = "trusted"
    UNSIGNED = "unsigned"
    UNKNOWN_KEY = "unknown-key"
    BAD_SIGNATURE = "bad-signature"
    EXPIRED_KEY = "expired-key"
    REVOKED_KEY = "revoked-key"
    OUT_OF_SCOPE = "out-of-scope"
    NOT_APPROVED = "not-approved"


@dataclass(frozen=True)
class VerifyOptions:
    """What to verify: ``revision`` (the new tip), ``since`` (the last verified revision, ``""`` for
    none), the mode (``None``: the policy's), and the deadline in seconds of each git or gpg call."""

    revision: str = "HEAD"
    since: str = ""
    mode: VerifyMode | None = None
    timeout: float = 30.0


@dataclass(frozen=True)
class CommitVerdict:
    """The judgement of one commit. ``signer`` is the policy's signer name when the key is one of the
    policy's; ``fingerprint`` is the key that made the signature, as git reports it."""

    commit: str
    subject: str
    verdict: Verdict
    reason: str
    signer: str = ""
    fingerprint: str = ""
    key_kind: str = ""
    out_of_scope: tuple[str, ...] = ()

    @property
    def trusted(self) -> bool:
        return self.verdict is Verdict.TRUSTED

    @property
    def short(self) -> str:
        return self.commit[:12]


@dataclass(frozen=True)
class VerificationResult:
    """Every commit judged (oldest first) and the overall verdict: trusted only if all are."""

    revision: str
    mode: VerifyMode
    since: str
    commits: tuple[CommitVerdict, ...]
    approvals: tuple[ApprovalVerdict, ...] = ()

    @property
    def trusted(self) -> bool:
        commits = bool(self.commits) and all(c.trusted for c in self.commits)
        return commits and all(a.satisfied for a in self.approvals)

    @property
    def unapproved(self) -> ApprovalVerdict | None:
        """The first two-person rule the revision does not satisfy."""
        return next((a for a in self.approvals if not a.satisfied), None)

    @property
    def verdict(self) -> Verdict:
        failed = self.first_failure
        if failed is not None:
            return failed.verdict
        return Verdict.NOT_APPROVED if self.unapproved is not None else Verdict.TRUSTED

    @property
    def first_failure(self) -> CommitVerdict | None:
        return next((c for c in self.commits if not c.trusted), None)

    @property
    def failure(self) -> str:
        """``""`` when trusted, else the first failing commit and why."""
        failed = self.first_failure
        if failed is None:
            unapproved = self.unapproved
            return f"{Verdict.NOT_APPROVED}: {unapproved.reason}" if unapproved is not None else ""
        return f"commit {failed.short} ({failed.subject!r}) is not trusted: {failed.verdict}: {failed.reason}"

    def require_trusted(self) -> VerificationResult:
        """``self`` when trusted; otherwise a ``VerificationError`` naming the commit and the reason."""
        if not self.trusted:
            raise VerificationError(
                f"revision {self.revision} is not trusted ({self.mode} mode): {self.failure}",
                verdict=str(self.verdict),
            )
        return self
