"""What a person types into a command (``--reason``, ``--by``) is data: one line, bounded.

It is recorded in the clusters and shown again by ``syncer status``, ``syncer history``, the page,
Events and notifications; a line break would forge a line of its own in a terminal or a log, and a
reason of any length would be stored and printed whole. Such a value is refused at once, with what to
do, before anything is written.
"""

from __future__ import annotations

import click

from syncer.bounded.invisible import is_hidden

MAX_PERSON_TEXT = 500
"""The most characters a reason or a name may have (Events and a Slack field take far more)."""


def person_text(ctx: click.Context, param: click.Parameter, value: str) -> str:
    """A click callback: ``value`` stripped, refused (a usage error, exit 2) when longer than
    ``MAX_PERSON_TEXT`` characters or holding a line break or anything invisible or reordering."""
    text = value.strip()
    if len(text) > MAX_PERSON_TEXT:
        raise click.BadParameter(f"is {len(text)} characters long; keep it to {MAX_PERSON_TEXT} (one line)")
    bad = next((ch for ch in text if ch in "\n\r\t" or is_hidden(ch)), None)
    if bad is not None:
        raise click.BadParameter(f"holds {bad!r}: give one line of visible text")
    return text
