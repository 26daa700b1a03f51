"""The two-person rule: changes to selected paths need good signatures of several distinct signers.

Judged over the commits a revision adds (reachable from the tip and not from the last verified
revision; with none, the tip's whole history), in either mode: a signer counts when one of those
commits carries its good signature and its scope covers every changed path the rule selects. So a
change signed by one person and an approving signed merge commit by another satisfy a rule of two;
the same person signing twice does not, nor does a signer whose scope does not reach those paths.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from syncer.config import Signer
from syncer.config.two_person import TwoPersonRule
from syncer.verify.scope import outside


class _Repository(Protocol):
    def strict_range(self, tip: str, since: str) -> list[str]: ...

    def trusted_signer(self, sha: str) -> Signer | None: ...

    def changed(self, since: str, tip: str) -> frozenset[str]: ...


@dataclass(frozen=True)
class ApprovalVerdict:
    """One two-person rule on one revision: the changed paths it selects (empty: not concerned), the
    distinct signers that count, and how many it needs."""

    rule: str
    paths: tuple[str, ...]
    signers: tuple[str, ...]
    required: int

    @property
    def satisfied(self) -> bool:
        return not self.paths or len(self.signers) >= self.required

    @property
    def reason(self) -> str:
        shown = ", ".join(self.paths[:5]) + (
            f" and {len(self.paths) - 5} more" if len(self.paths) > 5 else ""
        )
        found = f"{len(self.signers)} ({', '.join(self.signers)})" if self.signers else "none"
        return (
            f"two-person rule {self.rule}: the revision changes {shown}, which needs good signatures of"
            f" {self.required} distinct signers covering it in the commits it adds; found {found}"
        )


def judge_two_person(
    repo: _Repository, rules: tuple[TwoPersonRule, ...], tip: str, since: str
) -> tuple[ApprovalVerdict, ...]:
    """A verdict per rule; the range is walked and its signatures checked only when a rule applies."""
    if not rules:
        return ()
    changed = repo.changed(since, tip)
    selected = {rule.name: tuple(sorted(set(changed) - set(outside(changed, rule.paths)))) for rule in rules}
    if not any(selected.values()):
        return tuple(ApprovalVerdict(r.name, (), (), r.signers) for r in rules)
    signers: dict[str, Signer] = {}
    for sha in repo.strict_range(tip, since):
        signer = repo.trusted_signer(sha)
        if signer is not None:
            signers.setdefault(signer.name, signer)
    verdicts = []
    for rule in rules:
        paths = selected[rule.name]
        counted = tuple(sorted(name for name, s in signers.items() if not outside(paths, s.paths)))
        verdicts.append(ApprovalVerdict(rule.name, paths, counted if paths else (), rule.signers))
    return tuple(verdicts)
