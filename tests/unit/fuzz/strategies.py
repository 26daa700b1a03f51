"""Hypothesis strategies for the fuzzing harness: YAML-ish text, JSON-like documents shaped like the
project's files, and file trees with directories and symlinks in unexpected places."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import yaml
from hypothesis import strategies as st

# Characters YAML gives meaning to, plus some that must be rejected or flagged.
YAML_ALPHABET = st.sampled_from(
    [
        *" \t\n-:?,[]{}#&*!|>'\"%@`~=.0123456789abcxyzKN\\",
        *("\u202e", "\u200b", "\ufeff", "\x00", "\x07", "\x85", "é", "☃", "\U0001f600"),
    ]
)
# Plain scalars past Python's 4300-digit limit of int(str): a number no file of the project may hold.
HUGE_NUMBERS = ("9" * 5000, "-" + "1" * 4301, "0x" + "f" * 5000, "1_" * 2500 + "1")
TOKENS = st.sampled_from(
    ["<<", "---", "...", "!!str", "!!binary", "&a", "*a", "? ", "- ", ": ", "\n  ", *HUGE_NUMBERS]
)
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
    st.sampled_from(["", "**", "-", "../x", "/abs", "clusters/*", "1s", "90s", "-5s", "1h", "abc", "100"]),
)


def json_like(keys: list[str]) -> st.SearchStrategy[Any]:
    """Nested values whose mapping keys are mostly the given (meaningful) keys."""
    key = st.one_of(st.sampled_from(keys), st.text(max_size=6))
    return st.recursive(
        SCALARS,
        lambda children: st.one_of(
            st.lists(children, max_size=4), st.dictionaries(key, children, max_size=5)
        ),
        max_leaves=16,
    )


def documents(keys: list[str]) -> st.SearchStrategy[Any]:
    """Top-level documents: mostly mappings of the given keys, sometimes anything else."""
    value = json_like(keys)
    return st.one_of(st.dictionaries(st.sampled_from(keys), value, max_size=len(keys)), value)


def yaml_text(keys: list[str]) -> st.SearchStrategy[str]:
    """Valid YAML of documents shaped like a file of the project, random text, or YAML cut and spliced."""
    dumped = documents(keys).map(lambda d: yaml.safe_dump(d, allow_unicode=True, sort_keys=False))
    raw = st.lists(st.one_of(YAML_ALPHABET, TOKENS), max_size=40).map("".join)
    spliced = st.tuples(dumped, raw, st.integers(min_value=0, max_value=200)).map(
        lambda t: t[0][: t[2]] + t[1] + t[0][t[2] :]
    )
    return st.one_of(dumped, raw, spliced)


TREE_NAMES = st.sampled_from(
    [
        "fleet.yaml",
        "base",
        "clusters",
        "clusters/eu-1",
        "clusters/eu-1/redis.yaml",
        "clusters/eu-1/patches.yaml",
        "clusters/eu-1/sub",
        "clusters/eu-1/sub/x.yml",
        "clusters/us-1",
        "clusters/stray.yaml",
        "base/a.yaml",
        "base/nested",
        "base/nested/b.yaml",
        "base/.hidden.yaml",
        "README.md",
    ]
)
ENTRY_KINDS = st.sampled_from(["file", "dir", "symlink", "fifo"])
LINK_TARGETS = st.sampled_from(
    [".", "..", "/", "/etc/passwd", "fleet.yaml", "base", "clusters", "missing", "../../outside", "loop"]
)


def raised_by(call: Callable[[], object], *allowed: type[Exception]) -> Exception | None:
    """The error of one of the ``allowed`` types ``call`` raised, or None; anything else propagates."""
    try:
        call()
    except allowed as err:
        return err
    return None
