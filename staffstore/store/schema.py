"""Bringing a store's schema up to this staffstore's, and saying from which version (`staffstore
migrate`).

A SQLite file migrates itself whenever it is opened (sqlite_engine.py); a PostgreSQL store only
when asked, once for every replica that shares it (postgres.py). migrate_store does either and
reports the version before and after. On PostgreSQL the version before is read under the
migration's own locks, so of two processes migrating one store at once, one reports the upgrade
and the other finds it done.
"""

from __future__ import annotations

import asyncio
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlsplit

from ..errors import StoreError
from .async_store import DEFAULT_LOCK_TIMEOUT, StaffStore
from .database import Database, Dialect
from .location import StoreLocation, parse_location


@dataclass(frozen=True)
class Migration:
    """What migrate_store found and left: where (never with a password), and the schema
    version before and after (None before: a PostgreSQL database staffstore never migrated;
    a new SQLite file is 0)."""

    label: str
    dialect: Dialect
    before: int | None
    after: int

    @property
    def changed(self) -> bool:
        return self.before != self.after


async def migrate_store(
    where: str | Path, *, lock_timeout: float = DEFAULT_LOCK_TIMEOUT
) -> Migration:
    """Bring the store at `where` up to this staffstore's schema (a SQLite file is created if
    missing) and open it once, as any command would; StoreError when it cannot be (another
    program's tables, a newer staffstore's schema)."""
    location = parse_location(where)
    if location.dialect == "postgresql":
        before = await asyncio.to_thread(_migrate_postgres, location, lock_timeout)
    else:
        assert location.path is not None
        before = await asyncio.to_thread(_sqlite_version, location.path)
    # Opening checks the version (SQLite: migrates) and brings the search keys up to date.
    async with StaffStore.open(where, lock_timeout=lock_timeout) as store:
        after = await store.run_sync(lambda sync: _version(sync.db))
    return Migration(location.label, location.dialect, before, after)


def _version(db: Database) -> int:
    if db.dialect == "sqlite":
        return int(db.fetchall("PRAGMA user_version")[0][0])
    from .postgres import schema_version

    version = schema_version(db)
    assert version is not None  # the store opened, so it has one
    return version


def _sqlite_version(path: Path) -> int:
    """The file's `PRAGMA user_version`: 0 for a file not there yet (or one SQLite cannot read,
    which opening the store then names)."""
    if not path.is_file():
        return 0
    try:
        # Read-only: the file may be another program's, which opening the store then refuses
        # untouched.
        connection = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
        try:
            return int(connection.execute("PRAGMA user_version").fetchone()[0])
        finally:
            connection.close()
    except sqlite3.Error:
        return 0


def _migrate_postgres(location: StoreLocation, lock_timeout: float) -> int | None:
    """Migrate a PostgreSQL store; return its schema version before (None: never migrated).

    The version is read inside the transaction that migrates, after the locks postgres.migrate
    takes (the store's write lock, then the migration lock, in that order, as every migration
    takes them): a second process waits there and reads the version the first one left.
    """
    from .migrations_postgres import MIGRATION_LOCK
    from .postgres import PostgresDatabase, migrate, require_psycopg, schema_version

    require_psycopg()
    import psycopg

    assert location.url is not None
    try:
        with psycopg.connect(location.url, autocommit=True, connect_timeout=10) as connection:
            db = PostgresDatabase(connection, location.label, lock_timeout)
            with db.write():
                db.execute("SELECT pg_advisory_xact_lock(?)", (MIGRATION_LOCK,))
                before = schema_version(db)
                migrate(db)  # its own transaction nests in this one (a savepoint)
    except psycopg.OperationalError as error:
        raise StoreError(
            f"cannot connect to {location.label}: {_reason(error, location)}"
        ) from error
    except psycopg.Error as error:
        raise StoreError(f"cannot migrate {location.label}: {_reason(error, location)}") from error
    return before


def _reason(error: BaseException, location: StoreLocation) -> str:
    """The first line of a driver's message, with the URL's password masked should the
    driver have echoed it (libpq quotes the part of a URL it cannot parse)."""
    lines = str(error).strip().splitlines()
    text = lines[0] if lines else type(error).__name__
    password = urlsplit(location.url or "").password
    if password:
        for form in {password, unquote(password)}:
            text = text.replace(form, "***")
    return text
