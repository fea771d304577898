"""The seam between the store's logic and the database it runs on.

Everything the store does (claims, kept answers, receipts, jobs, working and agent state) is
written once, in SyncStore and its mixins, against `Database`: one connection, used by one
thread at a time, that runs SQL written in the subset SQLite and PostgreSQL share (`?` for a
parameter, `ON CONFLICT` for an upsert, `RETURNING`). What the two cannot share lives behind
this interface: how a write transaction shuts other writers out, full-text search (FTS5 on
SQLite; token arrays on PostgreSQL, matched the way FTS5 matches), a handful of expressions,
and what an erasure must do to leave no copy behind. `SqliteDatabase` is here;
`PostgresDatabase` is in postgres.py, so SQLite users never import psycopg.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal, Protocol, TypeVar

from ..errors import ConstraintError
from .rows import busy_or, damaged
from .search import ClaimSearch, SqliteClaimSearch

#: The most rows one of SQLite's bulk INSERT statements stores (insert_many): past about a
#: thousand, a larger statement saves no more time.
_ROWS_PER_INSERT = 1_000

Dialect = Literal["sqlite", "postgresql"]
T = TypeVar("T")

# Fills term_counts from every claim's search key (space-separated content words).
COUNT_TERMS = """
    INSERT INTO term_counts (owner, term, n)
    WITH RECURSIVE split (owner, term, rest) AS (
        SELECT owner, '', search_key || ' ' FROM claims
        UNION ALL
        SELECT owner, substr(rest, 1, instr(rest, ' ') - 1), substr(rest, instr(rest, ' ') + 1)
        FROM split WHERE rest <> ''
    )
    SELECT owner, term, count(*) FROM split WHERE term <> '' GROUP BY owner, term
"""

#: How long truncate_wal goes on trying, and waits between tries, when its checkpoint meets
#: another connection's (SQLite answers busy at once then, without the lock timeout's wait).
_TRUNCATE_RETRY_SECONDS = 1.0
_TRUNCATE_PAUSE = 0.05
_SECURE_DELETE = {0: "OFF", 1: "ON", 2: "FAST"}


class Database(Protocol):
    """One connection to a store's database, for one thread at a time."""

    #: Where the store is, as messages name it: a file's path, or a URL without its password.
    label: str
    dialect: Dialect
    #: The most parameters one statement may bind.
    max_parameters: int

    @property
    def search(self) -> ClaimSearch:
        """The claims' full-text lookups, as this database does them (see search.py)."""
        ...

    def fetchall(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        """Run one statement and return its rows (none for a write without RETURNING)."""
        ...

    def execute(self, sql: str, params: Sequence[Any] = ()) -> int:
        """Run one statement; return how many rows it changed."""
        ...

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        """Run one statement once per row of parameters."""
        ...

    def insert_many(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        """Run `sql`, an INSERT of one row ("... VALUES (?, ?, 'live')", perhaps followed by
        an ON CONFLICT clause), for every row of parameters, as the backend does that fastest
        (a bulk load's path). Rows must not repeat a conflict target: PostgreSQL refuses to
        update one row twice in one statement."""
        ...

    def write(self, *, erasing: bool = False) -> Any:
        """A context manager: one write transaction, committed at its end (rolled back on
        an exception). Writers are serialized, as SQLite serializes them, so what a
        transaction reads stays true until it commits: every read-then-write in the store
        (compare-and-swap, a job's launch key, a claim's identity) relies on this. With
        `erasing`, rows it deletes or replaces leave no copy in the database's pages."""
        ...

    def set_lock_timeout(self, seconds: float) -> None:
        """How long a write transaction waits for another's before StoreBusyError."""
        ...

    def after_erasure(self) -> bool:
        """Remove what an erasure left outside the table's live pages (SQLite's WAL); False
        when other connections kept it from finishing (the next call finishes the job)."""
        ...

    def text_bytes(self, column: str) -> str:
        """An SQL expression: the UTF-8 length in bytes of a text column."""
        ...

    def utc_period(self, period_format: str, column: str) -> str:
        """An SQL expression naming the UTC period (strftime's `%Y-%m-%d` or
        `%Y-%m-%dT%H:00Z`) an epoch column falls in."""
        ...

    def recount_terms(self) -> None:
        """Rebuild term_counts from every claim's search key (inside a write)."""
        ...


class SqliteDatabase:
    """A SQLite connection (the embedded default): WAL, one writer at a time by BEGIN
    IMMEDIATE, FTS5 for search.

    The store's read connection (`read_only`, sqlite_engine.py) refuses write(): work that
    writes belongs on the writer's thread (StaffStore.run_sync), and a write sent to the
    reader is a bug in staffstore, said as one rather than as a damaged file.
    """

    dialect: Dialect = "sqlite"

    def __init__(
        self, connection: sqlite3.Connection, path: Path, *, read_only: bool = False
    ) -> None:
        self.connection = connection
        self.path = path
        self.label = str(path)
        self.read_only = read_only
        self.search = SqliteClaimSearch(self)
        # 32,766 since SQLite 3.32, 999 before; a build may set its own.
        self.max_parameters = connection.getlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER)

    def fetchall(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        return self._guarded(lambda: self.connection.execute(sql, params).fetchall())

    def execute(self, sql: str, params: Sequence[Any] = ()) -> int:
        return self._guarded(lambda: self.connection.execute(sql, params).rowcount)

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        self._guarded(lambda: self.connection.executemany(sql, rows))

    def insert_many(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        """As few statements as the limit on parameters allows, up to _ROWS_PER_INSERT rows
        each, not executemany's one a row: FTS5 writes out the words it has gathered at the
        end of every statement (at its savepoint), so the claims' trigger wrote an index
        segment a claim, and merged them; 3 of the 5 seconds 100,000 claims took to insert.

        And one statement holds Python's lock once, not once a row: while an import keys its
        next batch on the event loop's thread, each statement the store's thread runs waits
        for that lock, up to the interpreter's switch interval (5 ms) each time."""
        if not rows:
            return
        head, _values, tail = sql.rpartition(" VALUES ")
        # The row's marks, then whatever follows them (an ON CONFLICT clause).
        end = tail.index(")") + 1
        marks, rest = tail[:end], tail[end:]
        per_statement = max(1, min(_ROWS_PER_INSERT, self.max_parameters // len(rows[0])))
        for start in range(0, len(rows), per_statement):
            chunk = rows[start : start + per_statement]
            self.execute(
                f"{head} VALUES {', '.join([marks] * len(chunk))}{rest}",
                [value for row in chunk for value in row],
            )

    def _guarded(self, work: Callable[[], T]) -> T:
        """`work`, with SQLite's errors as the store's: busy past the lock timeout, a refused
        constraint, a damaged file."""
        try:
            return work()
        except sqlite3.IntegrityError as error:
            raise ConstraintError(f"{self.label}: {error}") from error
        except sqlite3.OperationalError as error:
            busy = busy_or(error, self.path)
            raise (busy if busy is not error else damaged(self.path, error)) from error
        except sqlite3.DatabaseError as error:
            raise damaged(self.path, error) from error

    @contextmanager
    def reading(self) -> Iterator[None]:
        """One read transaction: every statement inside it reads the same snapshot (the
        commits made before its first read), and it is ended however the work ends, so the
        connection holds no snapshot between calls and its next read sees every later commit."""
        self._guarded(lambda: self.connection.execute("BEGIN"))
        try:
            yield
        finally:
            if self.connection.in_transaction:
                self._guarded(lambda: self.connection.execute("ROLLBACK"))  # it wrote nothing

    @contextmanager
    def write(self, *, erasing: bool = False) -> Iterator[None]:
        if self.read_only:
            raise RuntimeError(
                f"{self.label}: a write on the store's read connection (run it with run_sync)"
            )
        if not erasing:
            with self._immediate():
                yield
            return
        # secure_delete is a setting of the connection, not the file: on for erasures only
        # (zeroing costs other tables' deletes I/O they need not pay), then set back.
        was = self.connection.execute("PRAGMA secure_delete").fetchone()[0]
        self.connection.execute("PRAGMA secure_delete = ON")
        try:
            with self._immediate():
                yield
        finally:
            self.connection.execute(f"PRAGMA secure_delete = {_SECURE_DELETE.get(was, 'ON')}")

    @contextmanager
    def _immediate(self) -> Iterator[None]:
        try:
            self.connection.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as error:
            # Another writer held the lock past the store's lock timeout: StoreBusyError.
            busy = busy_or(error, self.path)
            raise (busy if busy is not error else damaged(self.path, error)) from error
        except sqlite3.DatabaseError as error:
            raise damaged(self.path, error) from error
        try:
            yield
        except BaseException:
            self.connection.execute("ROLLBACK")
            raise
        try:
            self.connection.execute("COMMIT")
        except sqlite3.OperationalError as error:
            self.connection.execute("ROLLBACK")
            raise busy_or(error, self.path) from error

    def set_lock_timeout(self, seconds: float) -> None:
        self.connection.execute(f"PRAGMA busy_timeout = {round(seconds * 1000)}")

    def after_erasure(self) -> bool:
        # Copy the whole WAL into the database file and cut it to zero bytes, so no earlier
        # frame of a deleted row is left on disk.
        deadline = time.monotonic() + _TRUNCATE_RETRY_SECONDS
        while True:
            try:
                busy = self.connection.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0]
            except sqlite3.OperationalError:
                busy = 1  # locked by another connection, as a busy answer says too
            if not busy:
                return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(_TRUNCATE_PAUSE)

    def text_bytes(self, column: str) -> str:
        return f"length(CAST({column} AS BLOB))"

    def utc_period(self, period_format: str, column: str) -> str:
        return f"strftime('{period_format}', {column}, 'unixepoch')"

    def recount_terms(self) -> None:
        self.execute("DELETE FROM term_counts")
        self.execute(COUNT_TERMS)
