"""The PostgreSQL backend: one store shared by several proxy replicas.

psycopg 3 with its connection pool. The store's logic is synchronous code that runs several
dependent queries per call (a gate lookup reads term counts, then candidates, then maybe
more), and on SQLite it runs on the connection's own thread; here each call takes a pooled
connection on a worker thread for its whole run, so a lookup is one hop from the event loop,
as on SQLite. (asyncpg would need every one of those calls rewritten as coroutines; the
measurement that chose psycopg is in ledgers/bench-pg-drivers.json.)

Writers are serialized as SQLite serializes them: every write transaction first takes one
transaction-scoped advisory lock. That keeps every read-then-write the store does correct
across replicas without a retry loop (a compare-and-swap has one winner, a launch key one
job, a claim's identity one row), while reads never wait. Uniqueness also holds in the
schema (primary keys, the active-launch index), so no write path can break it.
"""

from __future__ import annotations

import asyncio
import functools
import re
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from decimal import Decimal
from typing import Any, TypeVar

from ..errors import ConstraintError, StoreBusyError, StoreError
from .database import Database, Dialect
from .location import StoreLocation
from .migrations_postgres import MIGRATION_LOCK, MIGRATIONS, SCHEMA_SETTING
from .search import PostgresClaimSearch

try:
    import psycopg
    from psycopg import errors as pg_errors
    from psycopg_pool import ConnectionPool
except ImportError:  # pragma: no cover - reported when a postgresql:// store is opened
    psycopg = None  # type: ignore[assignment]

T = TypeVar("T")

#: The advisory lock every write transaction takes (see the module's docstring).
WRITE_LOCK = 0x53665374_0000
#: Connections per process: the proxy's reads run concurrently up to this many.
DEFAULT_POOL_SIZE = 8
#: Seconds to wait for the server when the store opens.
CONNECT_TIMEOUT = 10

_STRFTIME_TO_PG = {"%Y-%m-%d": "YYYY-MM-DD", "%Y-%m-%dT%H:00Z": 'YYYY-MM-DD"T"HH24":00Z"'}
_IS_NOT = re.compile(r"\bIS NOT \?")
_IS = re.compile(r"\bIS \?")


@functools.lru_cache(maxsize=2048)
def _translate(sql: str) -> str:
    """The store's SQL for psycopg: `%` doubled, `?` as `%s`, and `x IS ?` (SQLite's
    null-safe comparison with a parameter) as IS NOT DISTINCT FROM."""
    sql = _IS_NOT.sub("IS DISTINCT FROM ?", sql)
    sql = _IS.sub("IS NOT DISTINCT FROM ?", sql)
    return sql.replace("%", "%%").replace("?", "%s")


def _param(value: Any) -> Any:
    # SQLite stores a bool as an integer; the same columns are BIGINT here.
    if isinstance(value, bool):
        return int(value)
    # PostgreSQL's text cannot hold NUL, which SQLite's can: stored (and looked up) as U+FFFD,
    # so a turn or a receipt holding one is still answered and recorded, never refused.
    if isinstance(value, str) and "\x00" in value:
        return value.replace("\x00", "\ufffd")
    if isinstance(value, list):
        return [_param(item) for item in value]
    return value


def _row(row: Sequence[Any]) -> tuple[Any, ...]:
    # sum() over integers is numeric in PostgreSQL; SQLite gives int (or float).
    return tuple(
        (int(v) if v == v.to_integral_value() else float(v)) if isinstance(v, Decimal) else v
        for v in row
    )


def require_psycopg() -> None:
    if psycopg is None:
        raise StoreError("a postgresql:// store needs psycopg: pip install 'staffstore[postgres]'")


class PostgresDatabase:
    """One pooled psycopg connection (autocommit; write() opens a transaction)."""

    dialect: Dialect = "postgresql"
    #: The wire protocol counts a statement's parameters in 16 bits.
    max_parameters: int = 65_535

    def __init__(
        self, connection: Any, label: str, lock_timeout: float, *, read_only: bool = False
    ) -> None:
        self.connection = connection
        self.label = label
        self.lock_timeout = lock_timeout
        #: Lent for StaffStore.run_read: write() refuses, as on SQLite's read connection.
        self.read_only = read_only
        self.search = PostgresClaimSearch(self)

    def _run(self, sql: str, params: Sequence[Any]) -> Any:
        return self._guarded(
            lambda: self.connection.execute(_translate(sql), [_param(p) for p in params])
        )

    def _guarded(self, work: Callable[[], T]) -> T:
        """`work`, with psycopg's errors as the store's, as SqliteDatabase gives SQLite's."""
        try:
            return work()
        except pg_errors.LockNotAvailable as error:
            raise StoreBusyError(f"{self.label} is locked by another writer ({error})") from error
        except psycopg.IntegrityError as error:
            raise ConstraintError(f"{self.label}: {_reason(error)}") from error
        except (psycopg.OperationalError, psycopg.DataError) as error:
            # A lost connection, or a value the column cannot hold: the store's error, one
            # line. (A ProgrammingError is a bug in staffstore's SQL and stays loud.)
            raise StoreError(f"{self.label}: {_reason(error)}") from error

    def fetchall(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        cursor = self._run(sql, params)
        if cursor.description is None:
            return []
        return [_row(row) for row in cursor.fetchall()]

    def execute(self, sql: str, params: Sequence[Any] = ()) -> int:
        return int(self._run(sql, params).rowcount)

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        if not rows:
            return

        def work() -> None:
            with self.connection.cursor() as cursor:
                cursor.executemany(_translate(sql), [[_param(p) for p in row] for row in rows])

        self._guarded(work)

    def insert_many(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        # executemany, which psycopg pipelines: statements of a thousand rows, each planned
        # anew, took 30,000 claims from 7.6 s to 13.0 s here.
        self.executemany(sql, rows)

    @contextmanager
    def write(self, *, erasing: bool = False) -> Iterator[None]:
        # `erasing` changes nothing here: PostgreSQL has no secure_delete; after_erasure
        # vacuums instead (see there for what that does and does not promise).
        if self.read_only:
            raise RuntimeError(f"{self.label}: a write in read-only work (run it with run_sync)")
        try:
            with self.connection.transaction():
                wait = max(1, round(self.lock_timeout * 1000))
                self.connection.execute(f"SET LOCAL lock_timeout = {wait}")
                self.connection.execute("SELECT pg_advisory_xact_lock(%s)", (WRITE_LOCK,))
                yield
        except pg_errors.LockNotAvailable as error:
            raise StoreBusyError(f"{self.label} is locked by another writer ({error})") from error

    def set_lock_timeout(self, seconds: float) -> None:
        self.lock_timeout = seconds

    def after_erasure(self) -> bool:
        # VACUUM makes the erased rows' space free for reuse and drops them from the indexes;
        # it does not overwrite the bytes, and WAL segments and backups keep what they kept
        # (README, "Several replicas"). Outside any transaction, as VACUUM must be.
        for table in ("agent_states", "working_state", "working_state_events"):
            self.connection.execute(f"VACUUM {table}")
        return True

    def text_bytes(self, column: str) -> str:
        return f"octet_length({column})"

    def utc_period(self, period_format: str, column: str) -> str:
        pattern = _STRFTIME_TO_PG[period_format]
        return f"to_char(to_timestamp({column}) AT TIME ZONE 'UTC', '{pattern}')"

    def recount_terms(self) -> None:
        self.execute("DELETE FROM term_counts")
        self.execute(
            "INSERT INTO term_counts (owner, term, n) "
            "SELECT owner, term, count(*) FROM claims, "
            "unnest(string_to_array(search_key, ' ')) AS term "
            "WHERE term <> '' GROUP BY owner, term"
        )


class PostgresEngine:
    """A pool of connections and the threads that use them, for one StaffStore."""

    def __init__(
        self, location: StoreLocation, lock_timeout: float, pool_size: int = DEFAULT_POOL_SIZE
    ) -> None:
        require_psycopg()
        assert location.url is not None
        self.location = location
        self.label = location.label
        self.lock_timeout = lock_timeout
        self._pool = ConnectionPool(
            location.url,
            min_size=1,
            max_size=pool_size,
            kwargs={"autocommit": True},
            open=False,
            name="staffstore",
        )
        self._threads = ThreadPoolExecutor(pool_size, thread_name_prefix="staffstore-pg")

    async def open(self, *, migrate: bool) -> None:
        loop = asyncio.get_running_loop()
        try:
            # One plain connection first: a wrong host, port, database or password is one
            # clear error at once, where the pool would retry until its timeout.
            await loop.run_in_executor(self._threads, self._try_connect)
            opening = functools.partial(self._pool.open, wait=True, timeout=CONNECT_TIMEOUT)
            await loop.run_in_executor(self._threads, opening)
        except Exception as error:  # psycopg's connection errors, psycopg_pool.PoolTimeout
            self._threads.shutdown(wait=False)
            raise StoreError(f"cannot connect to {self.label}: {_reason(error)}") from error
        try:
            await self.run(lambda db: prepare(db, upgrade=migrate))
        except BaseException:
            await self.close()
            raise

    def _try_connect(self) -> None:
        assert self.location.url is not None
        psycopg.connect(self.location.url, connect_timeout=CONNECT_TIMEOUT).close()

    async def run(self, work: Callable[[Database], T]) -> T:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._threads, self._on_thread, work, False)

    async def run_read(self, work: Callable[[Database], T]) -> T:
        """Run `work`, which only reads: the pool already runs reads beside the writes (which
        wait only for each other, on the advisory lock), so on a pooled connection as run."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._threads, self._on_thread, work, True)

    def _on_thread(self, work: Callable[[Database], T], read_only: bool) -> T:
        try:
            with self._pool.connection() as connection:
                return work(
                    PostgresDatabase(connection, self.label, self.lock_timeout, read_only=read_only)
                )
        except psycopg.OperationalError as error:
            raise StoreError(f"{self.label}: {_reason(error)}") from error

    async def defer_checkpoints(self, fallback_pages: int) -> None:
        """Nothing to do: PostgreSQL checkpoints in its own server."""

    async def close(self) -> None:
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(self._threads, self._pool.close)
        self._threads.shutdown(wait=True)


def _reason(error: BaseException) -> str:
    # psycopg's messages can span lines (a hint after the error); the first says what failed.
    text = str(error).strip().splitlines()
    return text[0] if text else type(error).__name__


def schema_version(db: Database) -> int | None:
    """The schema version of a PostgreSQL store, None where staffstore never migrated."""
    ((exists,),) = db.fetchall("SELECT to_regclass('store_settings') IS NOT NULL")
    if not exists:
        return None
    rows = db.fetchall("SELECT value FROM store_settings WHERE name = ?", (SCHEMA_SETTING,))
    return int(rows[0][0]) if rows else None


def migrate(db: Database) -> int:
    """Apply the steps this database has not seen, under an advisory lock so two processes
    migrating at once apply each step once; return the schema version."""
    with db.write():
        db.execute("SELECT pg_advisory_xact_lock(?)", (MIGRATION_LOCK,))
        version = schema_version(db) or 0
        if version == 0:
            ((tables,),) = db.fetchall(
                "SELECT count(*) FROM pg_tables WHERE schemaname = current_schema() "
                "AND tablename IN ('claims', 'receipts', 'sessions', 'jobs')"
            )
            if tables:
                raise StoreError(
                    f"{db.label} already has tables named like staffstore's but no staffstore "
                    "schema version: another program's database (left untouched)"
                )
        while version < len(MIGRATIONS):
            for statement in MIGRATIONS[version]:
                db.execute(statement)
            version += 1
            db.execute(
                "INSERT INTO store_settings (name, value) VALUES (?, ?) "
                "ON CONFLICT (name) DO UPDATE SET value = excluded.value",
                (SCHEMA_SETTING, str(version)),
            )
    return version


def prepare(db: Database, *, upgrade: bool) -> None:
    """Check (or, with `upgrade`, bring) the schema up to this staffstore's."""
    if upgrade:
        migrate(db)
    version = schema_version(db)
    if version is None:
        raise StoreError(
            f"{db.label} has no staffstore schema yet: run `staffstore migrate --db URL` once"
        )
    if version > len(MIGRATIONS):
        raise StoreError(
            f"{db.label} was written by a newer staffstore (schema {version}); upgrade "
            "staffstore to open it"
        )
    if version < len(MIGRATIONS):
        raise StoreError(
            f"{db.label} is at schema {version} of {len(MIGRATIONS)}: run `staffstore migrate "
            "--db URL` (PostgreSQL stores are migrated explicitly, once for every replica)"
        )
