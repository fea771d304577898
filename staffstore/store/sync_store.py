"""SyncStore: the store's operations as plain calls on one database connection.

Written once for both backends against database.Database. StaffStore.run_sync runs them on a
thread that holds the connection, so a gate lookup of several queries, or a whole batch of
turns, costs the event loop one round trip instead of one per statement.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from ..models import Claim, Receipt, Role
from ..text.matching import normalize
from .database import Database
from .jobs import SyncJobs
from .kept_prompts import KeptPrompt, KeptPromptTables
from .memory_tables import MemoryTables
from .retention import SyncRetention
from .rows import (
    QUALIFIED_CLAIM_COLUMNS,
    RECEIPT_COLUMNS,
    datetime_at,
    datetime_of,
    epoch_of,
    kept_fresh,
    now_epoch,
    receipt_row,
    row_to_claim,
)
from .search import Combine, rarity
from .state_tables import StateTables
from .story_tables import StoryTables
from .vault_tables import VaultTables

_KEY_VERSION_SETTING = "search_key_version"


#: How many ranked matches similar_claims checks the owner of at once, after a first block of
#: as many as it was asked for.
_OWNER_CHECK_BLOCK = 32


class SyncStore(
    StateTables, MemoryTables, StoryTables, VaultTables, KeptPromptTables, SyncJobs, SyncRetention
):
    """The store's operations as plain calls on one database connection (database.py).

    StaffStore.run_sync runs them on a thread that owns the connection for the call: there a
    lookup of several queries, or a whole transaction, costs the event loop one round trip.
    """

    def __init__(self, db: Database) -> None:
        self.db = db

    @property
    def label(self) -> str:
        """Where the store is, for messages: its file, or its URL without a password."""
        return self.db.label

    def set_lock_timeout(self, seconds: float) -> None:
        """How long this connection's writes wait for another connection's write lock."""
        self.db.set_lock_timeout(seconds)

    def fetchall(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        return self.db.fetchall(sql, params)

    # -- the gate's lookups --------------------------------------------------------------------

    def candidate_claims(
        self, owner: str, key: str, rare: Sequence[str], *, limit: int = 64
    ) -> list[Claim]:
        """Claims of any status whose question has the content `key`, or holds every word of
        `rare` (see rarest_words), in one query."""
        return self.db.search.holding_all(owner, [rare] if rare else [], limit, key=key)

    def similar_claims(
        self, owner: str, words: Sequence[tuple[str, int]], *, limit: int = 12
    ) -> list[Claim]:
        """The owner's claims whose question holds any of `words` (each with the number of the
        owner's questions that hold it, as rarest_words gives them), those that share the most
        rarity first: each word weighs its inverse document frequency, as in FTS5's bm25.
        Where the gate's second look finds a rephrased question.

        The ranking reads only the words' doclists; the claims are then read in that order a
        block at a time until `limit` of them are the owner's. Checking the owner of every
        match in one join read a table row per match: about 3 ms for the 700 questions that
        hold three words at 100,000 claims (FTS5's bm25 rank cost the same), against 1 ms.
        """
        if not words or limit < 1:
            return []
        # Summed here, not by GROUP BY over a UNION ALL of the doclists in SQL: the same order,
        # without SQLite's temporary b-tree (for the 700 questions that hold two bench words at
        # 100,000 claims, about 1.0 ms against 1.5).
        shared: dict[int, float] = {}
        doclists = self.db.search.rowids_holding([word for word, _count in words], owner)
        for word, count in words:
            weight = rarity(count)
            for rowid in doclists[word]:
                shared[rowid] = shared.get(rowid, 0.0) + weight
        # Most shared rarity first, ties by rowid: rowids sorted, then a stable sort on the
        # weight alone (reverse keeps ties in order). The same order as one sort on (-weight,
        # rowid), whose Python key for each of the ~640 rowids a bench miss reads cost 0.22 ms
        # against 0.10 at 100,000 claims.
        ranked = sorted(sorted(shared), key=shared.__getitem__, reverse=True)
        found: list[Claim] = []
        start = 0
        while start < len(ranked):
            # The first block holds just enough for an owner whose questions these all are
            # (the usual case, a store per team); a claim read and not returned costs as much
            # as one returned.
            size = limit if start == 0 else _OWNER_CHECK_BLOCK
            block = ranked[start : start + size]
            start += size
            marks = ", ".join("?" for _ in block)
            rows = self.fetchall(
                f"SELECT {QUALIFIED_CLAIM_COLUMNS}, c.rowid FROM claims c "
                f"WHERE {self.db.search.owner_by_rowid} = ? AND c.rowid IN ({marks})",
                (owner, *block),
            )
            place = {rowid: index for index, rowid in enumerate(block)}
            rows.sort(key=lambda row: place[row[-1]])
            found += [row_to_claim(row[:-1]) for row in rows]
            if len(found) >= limit:
                break
        return found[:limit]

    def claims_holding_without(
        self, owner: str, word: str, without: Sequence[str], *, limit: int = 64
    ) -> list[Claim]:
        """The owner's claims whose question holds `word` and none of `without`, by rowid, at
        most `limit`: "api-gateway" in questions that do not name "lumen", however many do."""
        return self.db.search.holding_without(owner, word, without, limit)

    def near_claims(self, owner: str, rare: Sequence[str], *, limit: int = 64) -> list[Claim]:
        """Claims whose question holds all words of `rare` but one: a typo or one changed word."""
        if not rare:
            return []
        if len(rare) == 1:
            return self.db.search.holding_all(owner, [rare], limit)
        groups = [[w for w in rare if w != left_out] for left_out in rare]
        return self.db.search.holding_all(owner, groups, limit)

    def ranked_claims(
        self,
        owner: str,
        words: Sequence[str],
        combine: Combine,
        limit: int,
        *,
        live_at: float | None = None,
    ) -> list[Claim]:
        """The owner's claims whose question or answer holds every one (or any one) of
        `words`, best first; with `live_at`, only those live and unexpired then."""
        return self.db.search.ranked(owner, words, combine, limit, live_at=live_at)

    def rarest_words(
        self, owner: str, words: Sequence[str], *, keep: int = 3
    ) -> tuple[list[tuple[str, int]], frozenset[str]]:
        """The `keep` rarest of `words` among the owner's questions with their counts, and
        which of `words` occur in some question at all (when not every one does, no question
        can hold them all).

        Looking candidates up by their rarest words keeps FTS5 off the long doclists of
        common words, which are what make a lookup slow.
        """
        unique = sorted(set(words))
        if not unique:
            return [], frozenset()
        marks = ", ".join("?" for _ in unique)
        counts = dict(
            self.fetchall(
                f"SELECT term, n FROM term_counts WHERE owner = ? AND term IN ({marks})",
                (owner, *unique),
            )
        )
        known = sorted(counts, key=lambda w: (counts[w], w))[:keep]
        return [(word, counts[word]) for word in known], frozenset(counts)

    def compact_claim_index(self) -> None:
        """Merge the claims' full-text index after a bulk write, in one write transaction."""
        with self.db.write():
            self.db.search.compact()

    # -- search keys ---------------------------------------------------------------------------

    def rekey_claims(self, version: int) -> int:
        """Bring every claim's search key to the matcher of `version`; return how many changed.

        A store written by an older staffstore keeps the content words its matcher made; the
        gate looks candidates up by the current matcher's words, so a stale key would hide a
        claim from its own question. Runs once per version: one transaction that recomputes the
        keys (the FTS5 index follows by trigger), recounts the words and records the version.
        """
        if self._key_version() == version:
            return 0
        with self.db.write():
            changed = 0
            if self._key_version() != version:  # another process may have done it meanwhile
                changed = self._rewrite_keys()
                self.rekey_jobs()  # a job's task key is made by the same matcher
                self.db.recount_terms()
                self.db.execute(
                    "INSERT INTO store_settings (name, value) VALUES (?, ?) "
                    "ON CONFLICT (name) DO UPDATE SET value = excluded.value",
                    (_KEY_VERSION_SETTING, str(version)),
                )
        return changed

    def _key_version(self) -> int | None:
        rows = self.fetchall(
            "SELECT value FROM store_settings WHERE name = ?", (_KEY_VERSION_SETTING,)
        )
        return int(rows[0][0]) if rows else None

    def _rewrite_keys(self) -> int:
        stale = [
            (key, rowid)
            for rowid, question, old_key in self.fetchall(
                "SELECT rowid, question, search_key FROM claims"
            )
            if (key := normalize(question).key) != old_key
        ]
        self.db.executemany("UPDATE claims SET search_key = ? WHERE rowid = ?", stale)
        self.db.search.after_rekey([rowid for _key, rowid in stale])
        return len(stale)

    # -- the HTTP proxy's turns and kept answers -----------------------------------------------
    # A kept answer is one the proxy paid for, addressed by a hash of the request, so the very
    # same request from the same owner is served again without a model call.

    def owner_text_bytes(self, owner: str) -> int:
        """The bytes of text (UTF-8) the store holds for `owner`: receipts' questions, answers
        and errors, session messages, kept answers and their prompts, and claims. A full read
        of the owner's rows: call it once and count on from there."""
        size = "coalesce(sum(" + self.db.text_bytes("{}") + "), 0)"
        row = self.fetchall(
            f"SELECT (SELECT {size.format('question')} + {size.format('answer')} "
            f"  + {size.format('error')} FROM receipts WHERE owner = ?)"
            f" + (SELECT {size.format('m.content')} FROM messages m "
            "    JOIN sessions s ON s.id = m.session_id WHERE s.owner = ?)"
            f" + (SELECT {size.format('answer')} FROM kept_answers WHERE owner = ?)"
            f" + (SELECT {size.format('prompt')} FROM kept_prompts WHERE owner = ?)"
            f" + (SELECT {size.format('question')} + {size.format('answer')} "
            "    FROM claims WHERE owner = ?)",
            (owner, owner, owner, owner, owner),
        )
        return int(row[0][0])

    def ensure_session_id(self, owner: str, name: str, *, now: datetime | None = None) -> str:
        """Create-or-get the id of the owner's session called `name`, in one statement."""
        # An upsert that changes nothing, so that RETURNING yields the row on a conflict too.
        rows = self.fetchall(
            "INSERT INTO sessions (id, owner, name, created_at) VALUES (?, ?, ?, ?) "
            "ON CONFLICT (owner, name) DO UPDATE SET name = excluded.name RETURNING id",
            (uuid.uuid4().hex, owner, name, now_epoch(now)),
        )
        return str(rows[0][0])

    def kept_answer(
        self,
        owner: str,
        namespace: str,
        request_hash: str,
        *,
        max_age: float | None = None,
        now: datetime | None = None,
    ) -> KeptAnswer | None:
        """The owner's unexpired kept answer to this request, no older than `max_age` seconds."""
        moment = now_epoch(now)
        fresh, fresh_params = kept_fresh("k", moment, max_age)
        sql = (
            "SELECT receipt_id, model, answer, created_at, expires_at, cost_usd "
            "FROM kept_answers k WHERE owner = ? AND namespace = ? AND request_hash = ?" + fresh
        )
        params: list[Any] = [owner, namespace, request_hash, *fresh_params]
        rows = self.fetchall(sql, params)
        for receipt_id, model, answer, created_at, expires_at, cost_usd in rows:
            return KeptAnswer(
                owner=owner, namespace=namespace, request_hash=request_hash,
                receipt_id=receipt_id, model=model, answer=answer,
                created_at=datetime_at(created_at), expires_at=datetime_of(expires_at),
                cost_usd=cost_usd,
            )  # fmt: skip
        return None

    # A pending call is a lease on paying for one request (owner, namespace, request hash, as
    # a kept answer is addressed): its holder calls the model while identical requests wait
    # for the answer it keeps. Each operation is one statement, atomic on both backends by
    # itself, so none takes the store's write lock: a claim must not queue behind every
    # replica's group commits, and claims of different requests never wait for each other.

    def claim_call(
        self,
        owner: str,
        namespace: str,
        request_hash: str,
        holder: str,
        *,
        ttl: float,
        now: datetime | None = None,
    ) -> bool:
        """Claim the call for `holder` for `ttl` seconds; return whether it won. It wins when
        nobody holds the call, or the lease has run out (its holder died or overran), or it
        holds the call already (claiming again renews the lease)."""
        moment = now_epoch(now)
        rows = self.fetchall(
            "INSERT INTO pending_calls (owner, namespace, request_hash, holder, expires_at) "
            "VALUES (?, ?, ?, ?, ?) "
            "ON CONFLICT (owner, namespace, request_hash) DO UPDATE SET "
            "holder = excluded.holder, expires_at = excluded.expires_at "
            "WHERE pending_calls.expires_at <= ? OR pending_calls.holder = excluded.holder "
            "RETURNING holder",
            (owner, namespace, request_hash, holder, moment + ttl, moment),
        )
        return bool(rows)

    def call_holder(
        self, owner: str, namespace: str, request_hash: str, *, now: datetime | None = None
    ) -> str | None:
        """Who holds the call now, or None when nobody does (or the lease ran out)."""
        rows = self.fetchall(
            "SELECT holder FROM pending_calls "
            "WHERE owner = ? AND namespace = ? AND request_hash = ? AND expires_at > ?",
            (owner, namespace, request_hash, now_epoch(now)),
        )
        return str(rows[0][0]) if rows else None

    def release_call(self, owner: str, namespace: str, request_hash: str, holder: str) -> bool:
        """Give the call up, if `holder` still holds it (a lease that ran out may be another's
        by now); return whether it did."""
        deleted = self.db.execute(
            "DELETE FROM pending_calls "
            "WHERE owner = ? AND namespace = ? AND request_hash = ? AND holder = ?",
            (owner, namespace, request_hash, holder),
        )
        return deleted > 0

    def claim_origin(self, owner: str, claim_id: str) -> PaidOrigin | None:
        """The paid call the owner's claim was promoted from, or None (a job's or a person's
        claim, or one promoted before staffstore kept the link)."""
        rows = self.fetchall(
            "SELECT receipt_id, cost_usd FROM claim_origins WHERE claim_id = ? AND owner = ?",
            (claim_id, owner),
        )
        return PaidOrigin(rows[0][0], rows[0][1]) if rows else None

    def _session_of(self, record: TurnRecord, now: datetime | None) -> str | None:
        if record.session_id is None and record.session_name is not None:
            return self.ensure_session_id(record.receipt.owner, record.session_name, now=now)
        return record.session_id

    def record_turns(
        self, records: Sequence[TurnRecord], *, now: datetime | None = None
    ) -> list[str | None]:
        """Write many turns (receipts, session messages, kept answers) in one transaction.

        A record naming its session by `session_name` (no `session_id`) gets the session
        created or found in the same transaction. Returns each record's session id. One
        statement per table for the whole batch, so a busy proxy commits many turns at once.
        The connection is shared: a caller running turns concurrently must serialize its
        writes (the proxy has one writer task), or one BEGIN meets another's transaction.
        """
        moment = now_epoch(now)
        # A kept answer costs what the call in its own record was paid (see KeptAnswer.cost_usd).
        kept = [
            replace(record.kept, cost_usd=record.receipt.cost_usd)
            if record.kept.receipt_id == record.receipt.id
            else record.kept
            for record in records
            if record.kept is not None
        ]
        with self.db.write():
            session_ids = [self._session_of(record, now) for record in records]
            messages = [
                (session_id, role, content, moment)
                for record, session_id in zip(records, session_ids, strict=True)
                if session_id is not None
                for role, content in record.messages
            ]
            if messages:
                self.db.executemany(
                    "INSERT INTO messages (session_id, role, content, created_at) "
                    "VALUES (?, ?, ?, ?)",
                    messages,
                )
                self.index_vault(m[0] for m in messages)
            recalls = [
                (int(message_id), session_id)
                for record, session_id in zip(records, session_ids, strict=True)
                if session_id is not None
                for message_id in record.recalled
            ]
            if recalls:  # scoped by the session: a record names only its own messages
                self.db.executemany(
                    "UPDATE messages SET recalls = recalls + 1 WHERE id = ? AND session_id = ?",
                    recalls,
                )
            if kept:
                self.db.executemany(
                    "INSERT INTO kept_answers (owner, namespace, request_hash, receipt_id, "
                    "model, answer, created_at, expires_at, cost_usd) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) "
                    "ON CONFLICT (owner, namespace, request_hash) DO UPDATE SET "
                    "receipt_id = excluded.receipt_id, model = excluded.model, "
                    "answer = excluded.answer, created_at = excluded.created_at, "
                    "expires_at = excluded.expires_at, cost_usd = excluded.cost_usd",
                    [(k.owner, k.namespace, k.request_hash, k.receipt_id, k.model, k.answer,
                      k.created_at.timestamp(), epoch_of(k.expires_at), k.cost_usd)
                     for k in kept],
                )  # fmt: skip
                prompts = [
                    (k.owner, k.namespace, k.request_hash, k.prompt, normalize(k.prompt.text).key)
                    for k in kept
                    if k.prompt is not None
                ]
                if prompts:  # beside their kept answers, in the same transaction
                    self.write_kept_prompts(prompts)
            placeholders = ", ".join("?" for _ in RECEIPT_COLUMNS)
            self.db.executemany(
                f"INSERT INTO receipts ({', '.join(RECEIPT_COLUMNS)}) VALUES ({placeholders})",
                [
                    receipt_row(record.receipt.model_copy(update={"session_id": session_id}))
                    for record, session_id in zip(records, session_ids, strict=True)
                ],
            )
        return session_ids


@dataclass(frozen=True)
class KeptAnswer:
    """A paid answer kept for its request: served again for an exact repeat of that request,
    and, with its prompt, for a reworded context-free question the gate accepts."""

    owner: str
    namespace: str
    request_hash: str
    receipt_id: str
    model: str | None
    answer: str
    created_at: datetime
    expires_at: datetime | None = None
    #: What the call that paid for it cost (None: unknown); copied from its receipt when it
    #: is kept, so a hit's estimate of the cost avoided outlives that receipt.
    cost_usd: float | None = None
    #: The prompt of a context-free request, kept so that a reworded question asked under
    #: the same context may reuse this answer (kept_prompts.py); None for any other request.
    prompt: KeptPrompt | None = None

    @property
    def origin(self) -> PaidOrigin:
        """The paid call this answer came from, for the receipts of the hits it serves."""
        return PaidOrigin(self.receipt_id, self.cost_usd)


@dataclass(frozen=True)
class PaidOrigin:
    """The paid call whose answer a hit serves: its receipt, and what it cost (None: unknown).
    Its cost is the estimate of what the hit avoided (Receipt.avoided_cost_usd)."""

    receipt_id: str
    cost_usd: float | None


@dataclass(frozen=True)
class TurnRecord:
    """What one turn writes: its receipt, the messages it adds to a session, a kept answer."""

    receipt: Receipt
    session_id: str | None = None
    messages: Sequence[tuple[Role, str]] = ()
    kept: KeptAnswer | None = None
    #: The name of the receipt owner's session, to create or find while writing, when
    #: `session_id` is not known yet (saves a round trip before the turn is answered).
    session_name: str | None = None
    #: The session's older messages the turn's prompt recalled (vault hits): each one's
    #: recall count goes up by one.
    recalled: Sequence[int] = ()
