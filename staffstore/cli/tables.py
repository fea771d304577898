"""print_table: rows under a header, laid out for where they go.

Piped or redirected, a row is one line whatever its length, so a script reads it with split().
On a terminal the table is fitted to its width (`$COLUMNS` wins), trying in turn: the table as
it is; its headers wrapped at their word breaks (`FALSE_HIT_RATE` over three lines); its prose
columns (a question, a task) cut short with "…"; and when even that does not fit, one block a
row, a `HEADER  value` line a column, values wrapped but never cut, so an id or a figure is
never lost to a narrow window.
"""

from __future__ import annotations

import re
import shutil
import textwrap
from collections.abc import Sequence

import typer
from rich.cells import cell_len, set_cell_size
from rich.console import Console
from rich.table import Table

#: Spaces between two columns (as rich's padding of one cell each side gave).
GAP = 2
#: A prose column is cut no narrower than this.
PROSE_FLOOR = 16
_ELLIPSIS = "…"
#: Where a header may break: after a space, an underscore, a hyphen or a slash.
_BREAKS = re.compile(r"[^ _/-]+[ _/-]*|[ _/-]+")


def print_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
    """Print rows as aligned columns under a header: one line a row when piped, fitted to the
    width when on a terminal (see the module's docstring); no trailing spaces."""
    if not rows:
        return
    stdout = typer.get_text_stream("stdout")
    if not stdout.isatty():
        _print_piped(headers, rows)
        return
    width = shutil.get_terminal_size().columns
    for line, is_header in fit_table(headers, rows, width):
        typer.echo(typer.style(line, bold=True) if is_header and line else line)


def _print_piped(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
    # What every release printed so far, kept byte for byte: scripts read it.
    console = Console(
        file=typer.get_text_stream("stdout"), width=100_000, highlight=False, markup=False,
        emoji=False, force_terminal=False, no_color=True,
    )  # fmt: skip
    table = Table(box=None, pad_edge=False, padding=(0, 1), header_style="")
    for header in headers:
        table.add_column(header, overflow="fold")
    for row in rows:
        table.add_row(*row)
    with console.capture() as captured:
        console.print(table)
    for line in captured.get().splitlines():
        typer.echo(line.rstrip())


def fit_table(
    headers: Sequence[str], rows: Sequence[Sequence[str]], width: int
) -> list[tuple[str, bool]]:
    """The lines of the table fitted to `width` columns, each with whether it is a header line
    (for bold). Every line is at most `width` wide, unless one word of a value is wider."""
    cells = [[" ".join(str(cell).split()) for cell in row] for row in rows]
    heads = [" ".join(header.split()) for header in headers]
    data = [max(cell_len(row[i]) for row in cells) for i in range(len(heads))]
    whole = [max(cell_len(head), wide) for head, wide in zip(heads, data, strict=True)]
    if _span(whole) <= width:
        return _columns(heads, cells, whole)
    pieces = [_BREAKS.findall(head) or [head] for head in heads]
    wrapped = [
        max([wide, *(cell_len(piece.rstrip()) for piece in parts)])
        for wide, parts in zip(data, pieces, strict=True)
    ]
    if _span(wrapped) <= width:
        return _columns(heads, cells, wrapped)
    cut = _cut_prose(wrapped, pieces, cells, width)
    if cut is not None:
        return _columns(heads, cells, cut)
    return _records(heads, cells, width)


def _span(widths: Sequence[int]) -> int:
    return sum(widths) + GAP * (len(widths) - 1)


def _cut_prose(
    widths: list[int], pieces: list[list[str]], cells: list[list[str]], width: int
) -> list[int] | None:
    """The widths with the widest prose columns narrowed until the table fits, or None when
    it cannot. Prose is a column with a value of three words or more: ids, times and figures
    are never cut."""
    floors = []
    for i, current in enumerate(widths):
        prose = any(len(row[i].split()) >= 3 for row in cells)
        header = max(cell_len(piece.rstrip()) for piece in pieces[i])
        floors.append(min(current, max(PROSE_FLOOR, header)) if prose else current)
    if _span(floors) > width:
        return None
    narrowed = list(widths)
    while _span(narrowed) > width:
        i = max(range(len(narrowed)), key=lambda k: narrowed[k] - floors[k])
        narrowed[i] -= 1
    return narrowed


def _columns(
    heads: Sequence[str], cells: list[list[str]], widths: Sequence[int]
) -> list[tuple[str, bool]]:
    header_lines = [_wrap_header(head, wide) for head, wide in zip(heads, widths, strict=True)]
    depth = max(len(lines) for lines in header_lines)
    out = [
        (_join([lines[n] if n < len(lines) else "" for lines in header_lines], widths), True)
        for n in range(depth)
    ]
    for row in cells:
        clipped = [_clip(cell, wide) for cell, wide in zip(row, widths, strict=True)]
        out.append((_join(clipped, widths), False))
    return out


def _join(values: Sequence[str], widths: Sequence[int]) -> str:
    padded = [set_cell_size(value, wide) for value, wide in zip(values, widths, strict=True)]
    return (" " * GAP).join(padded).rstrip()


def _clip(text: str, wide: int) -> str:
    if cell_len(text) <= wide:
        return text
    return set_cell_size(text, max(wide - 1, 0)) + _ELLIPSIS


def _wrap_header(head: str, wide: int) -> list[str]:
    """The header over as few lines as its breaks allow within `wide` columns."""
    if cell_len(head) <= wide:
        return [head]
    lines = [""]
    for piece in _BREAKS.findall(head):
        if lines[-1] and cell_len((lines[-1] + piece).rstrip()) > wide:
            lines.append("")
        lines[-1] += piece
    return [line.rstrip() for line in lines]


def _records(heads: Sequence[str], cells: list[list[str]], width: int) -> list[tuple[str, bool]]:
    """One block a row: a `HEADER  value` line a column, the value wrapped, never cut."""
    label = max(cell_len(head) for head in heads)
    room = max(width - label - GAP, 20)
    out: list[tuple[str, bool]] = []
    for number, row in enumerate(cells):
        if number:
            out.append(("", False))
        for head, cell in zip(heads, row, strict=True):
            lines = textwrap.wrap(cell, room, break_long_words=False) or [""]
            out.append((f"{set_cell_size(head, label)}{' ' * GAP}{lines[0]}".rstrip(), False))
            out += [(f"{' ' * (label + GAP)}{line}", False) for line in lines[1:]]
    return out
