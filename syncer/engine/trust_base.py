"""The base a new tip is judged from: revisions the fleet records, each used only once it verifies.

The clusters' sync states are plain ConfigMaps, and whoever can write one can write any commit id
into it, so a revision is never a base just because it is recorded. A recorded revision counts
only when the repository holds it and it verifies under the current trust policy itself, judged as
a tip would be (its signatures, path scopes and two-person path rules from the policy's ``since``,
or from a revision already verified that it descends from). Of the records that count, the fleet's
base is the newest revision every one of them descends from (their common ancestor), verified the
same way, not the newest any one record claims. This replica's own revision (the one in force,
which it judged itself, or the one its cache last synced) may be newer and is then the base. A
revision that is not an ancestor of the tip (a rewrite the policy allows) stands for its fork
point with the tip.

A record that does not count is an ``IgnoredBase`` with the reason, told to the caller; the checks
then start earlier (at last at the policy's ``since``, or the root): never a narrower range.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from syncer.config import TrustPolicy, VerifyMode
from syncer.errors import SourceError, SyncerError

REMEMBERED = 64  # verdicts kept (the newest); an older revision is judged again if it comes back

if TYPE_CHECKING:
    from syncer.source import GitSource


@dataclass(frozen=True)
class IgnoredBase:
    """A recorded revision not used as the base of the checks: who records it and why not."""

    revision: str
    recorded_by: str
    reason: str

    @property
    def message(self) -> str:
        return f"{self.recorded_by} {self.revision[:12]} is not used as the base of the checks: {self.reason}"


@dataclass(frozen=True)
class Base:
    """Where a tip's checks start (``""``: the trust policy's ``since``, or the root) and the
    recorded revisions left out, with why."""

    revision: str
    ignored: tuple[IgnoredBase, ...] = ()


class BaseJudge:
    """Chooses the base of each new tip's checks; remembers which revisions verified (per policy)."""

    def __init__(self, source: GitSource, policy: TrustPolicy, mode: VerifyMode | None, timeout: float):
        self.source = source
        self.policy = policy
        self.mode = mode
        self.timeout = timeout
        self._verdicts: dict[str, str] = {}  # revision -> "" when it verifies, else why it does not

    def trust(self, revision: str) -> None:
        """``revision`` was verified from a verified base (an accepted tip): it verifies."""
        self._remember(revision, "")

    def _remember(self, revision: str, why: str) -> None:
        self._verdicts.pop(revision, None)
        self._verdicts[revision] = why
        while len(self._verdicts) > REMEMBERED:
            del self._verdicts[next(iter(self._verdicts))]

    def choose(self, tip: str, own: Mapping[str, str], recorded: Mapping[str, str]) -> Base:
        """The base of ``tip``'s checks. ``own`` and ``recorded`` map revisions to who has them:
        this replica's own (the newest that verifies may be the base) and the fleet's records (their
        common ancestor may be). A SourceError when git fails."""
        ignored: list[IgnoredBase] = []
        usable: list[str] = []
        for revision, who in recorded.items():
            candidate, why = self._candidate(tip, revision)
            if why:
                ignored.append(IgnoredBase(revision, who, why))
            elif candidate:
                usable.append(candidate)
        fleet = self.source.common_ancestor(list(dict.fromkeys(usable)))
        why = self._why_not(fleet) if fleet else ""
        if why:
            ignored.append(IgnoredBase(fleet, "the common ancestor of what the clusters record", why))
            fleet = ""
        bases = [fleet]
        for revision, who in own.items():
            candidate, why = self._candidate(tip, revision)
            if why:
                ignored.append(IgnoredBase(revision, who, why))
            bases.append("" if why else candidate)
        return Base(self.newest(bases), tuple(ignored))

    def newest(self, revisions: list[str]) -> str:
        """Of revisions on one line of history, the newest (``""`` when there is none)."""
        newest = ""
        for revision in dict.fromkeys(r for r in revisions if r):
            if not newest or self.source.is_ancestor(newest, revision):
                newest = revision
        return newest

    def _candidate(self, tip: str, revision: str) -> tuple[str, str]:
        """The revision ``revision`` stands for as a base of ``tip`` (itself, or its fork point with
        the tip) and ``""``, or ``""`` and why it cannot be one."""
        if not revision:
            return "", ""
        if not self.source.contains(revision):
            return "", "the repository does not hold this commit"
        if not self.source.is_ancestor(revision, tip):
            revision = self.source.fork_point(revision, tip)
            if not revision:
                return "", f"it shares no history with the tip {tip[:12]}"
        return revision, self._why_not(revision)

    def _why_not(self, revision: str) -> str:
        """``""`` when ``revision`` verifies as a tip would (from the policy's ``since``, or from the
        newest revision already verified that it descends from), else why not."""
        if revision in self._verdicts:
            return self._verdicts[revision]
        start = self.policy.since
        if revision == start:
            return ""
        if start and self.source.contains(start) and self.source.is_ancestor(revision, start):
            return f"it is older than the trust policy's since ({start[:12]}), where the checks start"
        from syncer.verify import VerifyOptions, verify_revision

        verified = [r for r, why in self._verdicts.items() if not why]
        anchor = self.newest([r for r in verified if self.source.is_ancestor(r, revision)])
        options = VerifyOptions(revision=revision, since=anchor, mode=self.mode, timeout=self.timeout)
        try:
            verify_revision(self.source.git_dir, self.policy, options).require_trusted()
            why = ""
        except SourceError as err:
            return f"it cannot be verified now: {err}"  # git failed: asked again next time
        except SyncerError as err:
            why = f"it does not verify itself: {err}"
        self._remember(revision, why)
        return why
