"""StaffStore: the durable state staffstore answers from, in a SQLite file or PostgreSQL.

Sessions keep the recent tail; claims are verified findings with provenance, found by
full-text search (search.py); artifacts are content-addressed task results; receipts record
every turn; jobs record the work runners did (jobs.py). Every read that returns an owner's
data takes the owner: nothing here lets one owner see another's rows.

One class for both backends: its operations are SyncStore's (and their SQL is written once,
database.py), run by an engine that owns the connections, SQLite's threads (sqlite_engine.py)
or a PostgreSQL pool (postgres.py). The store's URL picks the engine. Writes, and reads made
in order to write, run through run_sync; the lookups on a request's path (the gate's, the
kept answers') through run_read, which on SQLite never waits behind a write.
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from contextlib import asynccontextmanager
from datetime import datetime
from pathlib import Path
from typing import Any, NamedTuple, Protocol, TypeVar

from ..errors import NotFoundError
from ..identity import bytes_hash
from ..models import Claim, ClaimStatus, Message, NewClaim, Receipt, Role
from ..text.lexicon import STOPWORDS, tokens
from ..text.matching import KEY_VERSION, normalize
from .database import Database
from .jobs import AsyncJobs
from .location import StoreLocation, parse_location
from .memory_tables import AsyncMemoryTables
from .receipt_queries import AsyncReceiptQueries
from .retention import AsyncRetention
from .rows import (
    CLAIM_COLUMNS,
    RECEIPT_COLUMNS,
    as_of,
    claim_id,
    datetime_at,
    epoch_of,
    now_epoch,
    receipt_row,
    row_to_claim,
    row_to_receipt,
)
from .state_tables import AsyncStateTables
from .story_tables import AsyncStoryTables
from .sync_store import KeptAnswer, PaidOrigin, SyncStore, TurnRecord
from .vault_tables import AsyncVaultTables

#: The matcher without its cache, for the questions of stored claims: each is normalised once
#: on its way in, and through the cache a long import would fill it (some 4 KB an entry, up to
#: 65,536 entries, 240 MB) and push out the entries that repeated turns reuse.
_uncached_normalize = normalize.__wrapped__
#: How long a write waits for another connection's write lock before it gives up, in seconds.
DEFAULT_LOCK_TIMEOUT = 5.0

T = TypeVar("T")


class Engine(Protocol):
    """What owns a store's connections: runs synchronous work against one of them."""

    def run(self, work: Callable[[Database], T]) -> Awaitable[T]: ...

    def run_read(self, work: Callable[[Database], T]) -> Awaitable[T]: ...

    async def defer_checkpoints(self, fallback_pages: int) -> None: ...

    async def close(self) -> None: ...


class StaffStore(
    AsyncStateTables,
    AsyncMemoryTables,
    AsyncStoryTables,
    AsyncVaultTables,
    AsyncJobs,
    AsyncReceiptQueries,
    AsyncRetention,
):
    """The durable store. Open it with `async with StaffStore.open(path_or_url) as store:`."""

    def __init__(
        self, engine: Engine, location: StoreLocation, lock_timeout: float = DEFAULT_LOCK_TIMEOUT
    ) -> None:
        self._engine = engine
        self.location = location
        #: The SQLite file (None for a PostgreSQL store).
        self.path = location.path
        #: Where the store is, for messages: the file, or the URL without its password.
        self.label = location.label
        self.lock_timeout = lock_timeout

    # -- opening -------------------------------------------------------------------------------

    @classmethod
    @asynccontextmanager
    async def open(
        cls,
        where: str | Path,
        *,
        lock_timeout: float = DEFAULT_LOCK_TIMEOUT,
        create: bool = True,
        migrate: bool = False,
    ) -> AsyncIterator[StaffStore]:
        """Open the store at `where` (a SQLite path or sqlite:///PATH, or postgresql://...),
        and close it after.

        A SQLite file is created and migrated as needed; with `create=False` a missing file
        is MissingStoreError rather than a new store (a command that only reads must not
        leave an empty database behind a mistyped path). A PostgreSQL store is migrated only
        with `migrate=True` (`staffstore migrate`); otherwise a schema behind this
        staffstore's is a StoreError that says to run it.
        """
        store = await cls.connect(where, lock_timeout=lock_timeout, create=create, migrate=migrate)
        try:
            yield store
        finally:
            await store.close()

    @classmethod
    async def connect(
        cls,
        where: str | Path,
        *,
        lock_timeout: float = DEFAULT_LOCK_TIMEOUT,
        create: bool = True,
        migrate: bool = False,
    ) -> StaffStore:
        """Open the store at `where` (see open); the caller must `await store.close()`.

        A write waits up to `lock_timeout` seconds for another connection's write lock, then
        raises StoreBusyError. Another program's SQLite file is ForeignStoreError, untouched.
        """
        location = parse_location(where)
        engine: Engine
        if location.dialect == "postgresql":
            from .postgres import PostgresEngine

            engine = PostgresEngine(location, lock_timeout)
            await engine.open(migrate=migrate)
        else:
            from .sqlite_engine import SqliteEngine

            assert location.path is not None
            engine = await SqliteEngine.connect(
                location.path, lock_timeout=lock_timeout, create=create
            )
        store = cls(engine, location, lock_timeout)
        try:
            await store.run_sync(lambda sync: sync.rekey_claims(KEY_VERSION))
        except BaseException:
            await engine.close()
            raise
        return store

    async def close(self) -> None:
        await self._engine.close()

    async def defer_checkpoints(self, fallback_pages: int) -> None:
        """SQLite: leave WAL checkpoints to another connection (see checkpointer.py);
        checkpoint here only once the WAL holds `fallback_pages` pages. PostgreSQL: nothing."""
        await self._engine.defer_checkpoints(fallback_pages)

    async def _fetchall(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        return await self.run_sync(lambda sync: sync.fetchall(sql, params))

    async def _fetchone(self, sql: str, params: Sequence[Any] = ()) -> Any:
        rows = await self._fetchall(sql, params)
        return rows[0] if rows else None

    async def _execute(self, sql: str, params: Sequence[Any] = ()) -> int:
        return await self.run_sync(lambda sync: sync.db.execute(sql, params))

    async def run_sync(self, work: Callable[[SyncStore], T]) -> T:
        """Run `work` against one connection on the engine's thread and return its result:
        however many statements it runs, the caller waits for one round trip, not one per
        statement.

        `work` must not wait on anything but the database: other queries wait for it (on
        SQLite, every other call of run_sync, whose one writing connection it holds).
        """
        return await self._engine.run(lambda db: work(SyncStore(db)))

    async def run_read(self, work: Callable[[SyncStore], T]) -> T:
        """Run `work`, which only reads, as run_sync runs work, but where no write holds it up:
        on SQLite the first of the store's read connections free, each on a thread of its own
        (sqlite_engine.py), on PostgreSQL a pooled connection as for any call.

        It sees every write awaited before it was called. Work that writes, or reads in order
        to write (a check before an insert, a compare-and-swap), belongs in run_sync: here
        `db.write()` raises RuntimeError, and on SQLite the connection refuses any write.
        """
        return await self._engine.run_read(lambda db: work(SyncStore(db)))

    # -- sessions ------------------------------------------------------------------------------

    async def ensure_session(self, owner: str, name: str, *, now: datetime | None = None) -> str:
        """Return the id of the owner's session called `name`, creating it if needed."""
        row = await self._fetchone(
            "SELECT id FROM sessions WHERE owner = ? AND name = ?", (owner, name)
        )
        if row:
            return str(row[0])
        session_id = uuid.uuid4().hex
        await self._execute(
            "INSERT INTO sessions (id, owner, name, created_at) VALUES (?, ?, ?, ?) "
            "ON CONFLICT DO NOTHING",
            (session_id, owner, name, now_epoch(now)),
        )
        row = await self._fetchone(
            "SELECT id FROM sessions WHERE owner = ? AND name = ?", (owner, name)
        )
        return str(row[0])

    async def append_messages(
        self, session_id: str, messages: Iterable[tuple[Role, str]], *, now: datetime | None = None
    ) -> None:
        """Append messages to a session, in order, in one transaction."""
        moment = now_epoch(now)
        rows = [(session_id, role, content, moment) for role, content in messages]

        def work(sync: SyncStore) -> None:
            with sync.db.write():
                sync.db.executemany(
                    "INSERT INTO messages (session_id, role, content, created_at) "
                    "VALUES (?, ?, ?, ?)",
                    rows,
                )
                sync.index_vault([session_id])

        await self.run_sync(work)

    async def recent_messages(self, session_id: str, limit: int = 8) -> list[Message]:
        """The last `limit` messages of a session, oldest first."""
        rows = await self._fetchall(
            "SELECT role, content FROM messages WHERE session_id = ? ORDER BY id DESC LIMIT ?",
            (session_id, limit),
        )
        return [Message(role=role, content=content) for role, content in reversed(rows)]

    # -- claims --------------------------------------------------------------------------------

    async def ensure_claim(self, claim: NewClaim, *, now: datetime | None = None) -> Claim:
        """Store a claim once; storing the same claim again returns the stored one."""
        ((stored, _added),) = await self.ensure_claims([claim], now=now)
        return stored

    async def ensure_claims(
        self, claims: Iterable[NewClaim], *, now: datetime | None = None
    ) -> list[tuple[Claim, bool]]:
        """Store many claims in one transaction; each comes back with whether it was new.

        A claim with a revision supersedes the owner's live claims stored before it that ask
        the same question about the same repository and profile at another revision.
        """
        moment = now_epoch(now)
        # Keys first: normalising is the slow part, and it needs no lock.
        batch = key_claims(claims)
        # Which claims are already stored is read inside the write transaction: read before
        # it, another process (a second import, `claims add`, the proxy) could store one of
        # them in between, and the insert would then break the unique id.
        stored, inserted = await self.run_sync(
            lambda sync: _insert_claims(sync, batch, moment, reading=CLAIM_COLUMNS)
        )
        made: dict[str, Claim] = {row[0]: row_to_claim(row) for row in stored.values()}
        answer, seen = [], set()
        for identity, claim, _key in batch:
            if identity not in made:
                made[identity] = Claim(
                    **claim.model_dump(), id=identity, status="live", created_at=datetime_at(moment)
                )
            # A repeat within the batch is not new: only the first of an identity inserted.
            answer.append((made[identity], identity in inserted and identity not in seen))
            seen.add(identity)
        return answer

    async def add_claims(self, batch: Sequence[KeyedClaim], *, now: datetime | None = None) -> int:
        """Store claims keyed by key_claims in one transaction, as ensure_claims stores them;
        return how many were new (a repeat within the batch is not). What an import needs:
        without the Claim ensure_claims makes of each, and with the keys made beforehand, so
        an import keys its next batch while this one is written (importer.store_claims)."""
        moment = now_epoch(now)
        _stored, inserted = await self.run_sync(
            lambda sync: _insert_claims(sync, batch, moment, reading="id")
        )
        return len(inserted)

    async def compact_claim_index(self) -> None:
        """Merge the claims' full-text index into the shape lookups read fastest: worth it
        after a bulk import (importer.store_claims does it), a waste after a few claims."""
        await self.run_sync(lambda sync: sync.compact_claim_index())

    async def get_claim(self, owner: str, claim_id: str) -> Claim:
        """The owner's claim with this id (a unique prefix of at least 6 characters will do)."""
        if len(claim_id) < 6:
            raise NotFoundError(f"claim id {claim_id!r} is too short (give at least 6 characters)")
        rows = await self._fetchall(
            f"SELECT {CLAIM_COLUMNS} FROM claims WHERE owner = ? AND id >= ? AND id < ? LIMIT 2",
            (owner, claim_id, claim_id + "\uffff"),
        )
        if len(rows) != 1:
            problem = "is ambiguous" if rows else "was not found"
            raise NotFoundError(f"claim {claim_id!r} {problem} for owner {owner!r}")
        return row_to_claim(rows[0])

    async def list_claims(
        self,
        owner: str,
        *,
        status: ClaimStatus | None = None,
        limit: int = 50,
        offset: int = 0,
        now: datetime | None = None,
    ) -> list[Claim]:
        """The owner's claims, newest first, optionally of one status.

        A live claim past its expiry is listed as expired: expiry is a fact of the clock, and
        nothing has to run to make it true.
        """
        moment = now_epoch(now)
        sql = f"SELECT {CLAIM_COLUMNS} FROM claims WHERE owner = ?"
        params: list[Any] = [owner]
        if status == "expired":
            sql += " AND (status = 'expired' OR (status = 'live' AND expires_at <= ?))"
            params.append(moment)
        elif status == "live":
            sql += " AND status = 'live' AND (expires_at IS NULL OR expires_at > ?)"
            params.append(moment)
        elif status is not None:
            sql += " AND status = ?"
            params.append(status)
        sql += " ORDER BY created_at DESC, rowid DESC LIMIT ? OFFSET ?"
        params += [limit, offset]
        claims = [row_to_claim(row) for row in await self._fetchall(sql, params)]
        return [as_of(claim, moment) for claim in claims]

    async def search_claims(self, owner: str, text: str, *, limit: int = 20) -> list[Claim]:
        """Full-text search of the owner's claims (questions and answers), best first.

        Every word of `text` must appear; FTS5 operators in it are searched for as words.
        """
        words = [w for w in tokens(text) if any(ch.isalnum() for ch in w)]
        if not words:
            return []
        return await self.run_read(lambda sync: sync.ranked_claims(owner, words, "all", limit))

    async def related_claims(
        self, owner: str, text: str, *, limit: int = 5, now: datetime | None = None
    ) -> list[Claim]:
        """The owner's live, unexpired claims that share the most words with `text`."""
        # The text's own words, not the gate's folded forms: FTS5 indexes the text as written.
        words = sorted(
            {w for w in tokens(text) if w not in STOPWORDS and any(ch.isalnum() for ch in w)}
        )
        if not words or limit <= 0:
            return []
        moment = now_epoch(now)
        return await self.run_read(
            lambda sync: sync.ranked_claims(owner, words, "any", limit, live_at=moment)
        )

    async def retract_claim(self, owner: str, claim_id: str) -> Claim:
        """Mark the owner's claim retracted: it stays on record but is never served again."""
        claim = await self.get_claim(owner, claim_id)
        await self._execute(
            "UPDATE claims SET status = 'retracted' WHERE owner = ? AND id = ?", (owner, claim.id)
        )
        return claim.model_copy(update={"status": "retracted"})

    async def set_claim_status(
        self,
        owner: str,
        claim_id: str,
        status: ClaimStatus,
        *,
        superseded_by: str | None = None,
    ) -> Claim:
        """Set the owner's claim's status (and what supersedes it); return the claim as now."""
        claim = await self.get_claim(owner, claim_id)
        await self._execute(
            "UPDATE claims SET status = ?, superseded_by = ? WHERE owner = ? AND id = ?",
            (status, superseded_by, owner, claim.id),
        )
        return claim.model_copy(update={"status": status, "superseded_by": superseded_by})

    async def count_claims(self, owner: str | None = None) -> int:
        if owner is None:
            row = await self._fetchone("SELECT count(*) FROM claims")
        else:
            row = await self._fetchone("SELECT count(*) FROM claims WHERE owner = ?", (owner,))
        return int(row[0])

    # -- artifacts -----------------------------------------------------------------------------

    async def ensure_artifact(
        self,
        owner: str,
        content: bytes,
        *,
        kind: str = "text",
        job_id: str | None = None,
        now: datetime | None = None,
    ) -> str:
        """Store a task result by its SHA-256 and return that address; storing twice is a no-op."""
        address = bytes_hash(content)
        await self._execute(
            "INSERT INTO artifacts (owner, id, kind, job_id, content, size, created_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
            (owner, address, kind, job_id, content, len(content), now_epoch(now)),
        )
        return address

    async def get_artifact(self, owner: str, address: str) -> bytes:
        row = await self._fetchone(
            "SELECT content FROM artifacts WHERE owner = ? AND id = ?", (owner, address)
        )
        if row is None:
            raise NotFoundError(f"artifact {address!r} was not found for owner {owner!r}")
        return bytes(row[0])

    # -- receipts ------------------------------------------------------------------------------

    async def add_receipt(self, receipt: Receipt) -> None:
        """Record one turn's receipt."""
        placeholders = ", ".join("?" for _ in RECEIPT_COLUMNS)
        await self._execute(
            f"INSERT INTO receipts ({', '.join(RECEIPT_COLUMNS)}) VALUES ({placeholders})",
            receipt_row(receipt),
        )

    async def get_receipt(self, owner: str, receipt_id: str) -> Receipt:
        row = await self._fetchone(
            f"SELECT {', '.join(RECEIPT_COLUMNS)} FROM receipts WHERE owner = ? AND id = ?",
            (owner, receipt_id),
        )
        if row is None:
            raise NotFoundError(f"receipt {receipt_id!r} was not found for owner {owner!r}")
        return row_to_receipt(row)

    async def ensure_claim_origin(self, owner: str, claim_id: str, origin: PaidOrigin) -> None:
        """Record the paid call a claim was promoted from, once: the first promotion stands.
        The hits the claim serves take its cost as their estimate of the cost avoided."""
        await self._execute(
            "INSERT INTO claim_origins (claim_id, owner, receipt_id, cost_usd) "
            "VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING",
            (claim_id, owner, origin.receipt_id, origin.cost_usd),
        )

    async def claim_origin(self, owner: str, claim_id: str) -> PaidOrigin | None:
        """The paid call the owner's claim was promoted from (see SyncStore.claim_origin)."""
        return await self.run_read(lambda sync: sync.claim_origin(owner, claim_id))

    # -- turns and kept answers (the proxy's and ensure_mouth's; see SyncStore) ------------------

    async def owner_text_bytes(self, owner: str) -> int:
        """The bytes of text the store holds for `owner` (see SyncStore.owner_text_bytes)."""
        return await self.run_sync(lambda sync: sync.owner_text_bytes(owner))

    async def kept_answer(
        self,
        owner: str,
        namespace: str,
        request_hash: str,
        *,
        max_age: float | None = None,
        now: datetime | None = None,
    ) -> KeptAnswer | None:
        """The owner's unexpired kept answer to this request, no older than `max_age` seconds
        (see SyncStore.kept_answer); the proxy and `ensure_mouth` share the table."""
        return await self.run_read(
            lambda sync: sync.kept_answer(owner, namespace, request_hash, max_age=max_age, now=now)
        )

    async def claim_call(
        self,
        owner: str,
        namespace: str,
        request_hash: str,
        holder: str,
        *,
        ttl: float,
        now: datetime | None = None,
        lock_wait: float | None = None,
    ) -> bool:
        """Claim paying for this request for `holder` for `ttl` seconds; whether it won (see
        SyncStore.claim_call). `lock_wait` as in record_turns."""
        return await self.run_sync(
            lambda sync: self._waiting_at_most(
                sync,
                lock_wait,
                lambda: sync.claim_call(owner, namespace, request_hash, holder, ttl=ttl, now=now),
            )
        )

    async def call_holder(
        self, owner: str, namespace: str, request_hash: str, *, now: datetime | None = None
    ) -> str | None:
        """Who holds the call for this request now, or None (see SyncStore.call_holder)."""
        return await self.run_sync(
            lambda sync: sync.call_holder(owner, namespace, request_hash, now=now)
        )

    async def release_call(
        self,
        owner: str,
        namespace: str,
        request_hash: str,
        holder: str,
        *,
        lock_wait: float | None = None,
    ) -> bool:
        """Give the call up if `holder` still holds it (see SyncStore.release_call)."""
        return await self.run_sync(
            lambda sync: self._waiting_at_most(
                sync, lock_wait, lambda: sync.release_call(owner, namespace, request_hash, holder)
            )
        )

    def _waiting_at_most(
        self, sync: SyncStore, lock_wait: float | None, work: Callable[[], T]
    ) -> T:
        """Run `work` (on the store's thread) with its writes waiting at most `lock_wait`
        seconds for another connection's lock (None: the store's lock timeout)."""
        if lock_wait is None or lock_wait == self.lock_timeout:
            return work()
        sync.set_lock_timeout(lock_wait)
        try:
            return work()
        finally:
            sync.set_lock_timeout(self.lock_timeout)

    async def ensure_session_id(self, owner: str, name: str, *, now: datetime | None = None) -> str:
        """ensure_session in one statement, for the proxy's hot path: create-or-get the id."""
        return await self.run_sync(lambda sync: sync.ensure_session_id(owner, name, now=now))

    async def record_turns(
        self,
        records: Sequence[TurnRecord],
        *,
        now: datetime | None = None,
        lock_wait: float | None = None,
    ) -> list[str | None]:
        """Write many turns (receipts, session messages, kept answers) in one transaction,
        committed before this returns; see SyncStore.record_turns.

        `lock_wait` replaces the store's lock timeout for this write (a retry that must not
        hold up the reads queued behind it); StoreBusyError when the lock stays taken.
        """
        return await self.run_sync(
            lambda sync: self._waiting_at_most(
                sync, lock_wait, lambda: sync.record_turns(records, now=now)
            )
        )  # StoreBusyError past the lock timeout


class KeyedClaim(NamedTuple):
    """A claim with its identity and its question's search key, ready to store."""

    id: str
    claim: NewClaim
    key: str


def key_claims(claims: Iterable[NewClaim]) -> list[KeyedClaim]:
    """Each claim with its identity and search key: the slow part of storing claims (each
    question normalised), which needs no connection."""
    claims = list(claims)
    keys = question_keys([claim.question for claim in claims])
    return [
        KeyedClaim(claim_id(claim), claim, key) for claim, key in zip(claims, keys, strict=True)
    ]


def question_keys(questions: Sequence[str]) -> list[str]:
    """The search key of each question, as key_claims computes it: what an import hands to a
    process of its own, since normalising is most of an import's time."""
    return [_uncached_normalize(question).key for question in questions]


def _insert_claims(
    sync: SyncStore, batch: Sequence[KeyedClaim], moment: float, *, reading: str
) -> tuple[dict[str, Any], set[str]]:
    """Insert the claims of `batch` not stored yet, in one write transaction; return the
    rows (the columns `reading` names, id first) of those already stored, by identity, and
    the identities inserted (ensure_claims, add_claims)."""
    db = sync.db
    stored: dict[str, Any] = {}
    inserted: set[str] = set()
    extra = db.search.index_columns()
    with db.write():
        ids = list(dict.fromkeys(identity for identity, _claim, _key in batch))
        # As few statements as the bound-parameter limit allows: each waits for Python's lock
        # while an import keys its next batch (see SqliteDatabase.insert_many).
        for start in range(0, len(ids), db.max_parameters):
            chunk = ids[start : start + db.max_parameters]
            marks = ", ".join("?" for _ in chunk)
            for row in db.fetchall(f"SELECT {reading} FROM claims WHERE id IN ({marks})", chunk):
                stored[row[0]] = row
        rows, supersessions = [], []
        for identity, claim, key in batch:
            if identity in stored or identity in inserted:
                continue
            rows.append(
                (
                    identity, claim.owner, claim.agent, claim.question, claim.answer,
                    claim.source, claim.job_id, claim.repository, claim.profile,
                    claim.revision, claim.inputs_fingerprint, epoch_of(claim.expires_at),
                    moment, key, *db.search.index_values(claim.question, claim.answer, key),
                )
            )  # fmt: skip
            if claim.revision is not None:
                supersessions.append(
                    (identity, claim.owner, key, claim.repository, claim.profile,
                     claim.revision, identity)
                )  # fmt: skip
            inserted.add(identity)
        key_at = 13  # the search key's place in each row
        terms = Counter((row[1], term) for row in rows for term in str(row[key_at]).split())
        db.insert_many(
            "INSERT INTO term_counts (owner, term, n) VALUES (?, ?, ?) "
            "ON CONFLICT (owner, term) DO UPDATE SET n = term_counts.n + excluded.n",
            [(owner, term, n) for (owner, term), n in terms.items()],
        )
        columns = ", ".join((CLAIM_COLUMNS, "search_key", *extra))
        marks = ", ".join(["?"] * 11 + ["'live'", "?", "?", "NULL", "?"] + ["?"] * len(extra))
        db.insert_many(f"INSERT INTO claims ({columns}) VALUES ({marks})", rows)
        db.search.after_insert([str(row[0]) for row in rows])
        # In insertion order, so within one batch the later revision is the one that wins.
        db.executemany(
            "UPDATE claims SET status = 'superseded', superseded_by = ? "
            "WHERE owner = ? AND search_key = ? AND status = 'live' "
            "AND repository IS ? AND profile IS ? AND revision IS NOT ? "
            "AND rowid < (SELECT rowid FROM claims WHERE id = ?)",
            supersessions,
        )
    return stored, inserted
