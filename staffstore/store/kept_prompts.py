"""Kept prompts: the questions of context-free kept answers, searchable within their scope.

A kept answer (a paid reply, sync_store.KeptAnswer) whose request was context-free (one user
message, perhaps after system messages, and nothing else that changes the answer but its
context key) keeps its prompt here, beside it: `kept_prompts` is plain rows, copied by copy.py
and deleted with its kept answer (a foreign key, ON DELETE CASCADE, so `kept forget`, `kept
prune` and retention take the prompt too). Its index is derived, as the session vault's is
(vault_tables.py): on SQLite an FTS5 table over the prompt and its content words with the
scope as a column of its own (external content, kept by triggers); on PostgreSQL doclists of
the tokens FTS5 would make (`kept_prompt_terms`, fts_tokens.py), written in the transaction
that writes the prompt and rebuilt, never copied, by copy.py. The scope is a hash of the owner,
the namespace and the context key, so one lookup reads one scope's doclists; the rows are
still checked by owner, namespace and context key, so no owner's prompt is another's candidate.

Both backends return the same rows: for each asked token, the scope's newest prompts holding
it (all of them for a rare token), ranked here, in Python, by the rarity of the tokens they
share with the turn (ties: the newest first), of which those whose kept answer can still
serve.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ..identity import content_hash
from .database import Database
from .fts_tokens import fts_tokens
from .rows import datetime_at, datetime_of, fts_phrase, kept_fresh, now_epoch
from .search import by_shared_rarity, lookup_tokens, newest_holding, rarity

_PG_T = 'TEXT COLLATE "C"'

#: How many prompt ids a lookup reads from the index at most, shared among the turn's tokens:
#: a token held by fewer of the scope's prompts than its share brings every one of them,
#: however old. Before December 5 2026 a lookup read the newest 200 prompts holding any of
#: the tokens, so a scope's 200 newer questions that shared one word ("queue") with an older
#: one hid it from its own rewording.
PER_LOOKUP_IDS = 512
#: The fewest and the most ids read for one token.
MIN_PER_TOKEN, MAX_PER_TOKEN = 8, 64
#: How many blocks of `limit` ranked prompts a lookup reads at most to find `limit` whose
#: kept answers can still serve.
READ_BLOCKS = 4

_TABLE = """
    CREATE TABLE kept_prompts (
        id {id},
        owner {t} NOT NULL,
        namespace {t} NOT NULL,
        request_hash {t} NOT NULL,
        -- what in the request changes the answer besides its one user message (a hash)
        context_key {t} NOT NULL,
        -- a hash of owner, namespace and context key: the index's scope
        scope {t} NOT NULL,
        prompt {t} NOT NULL,
        -- the prompt's content words (matching.normalize) when it was kept
        search_key {t} NOT NULL,
        UNIQUE (owner, namespace, request_hash),
        FOREIGN KEY (owner, namespace, request_hash)
            REFERENCES kept_answers (owner, namespace, request_hash) ON DELETE CASCADE
    )
"""
#: Which receipts were hits served from what, for the receipts written before the column.
_BACKFILL_SOURCE = """
    UPDATE receipts SET source = CASE WHEN claim_id IS NOT NULL THEN 'claim'
        ELSE 'kept_answer' END
    WHERE outcome = 'hit' AND (claim_id IS NOT NULL OR reason = 'exact_repeat')
"""

#: The step appended to migrations.MIGRATIONS: the prompts, their FTS5 index and its
#: triggers, and a receipt's source (where a hit's answer came from).
MIGRATION: list[str] = [
    _TABLE.format(id="INTEGER PRIMARY KEY", t="TEXT"),
    """
    CREATE VIRTUAL TABLE kept_prompts_fts USING fts5(
        scope, prompt, search_key, content='kept_prompts', content_rowid='id',
        tokenize='unicode61'
    )
    """,
    """
    CREATE TRIGGER kept_prompts_fts_ai AFTER INSERT ON kept_prompts BEGIN
        INSERT INTO kept_prompts_fts (rowid, scope, prompt, search_key)
        VALUES (new.id, new.scope, new.prompt, new.search_key);
    END
    """,
    """
    CREATE TRIGGER kept_prompts_fts_ad AFTER DELETE ON kept_prompts BEGIN
        INSERT INTO kept_prompts_fts (kept_prompts_fts, rowid, scope, prompt, search_key)
        VALUES ('delete', old.id, old.scope, old.prompt, old.search_key);
    END
    """,
    """
    CREATE TRIGGER kept_prompts_fts_au AFTER UPDATE ON kept_prompts BEGIN
        INSERT INTO kept_prompts_fts (kept_prompts_fts, rowid, scope, prompt, search_key)
        VALUES ('delete', old.id, old.scope, old.prompt, old.search_key);
        INSERT INTO kept_prompts_fts (rowid, scope, prompt, search_key)
        VALUES (new.id, new.scope, new.prompt, new.search_key);
    END
    """,
    "ALTER TABLE receipts ADD COLUMN source TEXT",
    _BACKFILL_SOURCE,
]
#: The step appended to migrations_postgres.MIGRATIONS: the prompts and their doclists.
POSTGRES_MIGRATION: list[str] = [
    _TABLE.format(id="BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY", t=_PG_T),
    f"""
    CREATE TABLE kept_prompt_terms (
        scope {_PG_T} NOT NULL,
        token {_PG_T} NOT NULL,
        prompt_id BIGINT NOT NULL REFERENCES kept_prompts(id) ON DELETE CASCADE,
        PRIMARY KEY (scope, token, prompt_id)
    )
    """,
    # The cascade from a deleted prompt finds its terms by it.
    "CREATE INDEX kept_prompt_terms_by_prompt ON kept_prompt_terms (prompt_id)",
    f"ALTER TABLE receipts ADD COLUMN source {_PG_T}",
    _BACKFILL_SOURCE,
]
#: Derived tables and FTS5 shadow tables: rebuilt from the prompts, never copied.
DERIVED_PREFIX = "kept_prompts_fts"
DERIVED_TABLES: tuple[str, ...] = ("kept_prompt_terms",)


def prompt_scope(owner: str, namespace: str, context_key: str) -> str:
    """The index's scope of a kept prompt: one owner's, one namespace's, one context's."""
    return content_hash({"owner": owner, "namespace": namespace, "context": context_key})


@dataclass(frozen=True)
class KeptPrompt:
    """The prompt of a context-free kept answer, and the key of everything else that shaped
    the answer (model, system prompt, parameters): another prompt with the same context key
    is asked under the same conditions."""

    text: str
    context_key: str


@dataclass(frozen=True)
class PromptCandidate:
    """A kept prompt a lookup found, with its kept answer's fields (sync_store.KeptAnswer's)."""

    id: int
    prompt: str
    request_hash: str
    receipt_id: str
    model: str | None
    answer: str
    created_at: datetime
    expires_at: datetime | None
    cost_usd: float | None


class KeptPromptTables:
    """SyncStore's kept-prompt methods (run on the store's thread)."""

    db: Database

    def write_kept_prompts(self, rows: Sequence[tuple[str, str, str, KeptPrompt, str]]) -> None:
        """Write (owner, namespace, request_hash, prompt, search key) rows beside their kept
        answers, inside the caller's write transaction; a request's prompt is written once (a
        refreshed kept answer keeps it: the same request has the same prompt and context)."""
        ids: list[int] = []
        for owner, namespace, request_hash, prompt, search_key in rows:
            scope = prompt_scope(owner, namespace, prompt.context_key)
            found = self.db.fetchall(
                "INSERT INTO kept_prompts (owner, namespace, request_hash, context_key, scope, "
                "prompt, search_key) VALUES (?, ?, ?, ?, ?, ?, ?) "
                "ON CONFLICT (owner, namespace, request_hash) DO NOTHING RETURNING id",
                (owner, namespace, request_hash, prompt.context_key, scope, prompt.text,
                 search_key),
            )  # fmt: skip
            ids += [int(row[0]) for row in found]
        self.index_kept_prompts(ids)

    def index_kept_prompts(self, ids: Sequence[int]) -> None:
        """Write the doclists of these prompts (PostgreSQL; SQLite's triggers have done it),
        inside the write transaction that wrote them."""
        if self.db.dialect == "sqlite" or not ids:
            return
        marks = ", ".join("?" for _ in ids)
        rows = self.db.fetchall(
            f"SELECT id, scope, prompt, search_key FROM kept_prompts WHERE id IN ({marks})",
            list(ids),
        )
        terms = [
            (str(scope), token, int(prompt_id))
            for prompt_id, scope, prompt, key in rows
            for token in sorted(set(fts_tokens(str(prompt))) | set(fts_tokens(str(key))))
        ]
        if terms:
            self.db.executemany(
                "INSERT INTO kept_prompt_terms (scope, token, prompt_id) VALUES (?, ?, ?) "
                "ON CONFLICT DO NOTHING",
                terms,
            )

    def kept_prompt_candidates(
        self,
        owner: str,
        namespace: str,
        context_key: str,
        tokens: Sequence[str],
        *,
        limit: int,
        max_age: float | None = None,
        now: datetime | None = None,
    ) -> tuple[list[PromptCandidate], frozenset[str]]:
        """The owner's kept prompts in this namespace and context that hold any of `tokens`
        (FTS5 unicode61 tokens), whose kept answer is unexpired and no older than `max_age`
        seconds: at most `limit`, those sharing the rarest tokens first, then the newest. And
        which of the tokens read some kept prompt of theirs holds, whatever its answer's age
        (the gate reads these as the scope's own words: query_first.store_names).

        Two reads: the newest prompts of the scope holding each token (every one of them for
        a token fewer prompts hold than a token's share of PER_LOOKUP_IDS), ranked here by
        the rarity of the tokens each shares, as the claims' widened lookup ranks; then the kept
        answers of those ranked first, a block at a time until `limit` are fresh (at most
        READ_BLOCKS blocks). The answers, most of a kept row's bytes, are read for those
        alone.
        """
        wanted = lookup_tokens(tokens)
        if not wanted or limit < 1:
            return [], frozenset()
        scope = prompt_scope(owner, namespace, context_key)
        per_token = max(MIN_PER_TOKEN, min(MAX_PER_TOKEN, PER_LOOKUP_IDS // len(wanted)))
        holding = newest_holding(
            self.db, wanted, per_token, scope=scope,
            fts=("kept_prompts_fts", lambda token: (
                f"scope : {fts_phrase(scope)} AND {{prompt search_key}} : {fts_phrase(token)}")),
            terms=("kept_prompt_terms", "scope", "prompt_id"),
        )  # fmt: skip
        # A token whose list is full is held by at least that many prompts.
        ranked = by_shared_rarity(holding, rarity)
        fresh, fresh_params = kept_fresh("k", now_epoch(now), max_age)
        found: list[PromptCandidate] = []
        start = 0
        # At most READ_BLOCKS blocks: expired answers ranked first cost a read each block.
        while start < min(len(ranked), READ_BLOCKS * limit) and len(found) < limit:
            block = ranked[start : start + limit]
            start += limit
            # By id alone: with the owner's terms in the WHERE the planner walks the owner's
            # index again. The rows still say whose they are, and are checked here.
            marks = ", ".join("?" for _ in block)
            rows = self.db.fetchall(
                "SELECT p.owner, p.namespace, p.context_key, p.id, p.prompt, k.request_hash, "
                "k.receipt_id, k.model, k.answer, k.created_at, k.expires_at, k.cost_usd "
                "FROM kept_prompts p JOIN kept_answers k ON k.owner = p.owner "
                "AND k.namespace = p.namespace AND k.request_hash = p.request_hash "
                f"WHERE p.id IN ({marks}){fresh}",
                (*block, *fresh_params),
            )
            by_id = {
                int(row[3]): row[3:]
                for row in rows
                if tuple(row[:3]) == (owner, namespace, context_key)
            }
            found += [_candidate(by_id[pid]) for pid in block if pid in by_id]
        return found[:limit], frozenset(token for token, ids in holding.items() if ids)


def _candidate(row: Sequence[Any]) -> PromptCandidate:
    (pid, prompt, request_hash, receipt_id, model, answer, created_at, expires_at,
     cost_usd) = row  # fmt: skip
    return PromptCandidate(
        id=int(pid), prompt=str(prompt), request_hash=str(request_hash),
        receipt_id=str(receipt_id), model=model, answer=str(answer),
        created_at=datetime_at(created_at), expires_at=datetime_of(expires_at),
        cost_usd=cost_usd,
    )  # fmt: skip
