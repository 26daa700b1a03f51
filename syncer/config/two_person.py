"""The two-person rule of the trust policy: paths whose changes need signatures of several people.

``twoPersonRules`` in the trust policy names paths (globs, like a signer's scope) or clusters (a label
selector over fleet.yaml's cluster labels); a revision that changes any of those paths, or any
desired object of those clusters, is trusted only when the commits it adds carry good signatures of
at least ``signers`` distinct signers of the policy whose scopes cover those changes (for a cluster
rule: every path the revision changes), e.g. a signed change and an approving signed merge commit.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from syncer.config.loading import Fields
from syncer.config.shapes import parse_selector
from syncer.domain.selectors import LabelSelector
from syncer.errors import ConfigError

_NAME = re.compile(r"^[a-z0-9]([-a-z0-9.]{0,61}[a-z0-9])?$")


@dataclass(frozen=True)
class TwoPersonRule:
    """Changes to ``paths`` (or, with ``clusters``, to the desired objects of the clusters it selects)
    need good signatures of at least ``signers`` distinct signers. A rule has paths or clusters."""

    name: str
    paths: tuple[str, ...] = ()
    signers: int = 2
    clusters: LabelSelector | None = None


def parse_two_person_rules(top: Fields) -> tuple[TwoPersonRule, ...]:
    rules = []
    for index in range(len(top.items("twoPersonRules"))):
        fields = top.child("twoPersonRules", index)
        fields.reject_unknown({"name", "paths", "clusters", "signers"})
        name = fields.string("name")
        if not _NAME.match(name):
            raise fields.error("name", f"{name!r} must be lower-case letters, digits, '-' and '.'")
        paths = fields.strings("paths", ())
        clusters = parse_selector(fields.child("clusters")) if fields.has("clusters") else None
        if not paths and clusters is None:
            raise fields.error(
                "paths", "is required (or clusters): the globs whose changes need several signers"
            )
        if paths and clusters is not None:
            raise fields.error("clusters", "give paths or clusters, not both (two rules can do both)")
        for pattern in paths:
            parts = pattern.split("/")
            if pattern.startswith("/") or ".." in parts or "" in parts:
                raise fields.error("paths", f"{pattern!r} must be relative to the repository root")
        count = fields.raw("signers")
        count = 2 if count is None else count
        if isinstance(count, bool) or not isinstance(count, int) or count < 2:
            raise fields.error("signers", f"must be a whole number of at least 2, not {count!r}")
        rules.append(TwoPersonRule(name, paths, count, clusters))
    if len({r.name for r in rules}) != len(rules):
        raise ConfigError(f"{top.located('twoPersonRules')}: twoPersonRules: rule names must be unique")
    return tuple(rules)
