"""Path scopes: glob matching and which paths a merge answers for."""

from __future__ import annotations

import pytest

from syncer.verify.scope import merge_paths, outside


@pytest.mark.parametrize(
    ("path", "globs", "covered"),
    [
        ("clusters/prod-eu/redis.yaml", ["clusters/prod-*/**"], True),
        ("clusters/prod-eu/deep/er/redis.yaml", ["clusters/prod-*/**"], True),
        ("clusters/prod-eu/.hidden", ["clusters/prod-*/**"], True),
        ("clusters/staging/redis.yaml", ["clusters/prod-*/**"], False),
        ("clusters/prod-eu", ["clusters/prod-*/*"], False),
        ("clusters/prod/eu/redis.yaml", ["clusters/prod-*/**"], False),
        ("README.md", ["clusters/**"], False),
        ("a/README.md", ["README.md"], False),
        ("README.md", ["README.md"], True),
        ("any/thing/at/all", ["**"], True),
        (".github/workflows/x.yml", ["**"], True),
        ("clusters/prod-eu/redis.yaml", ["clusters/staging/**", "clusters/prod-eu/*.yaml"], True),
        ("clusters/prod-eu/redis.yml", ["clusters/prod-eu/*.yaml"], False),
        ("clusters/prod-eu/a/redis.yaml", ["clusters/prod-eu/*.yaml"], False),
    ],
)
def test_outside(path: str, globs: list[str], covered: bool) -> None:
    assert outside([path], globs) == (() if covered else (path,))


def test_outside_sorts_and_deduplicates() -> None:
    assert outside(["b", "a", "b", "keep/x"], ["keep/**"]) == ("a", "b")


F = frozenset


@pytest.mark.parametrize(
    ("against", "since_base", "own"),
    [
        # clean merge: each side changed its own path; the merge takes both unchanged
        ([F({"s"}), F({"p"})], [F({"p"}), F({"s"})], F()),
        # edit made in the merge itself (differs from both parents)
        ([F({"s", "x"}), F({"p", "x"})], [F({"p"}), F({"s"})], F({"x"})),
        # the merge dropped side 1's change of p and kept the old version (equal to side 2)
        ([F({"p", "s"}), F()], [F({"p"}), F({"s"})], F({"p"})),
        # both sides changed c, the merge took side 2's version: it resolved a conflict
        ([F({"c"}), F()], [F({"c"}), F({"c"})], F({"c"})),
        # octopus merge, clean
        ([F({"b", "c"}), F({"a", "c"}), F({"a", "b"})], [F({"a"}), F({"b"}), F({"c"})], F()),
        ([], [], F()),
    ],
)
def test_merge_paths(
    against: list[frozenset[str]], since_base: list[frozenset[str]], own: frozenset[str]
) -> None:
    assert merge_paths(against, since_base) == own
