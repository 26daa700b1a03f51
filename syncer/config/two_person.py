"""The two-person rule of the trust policy: paths whose changes need signatures of several people.

``twoPersonRules`` in the trust policy names paths (globs, like a signer's scope); a revision that
changes any of them is trusted only when the commits it adds carry good signatures of at least
``signers`` distinct signers of the policy whose scopes cover those changes, e.g. a signed change and
an approving signed merge commit over it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from syncer.config.loading import Fields
from syncer.errors import ConfigError

_NAME = re.compile(r"^[a-z0-9]([-a-z0-9.]{0,61}[a-z0-9])?$")


@dataclass(frozen=True)
class TwoPersonRule:
    """Changes to ``paths`` need good signatures of at least ``signers`` distinct signers."""

    name: str
    paths: tuple[str, ...]
    signers: int = 2


def parse_two_person_rules(top: Fields) -> tuple[TwoPersonRule, ...]:
    rules = []
    for index in range(len(top.items("twoPersonRules"))):
        fields = top.child("twoPersonRules", index)
        fields.reject_unknown({"name", "paths", "signers"})
        name = fields.string("name")
        if not _NAME.match(name):
            raise fields.error("name", f"{name!r} must be lower-case letters, digits, '-' and '.'")
        paths = fields.strings("paths", ())
        if not paths:
            raise fields.error("paths", "is required: the globs whose changes need several signers")
        for pattern in paths:
            parts = pattern.split("/")
            if pattern.startswith("/") or ".." in parts or "" in parts:
                raise fields.error("paths", f"{pattern!r} must be relative to the repository root")
        count = fields.raw("signers")
        count = 2 if count is None else count
        if isinstance(count, bool) or not isinstance(count, int) or count < 2:
            raise fields.error("signers", f"must be a whole number of at least 2, not {count!r}")
        rules.append(TwoPersonRule(name, paths, count))
    if len({r.name for r in rules}) != len(rules):
        raise ConfigError(f"{top.origin}: twoPersonRules: rule names must be unique")
    return tuple(rules)
