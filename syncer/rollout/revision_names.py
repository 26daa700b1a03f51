"""How a person names a revision: the one rule ``promote``, ``abort``, ``rollback`` and ``retry``
share. [pure]

A revision is named by its full id or by a prefix of at least ``MIN_PREFIX`` hexadecimal characters
(as git abbreviates), in any case, that names exactly one of the revisions the act could concern
(those waiting at the wave's gate, in flight, in the cluster's history, failed there). Anything else
is refused with the candidates listed, so the person can name one.
"""

from __future__ import annotations

import string
from collections.abc import Iterable

from syncer.errors import RevisionNotNamed

MIN_PREFIX = 7
"""The fewest characters of a revision a person's act accepts (as git abbreviates)."""

_HEX = frozenset(string.hexdigits)


def well_formed(given: str) -> bool:
    """Whether ``given`` could name a revision: ``MIN_PREFIX`` or more hexadecimal characters."""
    wanted = given.strip().lower()
    return len(wanted) >= MIN_PREFIX and set(wanted) <= _HEX


def matches(given: str, revision: str) -> bool:
    """Whether ``given`` names ``revision``: the whole id, or a prefix of ``MIN_PREFIX`` or more."""
    wanted = given.strip().lower()
    return wanted == revision.lower() or (well_formed(wanted) and revision.lower().startswith(wanted))


def resolve(given: str, known: Iterable[str], what: str) -> str:
    """The one revision of ``known`` that ``given`` names; ``RevisionNotNamed`` otherwise, saying
    ``what`` the candidates are (``"wave eu waits for promote of"``) and listing them."""
    candidates = sorted({r for r in known if r})
    wanted = given.strip()
    if wanted not in candidates and not well_formed(wanted):
        shown = wanted[:48] or "nothing"
        raise RevisionNotNamed(
            f"refused: {shown!r} does not name a revision: give its id or at least {MIN_PREFIX} "
            f"hexadecimal characters of it ({what} {_listed(candidates)})",
            given=wanted,
        )
    found = [r for r in candidates if matches(wanted, r)]
    if len(found) == 1:
        return found[0]
    if found:
        raise RevisionNotNamed(
            f"refused: {wanted} is ambiguous: it names {', '.join(found)}", given=wanted, matched=tuple(found)
        )
    raise RevisionNotNamed(f"refused: {what} {_listed(candidates)}, not {wanted[:48]}", given=wanted)


def _listed(candidates: list[str]) -> str:
    return ", ".join(r[:12] for r in candidates) if candidates else "none"
