"""Terminal tables that fit the terminal: columns dropped by priority, never squeezed to nothing.

rich shrinks a table wider than the console by cutting every column, down to zero characters, which
leaves a row of empty cells (``┳┳┓``). A table here instead keeps the columns that fit whole, drops
the rest lowest priority first (or any column no row has a value for), and says in its caption which
columns it left out and how to see them. Pure layout: it neither reads the clusters nor prints.

Every cell is data (``terminal_text``): rich reads no markup in it (a reason holding ``[/]`` or a
``[link=...]`` is shown as typed, never styled, linked or refused with a traceback), a control
character is shown as its escape (no forged line, no terminal escape sequence) and a cell is bounded.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass

from rich import box as boxes
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

MAX_CELL = 1000
"""The most characters a cell shows (a longer value is cut, saying so; ``-o json`` has it whole)."""


def terminal_text(value: str, limit: int = MAX_CELL) -> str:
    """``value`` for a terminal: each character that is not printable as its escape (``\\n``,
    ``\\x1b``), at most ``limit`` characters (cut with ``…``)."""
    shown = "".join(ch if ch.isprintable() else ch.encode("unicode_escape").decode() for ch in value)
    return shown if len(shown) <= limit else shown[: limit - 1] + "…"


def markup_safe(value: object, limit: int = MAX_CELL) -> str:
    """``value`` (text from git, a person or a cluster's record, an error naming them) for a string
    rich reads markup in: ``terminal_text``, then its ``[`` escaped (no style, link or traceback)."""
    return escape(terminal_text(str(value), limit))


# A column that may wrap needs only this much (or its header's width) to be readable; the rest of a
# longer value folds onto further lines, and the column takes whatever width is left over.
_FOLDED_WIDTH = 10


# The width a table gets when the output is not a terminal (a file, a pipe, a CI log) and COLUMNS
# does not say: wide, so that nothing is dropped or folded for a reader who cannot widen anything.
UNBOUNDED_WIDTH = 240


def console_for(*, stderr: bool = False, **options: bool) -> Console:
    """A console as wide as the terminal, or ``UNBOUNDED_WIDTH`` when writing elsewhere (COLUMNS,
    when set, wins)."""
    probe = Console(stderr=stderr)
    width = None if probe.is_terminal or os.environ.get("COLUMNS") else UNBOUNDED_WIDTH
    return Console(stderr=stderr, width=width, **options)  # type: ignore[arg-type]


@dataclass(frozen=True)
class Column:
    """One column. ``priority`` 0 is never dropped; higher numbers go first when space runs out.
    A ``fold`` column wraps long values over lines; the others stay on one line and need their
    longest value's width."""

    header: str
    priority: int = 1
    fold: bool = False
    justify: str = "left"
    wanted: int = 0
    """The width a ``fold`` column would rather have (a reason to read): columns go to give it
    this much, and it makes do with less only when nothing else can go."""


@dataclass(frozen=True)
class FittedTable:
    """The table to print, and the columns it left out (for a caption, or a test)."""

    table: Table
    dropped: tuple[str, ...]


def _needed(column: Column, cells: Sequence[str], *, wanted: bool = False) -> int:
    longest = max((len(cell) for cell in cells), default=0)
    if column.fold:
        longest = min(longest, max(_FOLDED_WIDTH, column.wanted if wanted else 0))
    return max(len(column.header), longest)


def _total(widths: Sequence[int], pad_edge: bool) -> int:
    """The characters a row of these column widths takes: one space of padding on each side of each
    cell (not on the outer sides without ``pad_edge``), a separator between cells, and the two outer
    borders (every box draws them, some as spaces)."""
    padding = 2 * len(widths) - (0 if pad_edge else 2)
    return sum(widths) + padding + max(len(widths) - 1, 0) + 2


def fit_table(
    columns: Sequence[Column],
    rows: Sequence[Sequence[str]],
    width: int,
    *,
    title: str = "",
    box: boxes.Box = boxes.HEAVY_HEAD,
    pad_edge: bool = True,
) -> FittedTable:
    """A table of ``rows`` (one string per column) that fits ``width`` characters.

    Columns no row fills are left out (the first, the rows' key, always stays); then, while the
    table is too wide, the droppable column of the highest ``priority`` number (the rightmost of
    equals) goes. Columns of priority 0 always stay; when even they do not fit, every column folds."""
    rows = [[terminal_text(cell) for cell in row] for row in rows]
    keep = [i for i in range(len(columns)) if i == 0 or any(row[i] for row in rows)]
    too_wide: list[str] = []
    wanted = any(c.wanted for c in columns)
    while True:
        widths = [_needed(columns[i], [row[i] for row in rows], wanted=wanted) for i in keep]
        fits = _total(widths, pad_edge) <= width
        if fits:
            break
        droppable = [i for i in keep if columns[i].priority > 0]
        if not droppable:
            if wanted:
                wanted = False  # the columns that stay make do with their folded width
                continue
            break
        worst = max(droppable, key=lambda i: (columns[i].priority, i))
        keep.remove(worst)
        too_wide.append(columns[worst].header)
    table = Table(title=title or None, title_justify="left", box=box, pad_edge=pad_edge)
    for i, needed in zip(keep, widths, strict=True):
        column = columns[i]
        table.add_column(
            column.header,
            no_wrap=fits and not column.fold,
            overflow="fold",
            justify="right" if column.justify == "right" else "left",
            min_width=min(needed, len(column.header)) if not fits else needed if column.fold else None,
        )
    for row in rows:
        table.add_row(*(Text(row[i]) for i in keep))
    if too_wide:
        ordered = [c.header for c in columns if c.header in too_wide]
        table.caption = (
            f"not shown at {width} columns: {', '.join(ordered)} (widen the terminal or use -o json)"
        )
        table.caption_justify = "left"
    return FittedTable(table, tuple(too_wide))
