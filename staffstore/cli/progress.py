"""Progress bars for long commands, drawn on standard error only when it is a terminal.

The library reports progress through a plain `Progress` callback (models.py: items done, items
in all); this module turns that into a rich bar. Piped, redirected or asked for JSON, a command
gets no callback at all and prints exactly what it printed before. Standard output is never
touched: the bar lives on standard error and leaves it when the work is done.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable, Coroutine, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.progress import (
    Progress as RichProgress,
)

from ..models import Progress
from .app import user_errors

T = TypeVar("T")


@contextmanager
def progress_bar(description: str, *, quiet: bool = False) -> Iterator[Progress | None]:
    """A callback drawing a bar for `description` on standard error, or None when `quiet` (for
    --json) or when standard error is not a terminal."""
    stderr = sys.stderr
    if quiet or not stderr.isatty():
        yield None
        return
    console = Console(file=stderr, force_terminal=True)
    bar = RichProgress(
        TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
        TimeElapsedColumn(), TimeRemainingColumn(), console=console, transient=True,
        # rich would send whatever the command prints to stdout through its stderr console.
        redirect_stdout=False, redirect_stderr=False,
    )  # fmt: skip
    with bar:
        task = bar.add_task(description, total=None)

        def report(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        yield report


def run_with_progress(
    description: str, work: Callable[[Progress | None], Coroutine[Any, Any, T]]
) -> T:
    """`cli.app.run` with a bar: run `work(progress)` to its end, reporting a user's mistakes
    as one line. The bar is gone before that line is printed (a transient bar erases the lines
    it last drew, and would take an error printed under it along)."""
    with user_errors(), progress_bar(description) as progress:
        return asyncio.run(work(progress))
