"""Copying a whole store to another: SQLite to PostgreSQL, PostgreSQL to SQLite, file to file.

copy_store opens the source as it is (a missing file is an error, never a new one) and the
target as a new store (created and migrated as needed), refuses a target that already holds
rows (a copy never merges two stores), then copies table by table in an order the foreign keys
allow, each table's rows in the order they were inserted, a batch per write transaction. What
a database makes for itself is made again rather than copied: identity columns (numbered anew
in the same order, so every listing and the gate's tie-breaks keep their order), PostgreSQL's
search tokens and doclists (the claims', the session vault's, the kept prompts'), SQLite's
FTS5 indexes (by trigger) and the term counts. Last, every table is
counted on both sides, and a difference is an error naming the table.

The copy is one-shot, not live: a write made to the source while it runs may be missed (or
break a foreign key), so the writers are stopped first.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from ..errors import InputError, StoreError
from ..models import Progress
from . import kept_prompts, vault_tables
from .async_store import StaffStore
from .database import Database
from .location import StoreLocation, parse_location
from .migrations_postgres import SCHEMA_SETTING
from .sync_store import SyncStore

#: Rows a batch: one read of the source, one executemany in one write transaction on the target.
BATCH_SIZE = 1_000


@dataclass(frozen=True)
class _Table:
    """A table the copy moves row by row."""

    name: str
    #: The primary key: the order of rows that keep no insertion order of their own (every
    #: row of a PostgreSQL table without an identity, of a SQLite table WITHOUT ROWID).
    key: tuple[str, ...]
    #: The column the database numbers rows with (SQLite's INTEGER PRIMARY KEY or implicit
    #: rowid, PostgreSQL's identity): never copied, numbered anew in the source's order.
    identity: str | None = None
    #: Whether SQLite keeps the table's insertion order in an implicit rowid.
    rowid: bool = True


#: Every table the copy moves, parents before children (sessions before messages, jobs before
#: job_artifacts and job_claims). store_settings and term_counts are handled apart.
TABLES: tuple[_Table, ...] = (
    _Table("sessions", ("id",)),
    _Table("messages", ("id",), identity="id"),
    _Table("claims", ("id",), identity="rowid"),
    _Table("artifacts", ("owner", "id")),
    _Table("receipts", ("id",), identity="rowid"),
    _Table("kept_answers", ("owner", "namespace", "request_hash")),
    # Plain rows (their index is rebuilt: SQLite's by trigger, PostgreSQL's doclists below).
    _Table("kept_prompts", ("id",), identity="id"),
    _Table("claim_origins", ("claim_id",)),
    _Table("working_state", ("owner", "agent", "key"), rowid=False),
    _Table("working_state_events", ("id",), identity="id"),
    _Table("working_handoffs", ("owner", "agent"), rowid=False),
    _Table("agent_state_schemas", ("owner", "agent"), rowid=False),
    _Table("agent_states", ("owner", "agent", "scope_kind", "scope_hash"), rowid=False),
    _Table("agent_state_erasures", ("id",), identity="id"),
    _Table("jobs", ("id",), identity="rowid"),
    _Table("job_artifacts", ("job_id", "name")),
    _Table("job_claims", ("job_id", "claim_id")),
    _Table("job_receipts", ("id",), identity="rowid"),
    _Table("scoped_state", ("owner", "scope", "project", "workflow", "step", "key"), rowid=False),
    _Table("workflow_runs", ("id",)),
    _Table("workflow_lessons", ("id",)),
    _Table("workflow_digests", ("id",)),
    _Table("workflow_memory_settings", ("owner", "project", "workflow", "step"), rowid=False),
    _Table("session_stories", ("session_id", "version"), rowid=False),
)
#: Copied as settings (PostgreSQL's own schema version excepted) and rebuilt from the claims.
SETTINGS, TERM_COUNTS = "store_settings", "term_counts"
#: Indexes made from other tables' rows: SQLite's FTS5 tables (and their shadow tables) by
#: the prefix of their names, PostgreSQL's doclists by name. Rebuilt on the target, never copied.
_DERIVED_PREFIXES = ("claims_fts", vault_tables.DERIVED_PREFIX, kept_prompts.DERIVED_PREFIX)
_DERIVED_TABLES = ("claim_terms", *vault_tables.DERIVED_TABLES, *kept_prompts.DERIVED_TABLES)
#: Every table the copy fills, in the order reports list them.
ALL_TABLES: tuple[str, ...] = (SETTINGS, *(t.name for t in TABLES), TERM_COUNTS)
#: Not copied: the leases of calls being paid for right now, held by the source's running
#: processes (meaningless to another store's, and lapsing at their expiry anyway).
TRANSIENT: tuple[str, ...] = ("pending_calls",)


@dataclass(frozen=True)
class TableCount:
    """One table's rows on each side once the copy is done."""

    table: str
    source: int
    target: int


@dataclass(frozen=True)
class CopyReport:
    """What copy_store did: where from, where to (never with a password), and every table's
    rows on both sides after it."""

    source: str
    target: str
    tables: tuple[TableCount, ...]

    @property
    def rows(self) -> int:
        """The rows the target holds now, every table's."""
        return sum(count.target for count in self.tables)


@dataclass(frozen=True)
class _Plan:
    """How one table is read from the source and written to the target."""

    table: _Table
    #: The columns copied as they are, in the source's order.
    columns: tuple[str, ...]


async def copy_store(
    source: str | Path,
    target: str | Path,
    *,
    batch_size: int = BATCH_SIZE,
    progress: Progress | None = None,
) -> CopyReport:
    """Copy the whole store at `source` into a new or empty store at `target`; return every
    table's rows on both sides.

    MissingStoreError when the source does not exist; StoreError, with nothing written, when
    the target already holds rows; StoreError naming the tables whose counts differ after the
    copy. `progress(done, total)` is told the rows copied so far.
    """
    if batch_size < 1:
        raise InputError("batch_size must be at least 1")
    _check_apart(parse_location(source), parse_location(target))
    async with (
        StaffStore.open(source, create=False) as old,
        StaffStore.open(target, migrate=True) as new,
    ):
        plans = _plans(
            await old.run_sync(lambda sync: _schema(sync.db)),
            await new.run_sync(lambda sync: _schema(sync.db)),
        )
        await new.run_sync(lambda sync: _check_empty(sync.db))
        counts = await old.run_sync(lambda sync: _counts(sync.db))
        total = sum(counts[table.name] for table in TABLES)
        done, at = 0, SETTINGS
        try:
            await _copy_settings(old, new)
            for plan in plans:
                at = plan.table.name
                async for copied in _copy_rows(old, new, plan, batch_size):
                    done += copied
                    if progress is not None:
                        progress(done, total)
            at = TERM_COUNTS
            await new.run_sync(lambda sync: _recount_terms(sync.db))
        # Any failure, the driver's own included (PostgreSQL refusing a value SQLite held, such
        # as an integer past 32 bits): what matters is which table, and what the target holds.
        except Exception as error:
            raise StoreError(
                f"the copy stopped at {at} ({_first_line(error)}); {new.label} holds part of "
                "the store: delete it (or empty that database) before copying again"
            ) from error
        before = await old.run_sync(lambda sync: _counts(sync.db))
        after = await new.run_sync(lambda sync: _counts(sync.db))
        report = CopyReport(
            old.label,
            new.label,
            tuple(TableCount(name, before[name], after[name]) for name in ALL_TABLES),
        )
    differing = [count for count in report.tables if count.source != count.target]
    if differing:
        shown = ", ".join(
            f"{c.table} ({c.source} in the source, {c.target} in the target)" for c in differing
        )
        raise StoreError(
            f"the copy from {report.source} to {report.target} does not match: {shown}; was "
            "the source written to while it ran?"
        )
    return report


def _first_line(error: BaseException) -> str:
    lines = str(error).strip().splitlines()
    return lines[0] if lines else type(error).__name__


def _check_apart(source: StoreLocation, target: StoreLocation) -> None:
    same = (
        source.path.resolve() == target.path.resolve()
        if source.path is not None and target.path is not None
        else source.url is not None and source.url == target.url
    )
    if same:
        raise InputError(f"the source and the target are the same store ({source.label})")


# -- the schema on each side ---------------------------------------------------------------


def _schema(db: Database) -> tuple[str, dict[str, list[str]], tuple[str, ...]]:
    """The database's label, each table's columns, and the claims' index columns."""
    if db.dialect == "sqlite":
        names = [
            str(row[0])
            for row in db.fetchall("SELECT name FROM sqlite_master WHERE type = 'table'")
            # SQLite's own tables, and the FTS5 index with its shadow tables (by trigger).
            if not str(row[0]).startswith(("sqlite_", *_DERIVED_PREFIXES))
        ]
        columns = {
            name: [
                str(row[0]) for row in db.fetchall("SELECT name FROM pragma_table_info(?)", (name,))
            ]
            for name in names
        }
    else:
        columns = {}
        for table, column in db.fetchall(
            "SELECT table_name, column_name FROM information_schema.columns "
            "WHERE table_schema = current_schema() ORDER BY table_name, ordinal_position"
        ):
            # claim_terms is the claims' doclists (search.py), built as claims are written;
            # vault_terms and vault_marks are the session vault's (vault_tables.py), and
            # kept_prompt_terms the kept prompts' (kept_prompts.py), likewise.
            if table not in _DERIVED_TABLES:
                columns.setdefault(str(table), []).append(str(column))
    return db.label, columns, db.search.index_columns()


def _plans(
    source: tuple[str, dict[str, list[str]], tuple[str, ...]],
    target: tuple[str, dict[str, list[str]], tuple[str, ...]],
) -> list[_Plan]:
    """How to copy each table; StoreError when either side's tables or columns are not the
    ones this copy knows (a schema changed without the copy learning of it)."""
    (source_label, source_columns, source_index) = source
    (target_label, target_columns, target_index) = target
    known = {*ALL_TABLES, *TRANSIENT}
    for label, columns in ((source_label, source_columns), (target_label, target_columns)):
        unknown = sorted(set(columns) - known)
        missing = sorted(known - set(columns))
        if unknown or missing:
            problem = (
                f"has tables this copy does not know ({', '.join(unknown)})"
                if unknown
                else f"lacks tables ({', '.join(missing)})"
            )
            raise StoreError(f"cannot copy: {label} {problem}")
    plans = []
    for table in TABLES:
        own = {table.identity} if table.identity else set()
        index = set(source_index) if table.name == "claims" else set()
        copied = tuple(c for c in source_columns[table.name] if c not in own | index)
        index = set(target_index) if table.name == "claims" else set()
        wanted = {c for c in target_columns[table.name] if c not in own | index}
        if wanted != set(copied):
            apart = sorted(wanted ^ set(copied))
            raise StoreError(
                f"cannot copy {table.name}: the source and the target differ in its columns "
                f"({', '.join(apart)})"
            )
        plans.append(_Plan(table, copied))
    return plans


def _order(plan: _Plan, db: Database) -> tuple[str, ...]:
    """The source's order of a table's rows: by identity, else SQLite's rowid, else the key."""
    table = plan.table
    if table.identity is not None:
        return (table.identity,)
    if db.dialect == "sqlite" and table.rowid:
        return ("rowid",)
    return table.key


# -- moving rows ---------------------------------------------------------------------------


def _check_empty(db: Database) -> None:
    """StoreError when the target holds a row in any table but its settings."""
    for name in (*ALL_TABLES, *TRANSIENT):
        if name != SETTINGS and db.fetchall(f"SELECT 1 FROM {name} LIMIT 1"):
            raise StoreError(
                f"{db.label} already holds a store ({name} has rows): copy into a new file or "
                "an empty database (a copy never merges two stores); nothing was written"
            )


async def _copy_settings(old: StaffStore, new: StaffStore) -> None:
    # The search-key version among them, so the target is not re-keyed when next opened;
    # PostgreSQL's schema version is the target's own.
    rows = await old.run_sync(
        lambda sync: sync.fetchall(
            f"SELECT name, value FROM {SETTINGS} WHERE name <> ? ORDER BY name", (SCHEMA_SETTING,)
        )
    )

    def write(db: Database) -> None:
        with db.write():
            db.executemany(
                f"INSERT INTO {SETTINGS} (name, value) VALUES (?, ?) "
                "ON CONFLICT (name) DO UPDATE SET value = excluded.value",
                rows,
            )

    await new.run_sync(lambda sync: write(sync.db))


async def _copy_rows(
    old: StaffStore, new: StaffStore, plan: _Plan, batch_size: int
) -> AsyncIterator[int]:
    """Copy one table, a batch at a time; yield how many rows each batch copied."""
    after: Sequence[Any] | None = None
    while True:
        rows = await old.run_sync(partial(_read, plan, after, batch_size))
        if not rows:
            return
        width = len(rows[0]) - len(plan.columns)
        after = rows[-1][-width:]
        batch = [row[: len(plan.columns)] for row in rows]
        await new.run_sync(partial(_write, plan, batch))
        yield len(batch)
        if len(rows) < batch_size:
            return


def _read(plan: _Plan, after: Sequence[Any] | None, limit: int, sync: SyncStore) -> list[Any]:
    """The next batch of the source's rows, each with its order key at the end (keyset
    paging: each batch starts after the last key, however large the table)."""
    db = sync.db
    order = _order(plan, db)
    keys = ", ".join(order)
    sql = f"SELECT {', '.join((*plan.columns, *order))} FROM {plan.table.name}"
    params: list[Any] = []
    if after is not None:
        marks = ", ".join("?" for _ in order)
        sql += f" WHERE ({keys}) > ({marks})" if len(order) > 1 else f" WHERE {keys} > ?"
        params += list(after)
    return db.fetchall(f"{sql} ORDER BY {keys} LIMIT ?", [*params, limit])


def _write(plan: _Plan, rows: Sequence[Sequence[Any]], sync: SyncStore) -> None:
    """Insert one batch into the target in one write transaction; a claim gets the index
    columns its target searches by (PostgreSQL's tokens; none on SQLite, whose FTS5 index
    follows by trigger), messages their session vault's index, kept prompts theirs."""
    db = sync.db
    columns = plan.columns
    if plan.table.name == "claims":
        extra = db.search.index_columns()
        at = [columns.index(name) for name in ("question", "answer", "search_key")]
        rows = [(*row, *db.search.index_values(*(row[i] for i in at))) for row in rows]
        columns = (*columns, *extra)
    marks = ", ".join("?" for _ in columns)
    with db.write():
        if plan.table.name == "kept_prompts":  # numbered anew: the batch is what follows
            ((last,),) = db.fetchall("SELECT coalesce(max(id), 0) FROM kept_prompts")
        db.executemany(
            f"INSERT INTO {plan.table.name} ({', '.join(columns)}) VALUES ({marks})", rows
        )
        if plan.table.name == "kept_prompts":  # their doclists, as any writer of prompts
            ids = db.fetchall("SELECT id FROM kept_prompts WHERE id > ?", (last,))
            sync.index_kept_prompts([int(row[0]) for row in ids])
        if plan.table.name == "claims":
            db.search.after_insert([row[columns.index("id")] for row in rows])
        if plan.table.name == "messages":  # the vault's index, as any writer of messages
            sync.index_vault(row[columns.index("session_id")] for row in rows)


def _recount_terms(db: Database) -> None:
    with db.write():
        db.recount_terms()


def _counts(db: Database) -> dict[str, int]:
    """Every table's rows (the settings without PostgreSQL's own schema version)."""
    counts = {}
    for name in ALL_TABLES:
        where = " WHERE name <> ?" if name == SETTINGS else ""
        params = (SCHEMA_SETTING,) if name == SETTINGS else ()
        ((count,),) = db.fetchall(f"SELECT count(*) FROM {name}{where}", params)
        counts[name] = int(count)
    return counts
