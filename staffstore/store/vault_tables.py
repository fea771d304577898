"""The session vault's index: which of a session's messages hold which words, on both backends.

SQLite keeps an FTS5 index over every message, with its session as a column of its own
(external content, kept by triggers, tokenizer unicode61), so one search reads the doclists
of one session and not of every session in the store. PostgreSQL has no FTS5; there the vault
keeps doclists (`vault_terms`: session, token, message) of the tokens FTS5 would make
(fts_tokens.py), written in the transaction that writes the messages (`index_vault`, called
by every writer of messages, and by copy.py for a copied store). Both answer the same question,
the same way: the messages of one session, older than a given one, that hold any of some
tokens. Ranking them is the caller's (working_set/vault.py), in Python, on what both return
alike, so the same hits come back on both.

The index is derived from the messages, never copied (copy.py), and never the authority: a
vault hit helps build a prompt, it never answers a turn.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from .database import Database
from .fts_tokens import fts_tokens
from .rows import fts_phrase, upsert

T = TypeVar("T")

_PG_T = 'TEXT COLLATE "C"'

#: The step appended to migrations.MIGRATIONS: the FTS5 index and the triggers that keep it,
#: then a rebuild, which indexes the messages written before it.
MIGRATION: list[str] = [
    """
    CREATE VIRTUAL TABLE messages_vault USING fts5(
        session_id, content, content='messages', content_rowid='id', tokenize='unicode61'
    )
    """,
    """
    CREATE TRIGGER messages_vault_ai AFTER INSERT ON messages BEGIN
        INSERT INTO messages_vault (rowid, session_id, content)
        VALUES (new.id, new.session_id, new.content);
    END
    """,
    """
    CREATE TRIGGER messages_vault_ad AFTER DELETE ON messages BEGIN
        INSERT INTO messages_vault (messages_vault, rowid, session_id, content)
        VALUES ('delete', old.id, old.session_id, old.content);
    END
    """,
    """
    CREATE TRIGGER messages_vault_au AFTER UPDATE OF session_id, content ON messages BEGIN
        INSERT INTO messages_vault (messages_vault, rowid, session_id, content)
        VALUES ('delete', old.id, old.session_id, old.content);
        INSERT INTO messages_vault (rowid, session_id, content)
        VALUES (new.id, new.session_id, new.content);
    END
    """,
    "INSERT INTO messages_vault (messages_vault) VALUES ('rebuild')",
]
#: The step appended to migrations_postgres.MIGRATIONS: the doclists and each session's mark.
POSTGRES_MIGRATION: list[str] = [
    f"""
    CREATE TABLE vault_terms (
        session_id {_PG_T} NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
        token {_PG_T} NOT NULL,
        message_id BIGINT NOT NULL,
        PRIMARY KEY (session_id, token, message_id)
    )
    """,
    f"""
    CREATE TABLE vault_marks (
        session_id {_PG_T} PRIMARY KEY REFERENCES sessions(id) ON DELETE CASCADE,
        through_id BIGINT NOT NULL
    )
    """,
]
#: Derived tables and FTS5 shadow tables: rebuilt from the messages, never copied.
DERIVED_PREFIX = "messages_vault"
DERIVED_TABLES: tuple[str, ...] = ("vault_terms", "vault_marks")

_UPSERT_MARK = upsert("vault_marks", ("session_id", "through_id"), ("session_id",))


@dataclass(frozen=True)
class VaultMessage:
    """A message the vault found: its id (the pointer back to the stored message), role, text."""

    id: int
    role: str
    content: str


@dataclass(frozen=True)
class VaultCandidates:
    """What a vault lookup returns: the matching messages, newest first, and how many messages
    the searched part of the session holds (for ranking)."""

    messages: list[VaultMessage]
    searched: int


class VaultTables:
    """SyncStore's vault methods (run on the store's thread)."""

    db: Database

    def vault_candidates(
        self, session_id: str, tokens: Sequence[str], *, skip_latest: int, limit: int
    ) -> VaultCandidates:
        """The session's messages, all but its `skip_latest` newest, that hold any of `tokens`
        (FTS5 unicode61 tokens), newest first, at most `limit`."""
        boundary = self._boundary(session_id, skip_latest)
        if boundary is not None and boundary <= 1:
            return VaultCandidates([], 0)
        below = "" if boundary is None else " AND m.id < ?"
        bounds: list[Any] = [] if boundary is None else [boundary]
        ((searched,),) = self.db.fetchall(
            f"SELECT count(*) FROM messages m WHERE m.session_id = ?{below}",
            (session_id, *bounds),
        )
        wanted = sorted({t for t in tokens if t})
        if not wanted or not searched:
            return VaultCandidates([], int(searched))
        if self.db.dialect == "sqlite":
            # The MATCH runs once, in the subquery, within the session's own doclist (a join
            # would run it again for every message of the session).
            words = " OR ".join(fts_phrase(t) for t in wanted)
            rows = self.db.fetchall(
                "SELECT m.id, m.role, m.content FROM messages m WHERE m.id IN ("
                "SELECT rowid FROM messages_vault WHERE messages_vault MATCH ?"
                f"{below.replace('m.id', 'rowid')}) AND m.session_id = ?{below} "
                "ORDER BY m.id DESC LIMIT ?",
                (f"session_id : {fts_phrase(session_id)} AND content : ({words})",
                 *bounds, session_id, *bounds, limit),
            )  # fmt: skip
        else:
            # The matching ids first, once (MATERIALIZED): as a semi-join, a planner without
            # fresh statistics probes the doclists again for every message of the session.
            older = below.replace("m.id", "t.message_id")
            rows = self.db.fetchall(
                "WITH found AS MATERIALIZED (SELECT DISTINCT t.message_id FROM vault_terms t "
                f"WHERE t.session_id = ? AND t.token = ANY(?){older}) "
                "SELECT m.id, m.role, m.content FROM found "
                "JOIN messages m ON m.id = found.message_id ORDER BY m.id DESC LIMIT ?",
                (session_id, wanted, *bounds, limit),
            )
        found = [VaultMessage(int(i), str(role), str(text)) for i, role, text in rows]
        return VaultCandidates(found, int(searched))

    def vault_recent(self, session_id: str, limit: int) -> list[tuple[int, str, str, int]]:
        """The session's newest `limit` messages as (id, role, content, recalls), newest
        first."""
        rows = self.db.fetchall(
            "SELECT id, role, content, recalls FROM messages WHERE session_id = ? "
            "ORDER BY id DESC LIMIT ?",
            (session_id, limit),
        )
        return [(int(i), str(role), str(text), int(n)) for i, role, text, n in rows]

    def _boundary(self, session_id: str, skip_latest: int) -> int | None:
        """The id of the oldest of the session's `skip_latest` newest messages (None: skip
        nothing, or the session has fewer, which leaves nothing older to search: then 0)."""
        if skip_latest <= 0:
            return None
        rows = self.db.fetchall(
            "SELECT id FROM messages WHERE session_id = ? ORDER BY id DESC LIMIT 1 OFFSET ?",
            (session_id, skip_latest - 1),
        )
        return int(rows[0][0]) if rows else 0

    def index_vault(self, session_ids: Iterable[str]) -> None:
        """Bring the sessions' vault index up to their newest message. Called inside the write
        transaction that wrote their messages, so a message is searchable once it is stored;
        SQLite's triggers have done it already."""
        if self.db.dialect == "sqlite":
            return
        for session_id in sorted(set(session_ids)):
            marks = self.db.fetchall(
                "SELECT through_id FROM vault_marks WHERE session_id = ?", (session_id,)
            )
            mark = int(marks[0][0]) if marks else 0
            rows = self.db.fetchall(
                "SELECT id, content FROM messages WHERE session_id = ? AND id > ? ORDER BY id",
                (session_id, mark),
            )
            terms = [
                (session_id, token, int(message_id))
                for message_id, content in rows
                for token in sorted(set(fts_tokens(str(content))))
            ]
            if terms:
                self.db.executemany(
                    "INSERT INTO vault_terms (session_id, token, message_id) VALUES (?, ?, ?) "
                    "ON CONFLICT DO NOTHING",
                    terms,
                )
            if rows:
                self.db.execute(_UPSERT_MARK, (session_id, int(rows[-1][0])))


class AsyncVaultTables:
    """StaffStore's async face of VaultTables: each call is one trip to the store's thread."""

    async def run_sync(self, work: Callable[[Any], T]) -> T:  # provided by StaffStore
        raise NotImplementedError

    async def vault_candidates(
        self, session_id: str, tokens: Sequence[str], *, skip_latest: int, limit: int
    ) -> VaultCandidates:
        """See VaultTables.vault_candidates."""
        return await self.run_sync(
            lambda sync: sync.vault_candidates(
                session_id, tokens, skip_latest=skip_latest, limit=limit
            )
        )

    async def vault_recent(self, session_id: str, limit: int) -> list[tuple[int, str, str, int]]:
        """See VaultTables.vault_recent."""
        return await self.run_sync(lambda sync: sync.vault_recent(session_id, limit))
