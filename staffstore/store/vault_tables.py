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

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from .database import Database
from .fts_tokens import fts_tokens
from .rows import fts_phrase, upsert
from .search import by_shared_rarity, lookup_tokens, newest_holding

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
    """What a vault lookup returns: the matching messages it read, newest first; how many
    messages the searched part of the session holds; and how many of them hold each token
    looked up (`holding`; for a token held by more than its share of the lookup's ids, that
    share: a lower bound). Both are for ranking."""

    messages: list[VaultMessage]
    searched: int
    holding: dict[str, int] = field(default_factory=dict)


#: How many message ids a vault lookup reads from the index at most, shared among the turn's
#: tokens: a token fewer messages hold than its share brings every one of them, however old.
#: Before December 5 2026 a lookup read the newest 2,000 messages holding any of the tokens,
#: and every one of them whole: 14 ms a lookup in a session of 1,000 messages that each held
#: a common word of the turn, 35 ms at 20,000, where from 5,000 on an older message holding
#: the turn's rare words was no longer found (benchmarks/bench_long_session.py).
PER_LOOKUP_IDS = 1_024
#: The fewest and the most ids read for one token.
MIN_PER_TOKEN, MAX_PER_TOKEN = 16, 256


def _idf(messages: int, holding: int) -> float:
    """bm25's inverse document frequency, as FTS5 computes it."""
    return math.log(1.0 + (messages - holding + 0.5) / (holding + 0.5))


class VaultTables:
    """SyncStore's vault methods (run on the store's thread)."""

    db: Database

    def vault_candidates(
        self, session_id: str, tokens: Sequence[str], *, skip_latest: int, limit: int
    ) -> VaultCandidates:
        """The session's messages, all but its `skip_latest` newest, that hold any of `tokens`
        (FTS5 unicode61 tokens): at most `limit`, newest first, those sharing the rarest
        tokens chosen first; and how many messages hold each token (see VaultCandidates).

        For each token, the ids of the newest messages holding it are read, every one of them
        for a token fewer than its share of PER_LOOKUP_IDS messages hold; the messages are
        ranked by the rarity of the tokens they share and only the `limit` first are read
        whole. So a lookup reads a bounded number of messages however long the session, and
        an old message holding a rare word is found behind any number of newer ones holding
        a common one.
        """
        boundary = self._boundary(session_id, skip_latest)
        if boundary is not None and boundary <= 1:
            return VaultCandidates([], 0)
        below = "" if boundary is None else " AND m.id < ?"
        bounds: list[Any] = [] if boundary is None else [boundary]
        ((searched,),) = self.db.fetchall(
            f"SELECT count(*) FROM messages m WHERE m.session_id = ?{below}",
            (session_id, *bounds),
        )
        wanted = lookup_tokens(tokens)
        if not wanted or not searched or limit < 1:
            return VaultCandidates([], int(searched))
        each = max(MIN_PER_TOKEN, min(MAX_PER_TOKEN, PER_LOOKUP_IDS // len(wanted)))
        holding = newest_holding(
            self.db, wanted, each, scope=session_id, below=boundary,
            fts=("messages_vault", lambda token: (
                f"session_id : {fts_phrase(session_id)} AND content : {fts_phrase(token)}")),
            terms=("vault_terms", "session_id", "message_id"),
        )  # fmt: skip
        ranked = by_shared_rarity(holding, lambda held: _idf(int(searched), held))
        chosen = sorted(ranked[:limit], reverse=True)
        if not chosen:
            return VaultCandidates([], int(searched))
        marks = ", ".join("?" for _ in chosen)
        rows = self.db.fetchall(
            f"SELECT id, role, content FROM messages WHERE session_id = ? AND id IN ({marks}) "
            "ORDER BY id DESC",
            (session_id, *chosen),
        )
        found = [VaultMessage(int(i), str(role), str(text)) for i, role, text in rows]
        return VaultCandidates(found, int(searched), {t: len(ids) for t, ids in holding.items()})

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
