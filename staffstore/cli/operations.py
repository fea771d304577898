"""The operations commands: `migrate` (a store's schema up to this staffstore's) and `copy` (a
whole store to another, between SQLite and PostgreSQL either way).

Loaded through `cli.app.EXTENSIONS`. Every store they name is shown as `shown` shows it: a
URL's password never reaches the screen, an error line included.
"""

from __future__ import annotations

from typing import Annotated

import typer

from ..store.copy import CopyReport, copy_store
from ..store.location import shown, store_address
from ..store.schema import migrate_store
from .app import JsonOption, db_address, print_json, print_table, run, user_errors
from .progress import progress_bar


def migrate(ctx: typer.Context, as_json: JsonOption = False) -> None:
    """Bring the store's schema (`--db`) up to this staffstore's, and say from which version.

    A PostgreSQL store is migrated only by this command: run it on a new database to give it
    staffstore's tables, and after installing a staffstore with a newer schema, before the
    servers that share the store start again. Several runs at once are safe: one migrates,
    the others find it done. A SQLite file migrates itself whenever it is opened (and is
    created here if missing). Running it again changes nothing and says so.
    """
    address = db_address(ctx)
    done = run(migrate_store(address))
    where = shown(address)
    if as_json:
        print_json({
            "store": where, "backend": done.dialect, "before": done.before,
            "after": done.after, "migrated": done.changed,
        })  # fmt: skip
    elif done.changed:
        before = "no schema" if done.before is None else f"schema {done.before}"
        typer.echo(f"migrated {where}: {before} -> schema {done.after}")
    else:
        typer.echo(f"{where} is at schema {done.after} already: nothing to do")


def copy(
    source: Annotated[
        str,
        typer.Option(
            "--from",
            metavar="PATH|URL",
            show_default=False,
            help="The store to copy: a SQLite file (it must exist) or a postgresql:// URL.",
        ),
    ],
    target: Annotated[
        str,
        typer.Option(
            "--to",
            metavar="PATH|URL",
            show_default=False,
            help="Where to copy it: a new SQLite file, or an empty PostgreSQL database "
            "(migrated here if it needs it).",
        ),
    ],
    as_json: JsonOption = False,
) -> None:
    """Copy a whole store to another: SQLite to PostgreSQL, PostgreSQL to SQLite, or a file to
    a file. Every table comes across, with its rows in the order they were written, bytes,
    NULLs and times exact; the counts of both sides are then compared and printed.

    The copy is one-shot, not live: writes made to the source while it runs may be missed.
    Stop the writers first (`staffstore serve`, jobs, imports, scripts). A target that already
    holds a store is refused and left as it was: a copy never merges two stores.
    """
    with user_errors():
        frm, to = store_address(source), store_address(target)

    async def work() -> CopyReport:
        with progress_bar("copying rows", quiet=as_json) as progress:
            return await copy_store(frm, to, progress=progress)

    report = run(work())
    if as_json:
        print_json({
            "source": report.source, "target": report.target, "rows": report.rows,
            "tables": [
                {"table": c.table, "source": c.source, "target": c.target} for c in report.tables
            ],
        })  # fmt: skip
        return
    print_table(
        ["TABLE", "SOURCE", "TARGET"],
        [[c.table, str(c.source), str(c.target)] for c in report.tables],
    )
    typer.echo(
        f"copied {shown(frm)} to {shown(to)}: {report.rows} rows in {len(report.tables)} tables, "
        "the same count on both sides"
    )


def register(app: typer.Typer) -> None:
    """Add `migrate` and `copy` to the command line."""
    app.command("migrate")(migrate)
    app.command("copy")(copy)
