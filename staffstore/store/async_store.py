"""StaffStore: the durable state staffstore answers from, in one SQLite file.

Sessions keep the recent tail; claims are verified findings with provenance, indexed by FTS5;
artifacts are content-addressed task results; receipts record every turn; jobs record the work
runners did (jobs.py). Every read that
returns an owner's data takes the owner: nothing here lets one owner see another's rows.
The schema is built by numbered migrations applied on open (see migrations.py).
"""

from __future__ import annotations

import sqlite3
import uuid
from collections import Counter
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from contextlib import asynccontextmanager
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

import aiosqlite

from ..errors import (
    CorruptStoreError,
    ForeignStoreError,
    MissingStoreError,
    NotFoundError,
    StoreError,
)
from ..identity import bytes_hash
from ..models import Claim, ClaimStatus, Message, NewClaim, Receipt, Role
from ..text.lexicon import STOPWORDS, tokens
from ..text.matching import KEY_VERSION, normalize
from .jobs import AsyncJobs
from .migrations import APPLICATION_ID, MIGRATIONS
from .receipt_queries import AsyncReceiptQueries
from .retention import AsyncRetention
from .rows import (
    CLAIM_COLUMNS,
    RECEIPT_COLUMNS,
    as_of,
    busy_or,
    claim_id,
    damaged,
    datetime_at,
    epoch_of,
    fts_phrase,
    now_epoch,
    receipt_row,
    row_to_claim,
    row_to_receipt,
)
from .state_tables import AsyncStateTables
from .sync_store import KeptAnswer, PaidOrigin, SyncStore, TurnRecord

#: The matcher without its cache, for the questions of stored claims: each is normalised once
#: on its way in, and through the cache a long import would fill it (some 4 KB an entry, up to
#: 65,536 entries, 240 MB) and push out the entries that repeated turns reuse.
_uncached_normalize = normalize.__wrapped__
#: How long a write waits for another connection's write lock before it gives up, in seconds.
DEFAULT_LOCK_TIMEOUT = 5.0

T = TypeVar("T")


def _check_not_directory(path: Path) -> None:
    # A stat, never an open: closing any descriptor of the database file drops every POSIX
    # lock this process holds on it, a server's connection's included, and another process
    # closing its own connection then deletes the WAL the server still commits to ("How To
    # Corrupt An SQLite Database File", 2.2). Whether the file is SQLite's at all, SQLite
    # itself says when _prepare first reads it (rows.damaged names the answer).
    if path.is_dir():
        raise StoreError(f"{path} is a directory, not a database file")


class StaffStore(AsyncStateTables, AsyncJobs, AsyncReceiptQueries, AsyncRetention):
    """The durable store. Open it with `async with StaffStore.open(path) as store:`."""

    def __init__(
        self, db: aiosqlite.Connection, path: Path, lock_timeout: float = DEFAULT_LOCK_TIMEOUT
    ) -> None:
        self._db = db
        self.path = path
        self.lock_timeout = lock_timeout

    # -- opening -------------------------------------------------------------------------------

    @classmethod
    @asynccontextmanager
    async def open(
        cls, path: str | Path, *, lock_timeout: float = DEFAULT_LOCK_TIMEOUT, create: bool = True
    ) -> AsyncIterator[StaffStore]:
        """Open (creating and migrating as needed) the store at `path`, and close it after.

        With `create=False` a missing file is MissingStoreError rather than a new store: a
        command that only reads must not leave an empty database behind a mistyped path.
        """
        store = await cls.connect(path, lock_timeout=lock_timeout, create=create)
        try:
            yield store
        finally:
            await store.close()

    @classmethod
    async def connect(
        cls, path: str | Path, *, lock_timeout: float = DEFAULT_LOCK_TIMEOUT, create: bool = True
    ) -> StaffStore:
        """Open the store at `path`; the caller must `await store.close()`.

        A write waits up to `lock_timeout` seconds for another connection's write lock, then
        raises StoreBusyError. Another program's SQLite file is ForeignStoreError, untouched.
        """
        path = Path(path).expanduser()
        if not create and not path.exists():
            raise MissingStoreError(f"no database at {path} (check --db or $STAFFSTORE_DB)")
        _check_not_directory(path)
        if not path.parent.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
        try:
            db = await aiosqlite.connect(path, isolation_level=None)
        except sqlite3.Error as error:
            raise StoreError(f"cannot open {path}: {error}") from error
        store = cls(db, path, lock_timeout)
        try:
            await store._prepare()
        except sqlite3.DatabaseError as error:
            await db.close()
            raise CorruptStoreError(
                f"{path} is damaged or not a staffstore database: {error}"
            ) from error
        except BaseException:
            await db.close()
            raise
        return store

    async def _prepare(self) -> None:
        await self._db.execute(f"PRAGMA busy_timeout = {round(self.lock_timeout * 1000)}")
        # Before anything that writes: WAL mode alone would change another program's file.
        # Its first read of the file, so a file that is not SQLite's at all fails here too.
        await self._check_ours()
        await self._db.execute("PRAGMA journal_mode = WAL")
        await self._db.execute("PRAGMA synchronous = NORMAL")
        await self._db.execute("PRAGMA foreign_keys = ON")
        # The gate reads index and claim pages at random: a larger page cache and memory-mapped
        # reads keep its slowest lookups from waiting on read() calls.
        await self._db.execute("PRAGMA cache_size = -65536")  # 64 MiB
        await self._db.execute("PRAGMA mmap_size = 268435456")  # 256 MiB
        await self.migrate()
        await self.run_sync(lambda sync: sync.rekey_claims(KEY_VERSION))

    async def _check_ours(self) -> None:
        """Refuse a SQLite file another program made, before anything is written to it.

        Ours carry APPLICATION_ID; a file without any mark is new (no tables) or was made by
        a staffstore from before the mark (its schema version and tables say so).
        """
        mark = await self._pragma_int("application_id")
        if mark == APPLICATION_ID:
            return
        if mark == 0:
            rows = await self._fetchall("SELECT name FROM sqlite_master WHERE type = 'table'")
            tables = {str(row[0]) for row in rows}
            if not tables or (
                await self._pragma_int("user_version") > 0 and {"claims", "receipts"} <= tables
            ):
                return
        raise ForeignStoreError(
            f"{self.path} is another program's SQLite database, not a staffstore one "
            "(left untouched; pass another --db)"
        )

    async def _pragma_int(self, name: str) -> int:
        row = await self._fetchone(f"PRAGMA {name}")
        return int(row[0]) if row else 0

    async def migrate(self) -> int:
        """Apply the migrations this file has not seen yet, and mark the file as staffstore's
        (PRAGMA application_id); return the schema version."""
        version = await self._schema_version()
        marked = await self._pragma_int("application_id") == APPLICATION_ID
        while version < len(MIGRATIONS) or not marked:
            async with self._transaction():
                # Read again under the write lock: another process opening the same new file
                # may have applied this step while we waited for it.
                version = await self._schema_version()
                if not marked:
                    await self._db.execute(f"PRAGMA application_id = {APPLICATION_ID}")
                    marked = True
                if version < len(MIGRATIONS):
                    for statement in MIGRATIONS[version]:
                        await self._db.execute(statement)
                    version += 1
                    await self._db.execute(f"PRAGMA user_version = {version}")
        return len(MIGRATIONS)

    async def _schema_version(self) -> int:
        async with self._db.execute("PRAGMA user_version") as cursor:
            row = await cursor.fetchone()
        version = int(row[0]) if row else 0
        if version > len(MIGRATIONS):
            raise StoreError(
                f"{self.path} was written by a newer staffstore (schema {version}); "
                "upgrade staffstore to open it"
            )
        return version

    async def close(self) -> None:
        await self._db.close()

    async def defer_checkpoints(self, fallback_pages: int) -> None:
        """Leave WAL checkpoints to another connection (see checkpointer.py); checkpoint here
        only once the WAL holds `fallback_pages` pages."""
        await self._db.execute(f"PRAGMA wal_autocheckpoint = {int(fallback_pages)}")

    async def _fetchall(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        # One trip to the database thread; execute, fetchall and close would be three.
        try:
            return list(await self._db.execute_fetchall(sql, params))
        except sqlite3.DatabaseError as error:
            raise damaged(self.path, error) from error

    async def _fetchone(self, sql: str, params: Sequence[Any] = ()) -> Any:
        rows = await self._fetchall(sql, params)
        return rows[0] if rows else None

    async def run_sync(self, work: Callable[[SyncStore], T]) -> T:
        """Run `work` on the store's database thread and return its result: however many
        statements it runs, the caller waits for one round trip, not one per statement.

        `work` must not wait on anything but the database: every other query waits for it.
        """

        def on_thread() -> T:
            return work(SyncStore(self._db._conn, self.path))

        # aiosqlite has no public call for this; _execute (untyped) queues a function for the
        # thread that owns the connection, as each of aiosqlite's own methods does.
        result: T = await self._db._execute(on_thread)  # type: ignore[no-untyped-call]
        return result

    # -- sessions ------------------------------------------------------------------------------

    async def ensure_session(self, owner: str, name: str, *, now: datetime | None = None) -> str:
        """Return the id of the owner's session called `name`, creating it if needed."""
        row = await self._fetchone(
            "SELECT id FROM sessions WHERE owner = ? AND name = ?", (owner, name)
        )
        if row:
            return str(row[0])
        session_id = uuid.uuid4().hex
        await self._db.execute(
            "INSERT OR IGNORE INTO sessions (id, owner, name, created_at) VALUES (?, ?, ?, ?)",
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
        await self._db.executemany(
            "INSERT INTO messages (session_id, role, content, created_at) VALUES (?, ?, ?, ?)",
            [(session_id, role, content, moment) for role, content in messages],
        )

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
        batch = [(claim_id(claim), claim) for claim in claims]
        # Keys first: normalising is the slow part, and it needs no lock.
        keys = {identity: _uncached_normalize(claim.question).key for identity, claim in batch}
        stored: dict[str, Claim] = {}
        # Which claims are already stored is read inside the write transaction: read before
        # it, another process (a second import, `claims add`, the proxy) could store one of
        # them in between, and the insert would then break the unique id.
        async with self._transaction():
            ids = list(keys)
            for start in range(0, len(ids), 500):  # under SQLite's bound-parameter limit
                chunk = ids[start : start + 500]
                marks = ", ".join("?" for _ in chunk)
                for row in await self._fetchall(
                    f"SELECT {CLAIM_COLUMNS} FROM claims WHERE id IN ({marks})", chunk
                ):
                    stored[row[0]] = row_to_claim(row)
            rows, supersessions, added = [], [], []
            for identity, claim in batch:
                added.append(identity not in stored)  # a repeat within the batch is not new
                if identity in stored:
                    continue
                key = keys[identity]
                rows.append(
                    (
                        identity, claim.owner, claim.agent, claim.question, claim.answer,
                        claim.source, claim.job_id, claim.repository, claim.profile,
                        claim.revision, claim.inputs_fingerprint, epoch_of(claim.expires_at),
                        moment, key,
                    )
                )  # fmt: skip
                if claim.revision is not None:
                    supersessions.append(
                        (identity, claim.owner, key, claim.repository, claim.profile,
                         claim.revision, identity)
                    )  # fmt: skip
                stored[identity] = Claim(
                    **claim.model_dump(), id=identity, status="live", created_at=datetime_at(moment)
                )
            terms = Counter((row[1], term) for row in rows for term in row[-1].split())
            await self._db.executemany(
                "INSERT INTO term_counts (owner, term, n) VALUES (?, ?, ?) "
                "ON CONFLICT (owner, term) DO UPDATE SET n = n + excluded.n",
                [(owner, term, n) for (owner, term), n in terms.items()],
            )
            await self._db.executemany(
                f"INSERT INTO claims ({CLAIM_COLUMNS}, search_key) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'live', ?, ?, NULL, ?)",
                rows,
            )
            # In insertion order, so within one batch the later revision is the one that wins.
            await self._db.executemany(
                "UPDATE claims SET status = 'superseded', superseded_by = ? "
                "WHERE owner = ? AND search_key = ? AND status = 'live' "
                "AND repository IS ? AND profile IS ? AND revision IS NOT ? "
                "AND rowid < (SELECT rowid FROM claims WHERE id = ?)",
                supersessions,
            )
        return [(stored[identity], new) for (identity, _), new in zip(batch, added, strict=True)]

    @asynccontextmanager
    async def _transaction(self) -> AsyncIterator[None]:
        try:
            await self._db.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as error:
            raise busy_or(error, self.path) from error
        try:
            yield
        except BaseException:
            await self._db.execute("ROLLBACK")
            raise
        await self._db.execute("COMMIT")

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
        match = " AND ".join("{question answer} : " + fts_phrase(w) for w in words)
        return await self.run_sync(lambda sync: sync.fts_claims(match, owner, limit, ranked=True))

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
        match = "{question answer} : (" + " OR ".join(fts_phrase(w) for w in words) + ")"
        live = " AND c.status = 'live' AND (c.expires_at IS NULL OR c.expires_at > ?)"
        moment = now_epoch(now)
        return await self.run_sync(
            lambda sync: sync.fts_claims(
                match, owner, limit, ranked=True, where=live, params=(moment,)
            )
        )

    async def retract_claim(self, owner: str, claim_id: str) -> Claim:
        """Mark the owner's claim retracted: it stays on record but is never served again."""
        claim = await self.get_claim(owner, claim_id)
        await self._db.execute(
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
        async with self._transaction():
            await self._db.execute(
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
        await self._db.execute(
            "INSERT OR IGNORE INTO artifacts (owner, id, kind, job_id, content, size, created_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
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
        await self._db.execute(
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
        await self._db.execute(
            "INSERT OR IGNORE INTO claim_origins (claim_id, owner, receipt_id, cost_usd) "
            "VALUES (?, ?, ?, ?)",
            (claim_id, owner, origin.receipt_id, origin.cost_usd),
        )

    async def claim_origin(self, owner: str, claim_id: str) -> PaidOrigin | None:
        """The paid call the owner's claim was promoted from (see SyncStore.claim_origin)."""
        return await self.run_sync(lambda sync: sync.claim_origin(owner, claim_id))

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
        return await self.run_sync(
            lambda sync: sync.kept_answer(owner, namespace, request_hash, max_age=max_age, now=now)
        )

    async def ensure_session_id(self, owner: str, name: str, *, now: datetime | None = None) -> str:
        """ensure_session in one statement, for the proxy's hot path: create-or-get the id."""
        try:
            return await self.run_sync(lambda sync: sync.ensure_session_id(owner, name, now=now))
        except sqlite3.OperationalError as error:
            raise busy_or(error, self.path) from error

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
        wait = self.lock_timeout if lock_wait is None else lock_wait

        def work(sync: SyncStore) -> list[str | None]:
            if wait == self.lock_timeout:
                return sync.record_turns(records, now=now)
            sync.set_lock_timeout(wait)
            try:
                return sync.record_turns(records, now=now)
            finally:
                sync.set_lock_timeout(self.lock_timeout)

        try:
            return await self.run_sync(work)
        except sqlite3.OperationalError as error:
            raise busy_or(error, self.path) from error
