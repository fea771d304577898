"""StaffStore: the durable state staffstore answers from, in one SQLite file.

Sessions keep the recent tail; claims are verified findings with provenance, indexed by FTS5;
artifacts are content-addressed task results; receipts record every turn. Every read that
returns an owner's data takes the owner: nothing here lets one owner see another's rows.
The schema is built by numbered migrations applied on open (see migrations.py).
"""

from __future__ import annotations

import sqlite3
import time
import uuid
from collections import Counter
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

import aiosqlite

from .errors import CorruptStoreError, NotFoundError, StoreError
from .identity import bytes_hash, content_hash
from .matching import STOPWORDS, normalize, tokens
from .migrations import MIGRATIONS
from .models import Claim, ClaimStatus, Ledger, Message, NewClaim, Receipt, Role

_SQLITE_MAGIC = b"SQLite format 3\x00"

T = TypeVar("T")

# Fields that make up a claim's identity: the finding and where it came from. Status, expiry
# and timestamps are lifecycle, not identity, so storing the same finding twice is a no-op.
_IDENTITY_FIELDS = (
    "owner", "agent", "question", "answer", "source",
    "job_id", "repository", "profile", "revision", "inputs_fingerprint",
)  # fmt: skip

_CLAIM_COLUMNS = (
    "id, owner, agent, question, answer, source, job_id, repository, profile, revision, "
    "inputs_fingerprint, status, expires_at, created_at, superseded_by"
)
_QUALIFIED_CLAIM_COLUMNS = ", ".join("c." + name.strip() for name in _CLAIM_COLUMNS.split(","))


def claim_id(claim: NewClaim) -> str:
    """The claim's identity: a hash over the canonical JSON of its identity fields."""
    return content_hash({name: getattr(claim, name) for name in _IDENTITY_FIELDS})


def _epoch(moment: datetime | None) -> float | None:
    return None if moment is None else moment.timestamp()


def _moment(epoch: float | None) -> datetime | None:
    return None if epoch is None else _at(epoch)


def _at(epoch: float) -> datetime:
    return datetime.fromtimestamp(epoch, UTC)


def _now(now: datetime | None) -> float:
    return now.timestamp() if now is not None else time.time()


def as_of(claim: Claim, epoch: float) -> Claim:
    """The claim with its status as the clock has it: a live claim past expiry is expired."""
    if claim.status == "live" and claim.expires_at and claim.expires_at.timestamp() <= epoch:
        return claim.model_copy(update={"status": "expired"})
    return claim


def _fts_all(words: Sequence[str]) -> str:
    """A MATCH expression: every word, in the question's content column."""
    return "search_key : (" + " AND ".join(fts_phrase(w) for w in words) + ")"


def fts_phrase(word: str) -> str:
    """Quote one word for MATCH, so operators in user text (OR, NOT, *, :) lose their power."""
    return '"' + word.replace('"', '""') + '"'


def _row_to_claim(row: Sequence[Any]) -> Claim:
    (id_, owner, agent, question, answer, source, job_id, repository, profile, revision,
     fingerprint, status, expires_at, created_at, superseded_by) = row  # fmt: skip
    return Claim(
        id=id_, owner=owner, agent=agent, question=question, answer=answer, source=source,
        job_id=job_id, repository=repository, profile=profile, revision=revision,
        inputs_fingerprint=fingerprint, status=status, expires_at=_moment(expires_at),
        created_at=_at(created_at), superseded_by=superseded_by,
    )  # fmt: skip


_RECEIPT_COLUMNS = (
    "id", "owner", "outcome", "reason", "status", "model", "prompt_tokens", "completion_tokens",
    "cost_usd", "inference_avoided", "inference_attempted", "latency_ms", "started_at",
    "finished_at", "session_id", "claim_id", "question", "answer", "error",
)  # fmt: skip


def _receipt_row(receipt: Receipt) -> tuple[Any, ...]:
    values = receipt.model_dump()
    values["started_at"] = receipt.started_at.timestamp()
    values["finished_at"] = receipt.finished_at.timestamp()
    values["inference_avoided"] = int(receipt.inference_avoided)
    values["inference_attempted"] = int(receipt.inference_attempted)
    return tuple(values[name] for name in _RECEIPT_COLUMNS)


def _row_to_receipt(row: Sequence[Any]) -> Receipt:
    values = dict(zip(_RECEIPT_COLUMNS, row, strict=True))
    values["started_at"] = _moment(values["started_at"])
    values["finished_at"] = _moment(values["finished_at"])
    values["inference_avoided"] = bool(values["inference_avoided"])
    values["inference_attempted"] = bool(values["inference_attempted"])
    return Receipt(**values)


def _damaged(path: Path, error: sqlite3.DatabaseError) -> StoreError:
    # A file with a valid header can still have damaged pages; say so plainly.
    message = str(error)
    if "malformed" in message or "not a database" in message:
        return CorruptStoreError(f"{path} is damaged: {message}")
    return StoreError(f"{path}: {message}")


def _check_is_sqlite(path: Path) -> None:
    if not path.exists() or path.stat().st_size == 0:
        return
    if path.is_dir():
        raise StoreError(f"{path} is a directory, not a database file")
    with path.open("rb") as handle:
        header = handle.read(len(_SQLITE_MAGIC))
    if header != _SQLITE_MAGIC:
        raise CorruptStoreError(f"{path} is not a staffstore database (not a SQLite file)")


class StaffStore:
    """The durable store. Open it with `async with StaffStore.open(path) as store:`."""

    def __init__(self, db: aiosqlite.Connection, path: Path) -> None:
        self._db = db
        self.path = path

    # -- opening -------------------------------------------------------------------------------

    @classmethod
    @asynccontextmanager
    async def open(cls, path: str | Path) -> AsyncIterator[StaffStore]:
        """Open (creating and migrating as needed) the store at `path`, and close it after."""
        store = await cls.connect(path)
        try:
            yield store
        finally:
            await store.close()

    @classmethod
    async def connect(cls, path: str | Path) -> StaffStore:
        """Open the store at `path`; the caller must `await store.close()`."""
        path = Path(path).expanduser()
        _check_is_sqlite(path)
        if not path.parent.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
        try:
            db = await aiosqlite.connect(path, isolation_level=None)
        except sqlite3.Error as error:
            raise StoreError(f"cannot open {path}: {error}") from error
        store = cls(db, path)
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
        await self._db.execute("PRAGMA busy_timeout = 5000")
        await self._db.execute("PRAGMA journal_mode = WAL")
        await self._db.execute("PRAGMA synchronous = NORMAL")
        await self._db.execute("PRAGMA foreign_keys = ON")
        # The gate reads index and claim pages at random: a larger page cache and memory-mapped
        # reads keep its slowest lookups from waiting on read() calls.
        await self._db.execute("PRAGMA cache_size = -65536")  # 64 MiB
        await self._db.execute("PRAGMA mmap_size = 268435456")  # 256 MiB
        await self.migrate()

    async def migrate(self) -> int:
        """Apply the migrations this file has not seen yet; return the schema version."""
        async with self._db.execute("PRAGMA user_version") as cursor:
            row = await cursor.fetchone()
        version = int(row[0]) if row else 0
        if version > len(MIGRATIONS):
            raise StoreError(
                f"{self.path} was written by a newer staffstore (schema {version}); "
                "upgrade staffstore to open it"
            )
        for number in range(version, len(MIGRATIONS)):
            async with self._transaction():
                for statement in MIGRATIONS[number]:
                    await self._db.execute(statement)
                await self._db.execute(f"PRAGMA user_version = {number + 1}")
        return len(MIGRATIONS)

    async def close(self) -> None:
        await self._db.close()

    async def _fetchall(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        # One trip to the database thread; execute, fetchall and close would be three.
        try:
            return list(await self._db.execute_fetchall(sql, params))
        except sqlite3.DatabaseError as error:
            raise _damaged(self.path, error) from error

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
            (session_id, owner, name, _now(now)),
        )
        row = await self._fetchone(
            "SELECT id FROM sessions WHERE owner = ? AND name = ?", (owner, name)
        )
        return str(row[0])

    async def append_messages(
        self, session_id: str, messages: Iterable[tuple[Role, str]], *, now: datetime | None = None
    ) -> None:
        """Append messages to a session, in order, in one transaction."""
        moment = _now(now)
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
        moment = _now(now)
        batch = [(claim_id(claim), claim) for claim in claims]
        stored: dict[str, Claim] = {}
        ids = list(dict.fromkeys(identity for identity, _ in batch))
        for start in range(0, len(ids), 500):  # under SQLite's bound-parameter limit
            chunk = ids[start : start + 500]
            marks = ", ".join("?" for _ in chunk)
            for row in await self._fetchall(
                f"SELECT {_CLAIM_COLUMNS} FROM claims WHERE id IN ({marks})", chunk
            ):
                stored[row[0]] = _row_to_claim(row)
        rows, supersessions, added = [], [], []
        for identity, claim in batch:
            added.append(identity not in stored)  # a repeat within the batch is not new
            if identity in stored:
                continue
            key = normalize(claim.question).key
            rows.append(
                (
                    identity, claim.owner, claim.agent, claim.question, claim.answer,
                    claim.source, claim.job_id, claim.repository, claim.profile, claim.revision,
                    claim.inputs_fingerprint, _epoch(claim.expires_at), moment, key,
                )
            )  # fmt: skip
            if claim.revision is not None:
                supersessions.append(
                    (identity, claim.owner, key, claim.repository, claim.profile,
                     claim.revision, identity)
                )  # fmt: skip
            stored[identity] = Claim(
                **claim.model_dump(), id=identity, status="live", created_at=_at(moment)
            )
        async with self._transaction():
            terms = Counter((row[1], term) for row in rows for term in row[-1].split())
            await self._db.executemany(
                "INSERT INTO term_counts (owner, term, n) VALUES (?, ?, ?) "
                "ON CONFLICT (owner, term) DO UPDATE SET n = n + excluded.n",
                [(owner, term, n) for (owner, term), n in terms.items()],
            )
            await self._db.executemany(
                f"INSERT INTO claims ({_CLAIM_COLUMNS}, search_key) "
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
        await self._db.execute("BEGIN IMMEDIATE")
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
            f"SELECT {_CLAIM_COLUMNS} FROM claims WHERE owner = ? AND id >= ? AND id < ? LIMIT 2",
            (owner, claim_id, claim_id + "\uffff"),
        )
        if len(rows) != 1:
            problem = "is ambiguous" if rows else "was not found"
            raise NotFoundError(f"claim {claim_id!r} {problem} for owner {owner!r}")
        return _row_to_claim(rows[0])

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
        moment = _now(now)
        sql = f"SELECT {_CLAIM_COLUMNS} FROM claims WHERE owner = ?"
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
        claims = [_row_to_claim(row) for row in await self._fetchall(sql, params)]
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
        moment = _now(now)
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
            (owner, address, kind, job_id, content, len(content), _now(now)),
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
        placeholders = ", ".join("?" for _ in _RECEIPT_COLUMNS)
        await self._db.execute(
            f"INSERT INTO receipts ({', '.join(_RECEIPT_COLUMNS)}) VALUES ({placeholders})",
            _receipt_row(receipt),
        )

    async def get_receipt(self, owner: str, receipt_id: str) -> Receipt:
        row = await self._fetchone(
            f"SELECT {', '.join(_RECEIPT_COLUMNS)} FROM receipts WHERE owner = ? AND id = ?",
            (owner, receipt_id),
        )
        if row is None:
            raise NotFoundError(f"receipt {receipt_id!r} was not found for owner {owner!r}")
        return _row_to_receipt(row)

    async def list_receipts(self, owner: str | None, *, limit: int = 20) -> list[Receipt]:
        """The most recent receipts, newest first; of one owner, or of all when owner is None."""
        sql = f"SELECT {', '.join(_RECEIPT_COLUMNS)} FROM receipts"
        params: list[Any] = []
        if owner is not None:
            sql += " WHERE owner = ?"
            params.append(owner)
        sql += " ORDER BY started_at DESC, rowid DESC LIMIT ?"
        params.append(limit)
        return [_row_to_receipt(row) for row in await self._fetchall(sql, params)]

    async def ledger(self, owner: str | None = None) -> Ledger:
        """Totals over receipts: avoided and attempted calls apart, known usage, unknown counts."""
        where, params = ("WHERE owner = ?", [owner]) if owner is not None else ("", [])
        row = await self._fetchone(
            f"""
            SELECT
                count(*),
                coalesce(sum(outcome = 'hit'), 0),
                coalesce(sum(outcome = 'miss'), 0),
                coalesce(sum(inference_avoided), 0),
                coalesce(sum(inference_attempted), 0),
                coalesce(sum(inference_attempted AND status != 'ok'), 0),
                coalesce(sum(NOT inference_avoided AND NOT inference_attempted), 0),
                coalesce(sum(prompt_tokens), 0),
                coalesce(sum(completion_tokens), 0),
                coalesce(sum(cost_usd), 0.0),
                coalesce(sum(inference_attempted
                    AND (prompt_tokens IS NULL OR completion_tokens IS NULL)), 0),
                coalesce(sum(inference_attempted AND cost_usd IS NULL), 0)
            FROM receipts {where}
            """,
            params,
        )
        names = (
            "turns", "hits", "misses", "avoided_calls", "attempted_calls", "failed_calls",
            "not_attempted", "prompt_tokens", "completion_tokens", "cost_usd",
            "unknown_usage_turns", "unknown_cost_turns",
        )  # fmt: skip
        return Ledger(**dict(zip(names, row, strict=True)))

    # -- the HTTP proxy's turns (see SyncStore for their kept answers) ------------------------

    async def ensure_session_id(self, owner: str, name: str, *, now: datetime | None = None) -> str:
        """ensure_session in one statement, for the proxy's hot path: create-or-get the id."""
        return await self.run_sync(lambda sync: sync.ensure_session_id(owner, name, now=now))

    async def record_turns(
        self, records: Sequence[TurnRecord], *, now: datetime | None = None
    ) -> list[str | None]:
        """Write many turns (receipts, session messages, kept answers) in one transaction,
        committed before this returns; see SyncStore.record_turns."""
        return await self.run_sync(lambda sync: sync.record_turns(records, now=now))


class SyncStore:
    """The store's hot-path queries as plain calls on its SQLite connection.

    Only for work that StaffStore.run_sync runs on the store's database thread: there a
    lookup of several queries, or a whole transaction, costs the event loop one round trip.
    """

    def __init__(self, connection: sqlite3.Connection, path: Path) -> None:
        self._connection = connection
        self.path = path

    def fetchall(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        try:
            return self._connection.execute(sql, params).fetchall()
        except sqlite3.DatabaseError as error:
            raise _damaged(self.path, error) from error

    # -- the gate's lookups --------------------------------------------------------------------

    def fts_claims(
        self,
        match: str,
        owner: str,
        limit: int,
        *,
        ranked: bool,
        where: str = "",
        params: Sequence[Any] = (),
    ) -> list[Claim]:
        """The owner's claims that FTS5 `match`es, best first when `ranked`."""
        # CROSS JOIN keeps FTS5 first in the plan; otherwise SQLite may walk the owner's
        # claims and match each one.
        order = " ORDER BY claims_fts.rank" if ranked else ""
        rows = self.fetchall(
            f"SELECT {_QUALIFIED_CLAIM_COLUMNS} "
            "FROM claims_fts CROSS JOIN claims c ON c.rowid = claims_fts.rowid "
            f"WHERE claims_fts MATCH ? AND c.owner = ?{where}{order} LIMIT ?",
            (match, owner, *params, limit),
        )
        return [_row_to_claim(row) for row in rows]

    def candidate_claims(
        self, owner: str, key: str, rare: Sequence[str], *, limit: int = 64
    ) -> list[Claim]:
        """Claims of any status whose question has the content `key`, or holds every word of
        `rare` (see rarest_words), in one query."""
        sql = (
            f"SELECT {_QUALIFIED_CLAIM_COLUMNS} FROM claims c "
            "WHERE c.owner = ? AND c.search_key = ?"
        )
        params: list[Any] = [owner, key]
        if rare:
            # CROSS JOIN keeps FTS5 first in the plan; otherwise SQLite may walk the owner's
            # claims and match each one.
            # UNION ALL runs left to right: same-content questions come first, within LIMIT.
            sql += (
                f" UNION ALL SELECT {_QUALIFIED_CLAIM_COLUMNS} "
                "FROM claims_fts CROSS JOIN claims c ON c.rowid = claims_fts.rowid "
                "WHERE claims_fts MATCH ? AND c.owner = ?"
            )
            params += [_fts_all(rare), owner]
        rows = self.fetchall(sql + " LIMIT ?", [*params, limit])
        unique = {row[0]: row for row in rows}  # a claim can come from both halves
        return [_row_to_claim(row) for row in unique.values()]

    def near_claims(self, owner: str, rare: Sequence[str], *, limit: int = 64) -> list[Claim]:
        """Claims whose question holds all words of `rare` but one: a typo or one changed word."""
        if not rare:
            return []
        if len(rare) == 1:
            match = _fts_all(rare)
        else:
            clauses = [_fts_all([w for w in rare if w != left_out]) for left_out in rare]
            match = " OR ".join(clauses)
        return self.fts_claims(match, owner, limit, ranked=False)

    def rarest_words(
        self, owner: str, words: Sequence[str], *, keep: int = 3
    ) -> tuple[list[tuple[str, int]], bool]:
        """The `keep` rarest of `words` among the owner's questions with their counts, and
        whether every word occurs in some question (else no question can hold them all).

        Looking candidates up by their rarest words keeps FTS5 off the long doclists of
        common words, which are what make a lookup slow.
        """
        unique = sorted(set(words))
        if not unique:
            return [], True
        marks = ", ".join("?" for _ in unique)
        counts = dict(
            self.fetchall(
                f"SELECT term, n FROM term_counts WHERE owner = ? AND term IN ({marks})",
                (owner, *unique),
            )
        )
        known = sorted(counts, key=lambda w: (counts[w], w))[:keep]
        return [(word, counts[word]) for word in known], len(counts) == len(unique)

    # -- the HTTP proxy's turns and kept answers -----------------------------------------------
    # A kept answer is one the proxy paid for, addressed by a hash of the request, so the very
    # same request from the same owner is served again without a model call.

    def ensure_session_id(self, owner: str, name: str, *, now: datetime | None = None) -> str:
        """Create-or-get the id of the owner's session called `name`, in one statement."""
        # An upsert that changes nothing, so that RETURNING yields the row on a conflict too.
        rows = self._connection.execute(
            "INSERT INTO sessions (id, owner, name, created_at) VALUES (?, ?, ?, ?) "
            "ON CONFLICT (owner, name) DO UPDATE SET name = excluded.name RETURNING id",
            (uuid.uuid4().hex, owner, name, _now(now)),
        ).fetchall()
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
        moment = _now(now)
        oldest = moment - max_age if max_age is not None else None
        rows = self.fetchall(
            "SELECT receipt_id, model, answer, created_at, expires_at FROM kept_answers "
            "WHERE owner = ? AND namespace = ? AND request_hash = ? "
            "AND (expires_at IS NULL OR expires_at > ?) AND (? IS NULL OR created_at >= ?)",
            (owner, namespace, request_hash, moment, oldest, oldest),
        )
        for receipt_id, model, answer, created_at, expires_at in rows:
            return KeptAnswer(
                owner=owner, namespace=namespace, request_hash=request_hash,
                receipt_id=receipt_id, model=model, answer=answer, created_at=_at(created_at),
                expires_at=_moment(expires_at),
            )  # fmt: skip
        return None

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
        moment = _now(now)
        kept = [record.kept for record in records if record.kept is not None]
        self._connection.execute("BEGIN IMMEDIATE")
        try:
            session_ids = [self._session_of(record, now) for record in records]
            messages = [
                (session_id, role, content, moment)
                for record, session_id in zip(records, session_ids, strict=True)
                if session_id is not None
                for role, content in record.messages
            ]
            if messages:
                self._connection.executemany(
                    "INSERT INTO messages (session_id, role, content, created_at) "
                    "VALUES (?, ?, ?, ?)",
                    messages,
                )
            if kept:
                self._connection.executemany(
                    "INSERT OR REPLACE INTO kept_answers (owner, namespace, request_hash, "
                    "receipt_id, model, answer, created_at, expires_at) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    [(k.owner, k.namespace, k.request_hash, k.receipt_id, k.model, k.answer,
                      k.created_at.timestamp(), _epoch(k.expires_at)) for k in kept],
                )  # fmt: skip
            placeholders = ", ".join("?" for _ in _RECEIPT_COLUMNS)
            self._connection.executemany(
                f"INSERT INTO receipts ({', '.join(_RECEIPT_COLUMNS)}) VALUES ({placeholders})",
                [
                    _receipt_row(record.receipt.model_copy(update={"session_id": session_id}))
                    for record, session_id in zip(records, session_ids, strict=True)
                ],
            )
            self._connection.execute("COMMIT")
        except BaseException:
            self._connection.execute("ROLLBACK")
            raise
        return session_ids


@dataclass(frozen=True)
class KeptAnswer:
    """A paid answer kept for its request: served again for an exact repeat of that request."""

    owner: str
    namespace: str
    request_hash: str
    receipt_id: str
    model: str | None
    answer: str
    created_at: datetime
    expires_at: datetime | None = None


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
