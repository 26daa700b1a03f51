"""The two-person rule: changes to selected paths need good signatures of several distinct signers.

Judged over the commits a revision adds (reachable from the tip and not from the last verified
revision; with none, the tip's whole history), in either mode: a signer counts when one of those
commits carries its good signature and its scope covers every changed path the rule selects. So a
change signed by one person and an approving signed merge commit by another satisfy a rule of two;
the same person signing twice does not, nor does a signer whose scope does not reach those paths.

A rule keyed on clusters needs the rendered fleets, which verification never reads: the engine
names the clusters whose desired objects the revision changes (``judge_cluster_rules``), and a signer
then counts only when its scope covers every path the revision changes.
"""

from __future__ import annotations

from collections.abc import Mapping
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
    clusters: tuple[str, ...] = ()

    @property
    def satisfied(self) -> bool:
        return not (self.paths or self.clusters) or len(self.signers) >= self.required

    @property
    def reason(self) -> str:
        def listed(items: tuple[str, ...]) -> str:
            return ", ".join(items[:5]) + (f" and {len(items) - 5} more" if len(items) > 5 else "")

        found = f"{len(self.signers)} ({', '.join(self.signers)})" if self.signers else "none"
        if self.clusters:
            return (
                f"two-person rule {self.rule}: the revision changes clusters {listed(self.clusters)}, which"
                f" needs good signatures of {self.required} distinct signers covering every path it"
                f" changes ({listed(self.paths)}) in the commits it adds; found {found}"
            )
        return (
            f"two-person rule {self.rule}: the revision changes {listed(self.paths)}, which needs good"
            f" signatures of {self.required} distinct signers covering it in the commits it adds;"
            f" found {found}"
        )


def judge_two_person(
    repo: _Repository, rules: tuple[TwoPersonRule, ...], tip: str, since: str
) -> tuple[ApprovalVerdict, ...]:
    """A verdict per path rule; the range is walked and its signatures checked only when a rule
    applies. Cluster rules are judged by ``judge_cluster_rules`` once the fleet is rendered."""
    rules = tuple(r for r in rules if r.clusters is None)
    if not rules:
        return ()
    changed = repo.changed(since, tip)
    selected = {rule.name: tuple(sorted(set(changed) - set(outside(changed, rule.paths)))) for rule in rules}
    if not any(selected.values()):
        return tuple(ApprovalVerdict(r.name, (), (), r.signers) for r in rules)
    signers = _signers(repo, tip, since)
    verdicts = []
    for rule in rules:
        paths = selected[rule.name]
        counted = tuple(sorted(name for name, s in signers.items() if not outside(paths, s.paths)))
        verdicts.append(ApprovalVerdict(rule.name, paths, counted if paths else (), rule.signers))
    return tuple(verdicts)


def _signers(repo: _Repository, tip: str, since: str) -> dict[str, Signer]:
    """The distinct signers with a good signature on a commit the revision adds."""
    signers: dict[str, Signer] = {}
    for sha in repo.strict_range(tip, since):
        signer = repo.trusted_signer(sha)
        if signer is not None:
            signers.setdefault(signer.name, signer)
    return signers


def judge_cluster_rules(
    repo: _Repository,
    rules: tuple[TwoPersonRule, ...],
    concerned: Mapping[str, tuple[str, ...]],
    tip: str,
    since: str,
) -> tuple[ApprovalVerdict, ...]:
    """A verdict per cluster rule; ``concerned`` names, per rule, the clusters it selects whose desired
    objects the revision changes (a rule not named is not concerned). A signer counts when its scope
    covers every path the revision changes."""
    verdicts = []
    signers: dict[str, Signer] | None = None
    changed: tuple[str, ...] = ()
    for rule in (r for r in rules if r.clusters is not None):
        clusters = tuple(concerned.get(rule.name, ()))
        if not clusters:
            verdicts.append(ApprovalVerdict(rule.name, (), (), rule.signers))
            continue
        if signers is None:
            signers = _signers(repo, tip, since)
            changed = tuple(sorted(repo.changed(since, tip)))
        counted = tuple(sorted(name for name, s in signers.items() if not outside(changed, s.paths)))
        verdicts.append(ApprovalVerdict(rule.name, changed, counted, rule.signers, clusters))
    return tuple(verdicts)
