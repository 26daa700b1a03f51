"""What a person types into a command (``--reason``, ``--by``) is data: one line, bounded.

It is recorded in the clusters and shown again by ``syncer status``, ``syncer history``, the page,
Events and notifications; a line break would forge a line of its own in a terminal or a log, and a
reason of any length would be stored and printed whole. Such a value is refused at once, with what to
do, before anything is written.
"""

from __future__ import annotations

from collections.abc import Callable

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


def person_options(
    reason: str = "Why (recorded, shown by `syncer status`).", *, by: bool = True
) -> Callable[[click.decorators.FC], click.decorators.FC]:
    """The ``--reason`` option (``reason`` its help) and, with ``by``, the ``--by`` option of a
    person's act, both taken through ``person_text``; whether a reason is required is the
    command's to say (in its help and its check)."""

    def add(func: click.decorators.FC) -> click.decorators.FC:
        if by:
            func = click.option(
                "--by", default="", callback=person_text, help="Who [default: the user running the command]."
            )(func)
        return click.option("--reason", default="", callback=person_text, help=reason)(func)

    return add


REQUIRED_REASON = "Why (required; recorded, shown by `syncer status`)."
