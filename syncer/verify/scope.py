"""Path scopes of signers, pure: which changed paths a signer's globs do not cover, and which paths a
merge commit is answerable for.

Globs are matched against paths relative to the repository root with ``wcmatch``: ``**`` spans any
number of folders, ``*`` and ``?`` stay within one, dot-files match like any other file.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from wcmatch import glob

_FLAGS = glob.GLOBSTAR | glob.DOTGLOB


def outside(paths: Iterable[str], globs: Sequence[str]) -> tuple[str, ...]:
    """The paths (sorted, without duplicates) that none of ``globs`` matches."""
    return tuple(sorted({p for p in paths if not glob.globmatch(p, list(globs), flags=_FLAGS)}))


def merge_paths(
    against_parents: Sequence[frozenset[str]], since_base: Sequence[frozenset[str]]
) -> frozenset[str]:
    """The paths a merge commit itself decides, given for each parent ``i`` the paths where the merge
    differs from parent ``i`` (``against_parents[i]``) and the paths parent ``i``'s side changed since
    the merge base (``since_base[i]``).

    A path is the merge's own when the merge differs from every parent (a conflict resolution or an
    edit made in the merge), or when it differs from a parent whose side changed that path (the merge
    dropped or overrode that side's change). A path taken unchanged from the only side that changed it
    is not the merge's: the commits of that side answer for it.
    """
    if not against_parents:
        return frozenset()
    own = frozenset.intersection(*against_parents)
    for differs, changed in zip(against_parents, since_base, strict=True):
        own |= differs & changed
    return own
