"""The trust policy's two-person rules keyed on clusters, judged once a revision is rendered.

Verification never reads the rendered fleet, so a rule that selects clusters by label is judged
here, after the manifests: the clusters it selects (by their labels at the tip or at the base) whose
desired objects differ between the base revision (the one the verification judged from) and the tip
concern it, and then the commits the revision adds must carry good signatures of enough distinct
signers covering every path it changes (``syncer.verify.approve_clusters``).
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from syncer.config import TrustPolicy
from syncer.config.two_person import TwoPersonRule
from syncer.domain.objects import ClusterManifests, DesiredFleet
from syncer.errors import ManifestError, VerificationError
from syncer.manifests import LoadOptions, load_fleet

if TYPE_CHECKING:
    from syncer.source import GitSource
    from syncer.verify import VerificationResult


def _differs(tip: ClusterManifests | None, base: ClusterManifests | None) -> bool:
    if tip is None or base is None:
        return True
    return tip.content_hash != base.content_hash or dict(tip.labels) != dict(base.labels)


def changed_clusters(
    rules: tuple[TwoPersonRule, ...], tip: DesiredFleet, base: DesiredFleet | None
) -> dict[str, tuple[str, ...]]:
    """Per cluster rule, the clusters it selects (labels at the tip or at the base) that the revision
    changes: objects added, changed or removed, labels changed, the cluster added or dropped. Without
    a base (the first revision, or a base that no longer renders) every selected cluster counts."""
    names = sorted(set(tip.clusters) | set(base.clusters if base else ()))
    found: dict[str, tuple[str, ...]] = {}
    for rule in rules:
        if rule.clusters is None:
            continue
        selector = rule.clusters
        hit = []
        for name in names:
            now = tip.clusters.get(name)
            before = base.clusters.get(name) if base is not None else None
            selected = any(c is not None and selector.matches(c.labels) for c in (now, before))
            if selected and _differs(now, before):
                hit.append(name)
        if hit:
            found[rule.name] = tuple(hit)
    return found


def base_fleet(source: GitSource, since: str, load: LoadOptions) -> DesiredFleet | None:
    """The fleet of the base revision, or None when there is none or it does not render."""
    if not since:
        return None
    try:
        return load_fleet(source.checkout(since).tree_path, since, load)
    except ManifestError:
        return None


def require_cluster_approvals(
    source: GitSource,
    policy: TrustPolicy,
    fleet: DesiredFleet,
    result: VerificationResult,
    *,
    load: LoadOptions,
    timeout: float,
) -> VerificationResult:
    """``result`` with the cluster rules' verdicts added; VerificationError (``not-approved``) when a
    rule that the revision concerns is not satisfied."""
    rules = tuple(r for r in policy.two_person if r.clusters is not None)
    if not rules:
        return result
    from syncer.verify import VerifyOptions, approve_clusters

    concerned = changed_clusters(rules, fleet, base_fleet(source, result.since, load))
    verify = VerifyOptions(revision=result.revision, since=result.since, mode=result.mode, timeout=timeout)
    approvals = approve_clusters(source.git_dir, policy, concerned, verify)
    judged = replace(result, approvals=result.approvals + approvals)
    missing = judged.unapproved
    if missing is not None:
        raise VerificationError(f"{judged.verdict}: {missing.reason}", verdict=str(judged.verdict))
    return judged
