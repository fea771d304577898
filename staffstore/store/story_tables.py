"""The store's side of a session's story: one table of versions, the newest of which is current.

A story is replaced whole, never edited: each write is a new version numbered after the
session's last, so the history of what the session was said to be about is kept and the
current story is one indexed read. The rules (its bound, who may write it, how staffstore
writes one from the session) live in staffstore.working_set.story; here each read is one
query and each write one transaction. Writers are serialized on both backends (database.py),
so reading the last version and inserting the next cannot race another writer.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from .database import Database

T = TypeVar("T")

_PG_T = 'TEXT COLLATE "C"'  # compares bytewise, as SQLite's BINARY does (migrations_postgres)

# Written once for both dialects: {T} a text column, {TIME} an epoch, {INT} a 64-bit integer,
# {NOROWID} SQLite's WITHOUT ROWID (the table is only ever reached by its key).
_STATEMENTS = [
    """
    CREATE TABLE session_stories (
        session_id {T} NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
        version {INT} NOT NULL,
        body {T} NOT NULL,
        source {T} NOT NULL CHECK (source IN ('client', 'extractive')),
        written_at {TIME} NOT NULL,
        PRIMARY KEY (session_id, version)
    ){NOROWID}
    """,
]


def _schema(text: str, time: str, integer: str, norowid: str) -> list[str]:
    return [
        s.replace("{T}", text).replace("{TIME}", time).replace("{INT}", integer)
        .replace("{NOROWID}", norowid)
        for s in _STATEMENTS
    ]  # fmt: skip


#: The step appended to migrations.MIGRATIONS (SQLite) and migrations_postgres.MIGRATIONS.
MIGRATION: list[str] = _schema("TEXT", "REAL", "INTEGER", " WITHOUT ROWID")
POSTGRES_MIGRATION: list[str] = _schema(_PG_T, "DOUBLE PRECISION", "BIGINT", "")


@dataclass(frozen=True)
class StoryRow:
    """One version of a session's story (`written_at` in epoch seconds)."""

    session_id: str
    version: int
    body: str
    source: str
    written_at: float


_COLUMNS = "session_id, version, body, source, written_at"


def _story(row: Any) -> StoryRow:
    session_id, version, body, source, written_at = row
    return StoryRow(str(session_id), int(version), str(body), str(source), float(written_at))


class StoryTables:
    """SyncStore's story methods (run on the store's thread)."""

    db: Database

    def story(self, session_id: str) -> StoryRow | None:
        """The session's current story (its newest version), or None when it has none."""
        rows = self.db.fetchall(
            f"SELECT {_COLUMNS} FROM session_stories WHERE session_id = ? "
            "ORDER BY version DESC LIMIT 1",
            (session_id,),
        )
        return _story(rows[0]) if rows else None

    def story_and_news(self, session_id: str) -> tuple[StoryRow | None, int]:
        """The session's current story and how many of its messages were written after it
        (all of them when it has none): whether a new version is due, in one trip."""
        story = self.story(session_id)
        since = "" if story is None else " AND created_at > ?"
        rows = self.db.fetchall(
            f"SELECT count(*) FROM messages WHERE session_id = ?{since}",
            (session_id,) if story is None else (session_id, story.written_at),
        )
        return story, int(rows[0][0])

    def story_history(self, session_id: str) -> list[StoryRow]:
        """Every version of the session's story, oldest first."""
        rows = self.db.fetchall(
            f"SELECT {_COLUMNS} FROM session_stories WHERE session_id = ? ORDER BY version",
            (session_id,),
        )
        return [_story(row) for row in rows]

    def put_story(self, session_id: str, body: str, source: str, written_at: float) -> StoryRow:
        """Write the session's next story version, in one write transaction, and return it."""
        with self.db.write():
            rows = self.db.fetchall(
                "SELECT max(version) FROM session_stories WHERE session_id = ?", (session_id,)
            )
            version = int(rows[0][0] or 0) + 1
            self.db.execute(
                f"INSERT INTO session_stories ({_COLUMNS}) VALUES (?, ?, ?, ?, ?)",
                (session_id, version, body, source, written_at),
            )
        return StoryRow(session_id, version, body, source, written_at)


class AsyncStoryTables:
    """StaffStore's async face of StoryTables: each call is one trip to the store's thread."""

    async def run_sync(self, work: Callable[[Any], T]) -> T:  # provided by StaffStore
        raise NotImplementedError

    async def story(self, session_id: str) -> StoryRow | None:
        """See StoryTables.story."""
        return await self.run_sync(lambda sync: sync.story(session_id))

    async def story_and_news(self, session_id: str) -> tuple[StoryRow | None, int]:
        """See StoryTables.story_and_news."""
        return await self.run_sync(lambda sync: sync.story_and_news(session_id))

    async def story_history(self, session_id: str) -> list[StoryRow]:
        """See StoryTables.story_history."""
        return await self.run_sync(lambda sync: sync.story_history(session_id))

    async def put_story(
        self, session_id: str, body: str, source: str, written_at: float
    ) -> StoryRow:
        """See StoryTables.put_story."""
        return await self.run_sync(
            lambda sync: sync.put_story(session_id, body, source, written_at)
        )
