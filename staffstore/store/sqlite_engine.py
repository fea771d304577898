"""The SQLite backend's connections (the embedded default), and their opening: WAL, the header
check and the numbered migrations, applied automatically.

A writer and READERS readers, aiosqlite connections each with a thread of its own. The
writer's thread runs the store's writes and everything that reads in order to write
(StaffStore.run_sync). The readers, opened once the writer has migrated the file and refused
any write (`query_only`), run the lookups on a request's path (StaffStore.run_read), each on
the first reader free: in WAL mode a reader never waits for the writer, so a hit is not held up
by a receipt's commit or a long import's transaction (at 1,000,000 claims about one hit in
1,000 waited 50 to 190 ms behind a write when both shared the one thread); and with two, a hit
waits behind a lookup that runs the pair model only while the other reader is busy too. Each
read is one read transaction, ended before the call returns: it sees every commit made before
it started, a caller's own awaited writes included.

A store with no file (":memory:") is its connection's alone, so it has no reader; its reads
run on the writer's thread.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, TypeVar

import aiosqlite

from ..errors import CorruptStoreError, ForeignStoreError, MissingStoreError, StoreError
from .database import Database, SqliteDatabase
from .migrations import APPLICATION_ID, MIGRATIONS
from .rows import busy_or, damaged

T = TypeVar("T")

# The gate reads index and claim pages at random: memory-mapped reads keep its slowest lookups
# from waiting on read() calls (the mapped pages are the file's, shared, and the kernel's to
# drop). Each connection's page cache is heap of its own: the writer's 64 MiB serves imports
# and the index pages a batch of writes revisits; a reader's holds only what the map does not
# reach (a database past 256 MiB, and pages still in the WAL), and at 1,000,000 claims 8 MiB
# did as well as 64 (p50 of 7,000 hits 0.74 against 0.80-0.93 ms, of 2,000 misses 14.6-15.4
# against 15.0-15.1 ms, two rounds each) while the heap grew by 12 MiB over those hits
# instead of 39, toward 64 MiB for each reader.
_CACHE_PRAGMAS = ("cache_size = -65536", "mmap_size = 268435456")  # 64 MiB, 256 MiB
_READ_PRAGMAS = ("cache_size = -8192", "mmap_size = 268435456")  # 8 MiB, 256 MiB

#: How many read connections a store opens. A lookup that reaches the pair model spends a few
#: milliseconds in onnxruntime, which lets go of Python's lock; with a second reader the
#: lookups queued behind it run meanwhile, on the machine's other core.
READERS = 2


def _check_not_directory(path: Path) -> None:
    # A stat, never an open: closing any descriptor of the database file drops every POSIX
    # lock this process holds on it, a server's connection's included, and another process
    # closing its own connection then deletes the WAL the server still commits to ("How To
    # Corrupt An SQLite Database File", 2.2). Whether the file is SQLite's at all, SQLite
    # itself says when _prepare first reads it (rows.damaged names the answer).
    if path.is_dir():
        raise StoreError(f"{path} is a directory, not a database file")


class SqliteEngine:
    """A store's SQLite connections, the writer and the readers, each on its own thread."""

    def __init__(self, db: aiosqlite.Connection, path: Path, lock_timeout: float) -> None:
        self._db = db
        self.path = path
        self.lock_timeout = lock_timeout
        self._database: SqliteDatabase | None = None
        self._readers: list[_Reader] = []
        #: The readers not running a read; a read waits here for the first one free. Last in,
        #: first out: under a light load one reader, its caches warm, runs every read.
        self._idle: asyncio.LifoQueue[_Reader] = asyncio.LifoQueue()

    @classmethod
    async def connect(cls, path: Path, *, lock_timeout: float, create: bool) -> SqliteEngine:
        """Open (creating and migrating as needed) the SQLite store at `path`.

        With `create=False` a missing file is MissingStoreError rather than a new store.
        Another program's SQLite file is ForeignStoreError, untouched.
        """
        if not create and not path.exists():
            raise MissingStoreError(f"no database at {path} (check --db or $STAFFSTORE_DB)")
        _check_not_directory(path)
        if not path.parent.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
        try:
            db = await aiosqlite.connect(path, isolation_level=None)
        except sqlite3.Error as error:
            raise StoreError(f"cannot open {path}: {error}") from error
        engine = cls(db, path, lock_timeout)
        try:
            await engine._prepare()
            await engine._open_readers()
        except sqlite3.DatabaseError as error:
            await engine.close()
            raise CorruptStoreError(
                f"{path} is damaged or not a staffstore database: {error}"
            ) from error
        except BaseException:
            await engine.close()
            raise
        return engine

    async def _prepare(self) -> None:
        await self._db.execute(f"PRAGMA busy_timeout = {round(self.lock_timeout * 1000)}")
        # Before anything that writes: WAL mode alone would change another program's file.
        # Its first read of the file, so a file that is not SQLite's at all fails here too.
        await self._check_ours()
        await self._db.execute("PRAGMA journal_mode = WAL")
        await self._db.execute("PRAGMA synchronous = NORMAL")
        await self._db.execute("PRAGMA foreign_keys = ON")
        for pragma in _CACHE_PRAGMAS:
            await self._db.execute(f"PRAGMA {pragma}")
        await self.migrate()

    async def _open_readers(self) -> None:
        """Open the read connections, on a file the writer has checked and migrated."""
        mode = await self._fetchone("PRAGMA journal_mode")
        if mode is None or str(mode[0]).lower() != "wal":
            return  # ":memory:": another connection would open another, empty database
        for _ in range(READERS):
            try:
                reader = await aiosqlite.connect(self.path, isolation_level=None)
            except sqlite3.Error as error:
                raise StoreError(f"cannot open {self.path}: {error}") from error
            self._readers.append(_Reader(reader, self.path))  # closed by close() from here on
            await reader.execute(f"PRAGMA busy_timeout = {round(self.lock_timeout * 1000)}")
            await reader.execute("PRAGMA query_only = ON")
            for pragma in _READ_PRAGMAS:
                await reader.execute(f"PRAGMA {pragma}")
            self._idle.put_nowait(self._readers[-1])

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
        # The readers first: the writer, closed last, checkpoints the WAL and removes it, as
        # the last connection to a file does.
        try:
            for reader in self._readers:
                await reader.connection.close()
        finally:
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

    async def run(self, work: Callable[[Database], T]) -> T:
        """Run `work` on the connection's own thread and return its result: however many
        statements it runs, the caller waits for one round trip, not one per statement.

        `work` must not wait on anything but the database: every other query waits for it.
        """

        def on_thread() -> T:
            if self._database is None:
                self._database = SqliteDatabase(self._db._conn, self.path)
            return work(self._database)

        # aiosqlite has no public call for this; _execute (untyped) queues a function for the
        # thread that owns the connection, as each of aiosqlite's own methods does.
        result: T = await self._db._execute(on_thread)  # type: ignore[no-untyped-call]
        return result

    async def run_read(self, work: Callable[[Database], T]) -> T:
        """Run `work`, which only reads, on the first reader free, in one read transaction
        (see the module's docstring); on the writer's thread where there is no reader.

        `work` waits for no write, and no write waits for it; a read waits only while every
        reader is busy.
        """
        if not self._readers:
            return await self.run(work)
        reader = await self._idle.get()
        try:
            result: T = await reader.run(work)
        finally:
            self._idle.put_nowait(reader)
        return result


class _Reader:
    """One read connection, and the Database over it that its own thread makes on first use."""

    def __init__(self, connection: aiosqlite.Connection, path: Path) -> None:
        self.connection = connection
        self.path = path
        self._database: SqliteDatabase | None = None

    async def run(self, work: Callable[[Database], T]) -> T:
        def on_thread() -> T:
            if self._database is None:
                self._database = SqliteDatabase(self.connection._conn, self.path, read_only=True)
            with self._database.reading():
                return work(self._database)

        # As SqliteEngine.run: aiosqlite's _execute queues a function for the connection's
        # own thread.
        result: T = await self.connection._execute(on_thread)  # type: ignore[no-untyped-call]
        return result
