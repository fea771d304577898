"""The `story` commands: a session's story written, written by staffstore, shown.

Loaded through `cli.app.EXTENSIONS`. The story is what a session is about and has decided, in
a few hundred tokens; each write replaces it whole and keeps the old one (`show --history`).
A miss's working set carries it (working_set/story.py).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated

import typer

from ..store import StaffStore
from ..store.story_tables import StoryRow
from ..working_set.story import extract_story, write_story
from .app import JsonOption, OwnerOption, print_json, utf8, with_store
from .turns import question_text

story_app = typer.Typer(
    help="Write and show a session's story: what it is about and has decided.",
    no_args_is_help=True,
    rich_markup_mode="markdown",
)

SessionArgument = Annotated[
    str, typer.Option("--session", callback=utf8, help="The session's name.", show_default=False)
]


def _row_json(row: StoryRow) -> dict[str, object]:
    return {
        "version": row.version,
        "source": row.source,
        "written_at": datetime.fromtimestamp(row.written_at, UTC).isoformat(),
        "story": row.body,
    }


def _show(row: StoryRow | None, as_json: bool) -> None:
    if as_json:
        print_json(None if row is None else _row_json(row))
    elif row is None:
        typer.echo("no story: the session has nothing key to say yet", err=True)
    else:
        typer.echo(row.body)
        typer.echo(f"version {row.version}, written by {row.source}", err=True)


@story_app.command("set")
def story_set(
    ctx: typer.Context,
    text: Annotated[
        str,
        typer.Argument(
            metavar="STORY", callback=utf8, help="The story; - reads it from standard input."
        ),
    ],
    owner: OwnerOption,
    session: SessionArgument,
    as_json: JsonOption = False,
) -> None:
    """Replace the session's story (its old versions are kept)."""
    body = question_text(text)
    row = with_store(ctx, lambda store: write_story(store, owner, session, body))
    _show(row, as_json)


@story_app.command("extract")
def story_extract(
    ctx: typer.Context, owner: OwnerOption, session: SessionArgument, as_json: JsonOption = False
) -> None:
    """Write the session's story from its messages: their key sentences, the newest on each
    subject (no model call)."""
    _show(with_store(ctx, lambda store: extract_story(store, owner, session)), as_json)


@story_app.command("show")
def story_show(
    ctx: typer.Context,
    owner: OwnerOption,
    session: SessionArgument,
    history: Annotated[
        bool, typer.Option("--history", help="Every version, oldest first.")
    ] = False,
    as_json: JsonOption = False,
) -> None:
    """Show the session's current story (or every version with --history)."""

    async def read(store: StaffStore) -> list[StoryRow]:
        session_id = await store.ensure_session(owner, session)
        if history:
            return await store.story_history(session_id)
        current = await store.story(session_id)
        return [] if current is None else [current]

    rows = with_store(ctx, read, create=False)
    if history:
        if as_json:
            print_json([_row_json(row) for row in rows])
        for row in rows if not as_json else []:
            typer.echo(f"-- version {row.version}, written by {row.source}\n{row.body}")
        return
    _show(rows[0] if rows else None, as_json)


def register(app: typer.Typer) -> None:
    app.add_typer(story_app, name="story")
