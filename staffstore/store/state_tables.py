"""The store's side of working state and agent state: their tables, rows and transactions.

The rules (the cap, compare-and-swap, merging, retention) live in staffstore.state; here each
write is one transaction that reads the rows it needs, hands them to the caller's `decide`
function, and writes what it returns. `decide` runs inside the transaction, and writers are
serialized on both backends (database.py), so two processes (or two replicas) writing one key
never both decide on a value the other has already replaced.

On SQLite an erased state leaves no copy on disk. Every state transaction runs with `PRAGMA
secure_delete` on, so a row deleted or replaced is overwritten with zeros where it lay (and a
freed page zeroed), not just unlinked; and after an erasure `truncate_wal` copies the WAL into
the database file and cuts it to zero bytes, so no earlier frame still holds the row. (The
other choice, a key per state that erasure destroys, would leave the same question for the
key's own row.) On PostgreSQL the rows are deleted and the tables vacuumed, which frees but
does not overwrite them (README, "Several replicas").
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, TypeVar

from ..identity import canonical_json
from .database import Database
from .rows import upsert

T = TypeVar("T")


MIGRATION: list[str] = [
    # Working state: one row a live key, per owner and agent; expired keys stay until cleared.
    """
    CREATE TABLE working_state (
        owner TEXT NOT NULL,
        agent TEXT NOT NULL,
        key TEXT NOT NULL,
        value TEXT NOT NULL,
        reason TEXT NOT NULL,
        set_by TEXT NOT NULL,
        set_at REAL NOT NULL,
        expires_at REAL,
        PRIMARY KEY (owner, agent, key)
    ) WITHOUT ROWID
    """,
    # The supersession chain: every set, clear and handoff, with who, when, why, old and new.
    """
    CREATE TABLE working_state_events (
        id INTEGER PRIMARY KEY,
        owner TEXT NOT NULL,
        agent TEXT NOT NULL,
        key TEXT,
        action TEXT NOT NULL CHECK (action IN ('set', 'clear', 'handoff')),
        old_value TEXT,
        new_value TEXT,
        reason TEXT,
        actor TEXT NOT NULL,
        at REAL NOT NULL,
        expires_at REAL
    )
    """,
    "CREATE INDEX working_state_events_by_agent ON working_state_events (owner, agent, id)",
    """
    CREATE TABLE working_handoffs (
        owner TEXT NOT NULL,
        agent TEXT NOT NULL,
        note TEXT NOT NULL,
        status TEXT CHECK (status IN ('continue', 'complete', 'blocked')),
        next_steps TEXT,
        evidence TEXT,
        blocker TEXT,
        actor TEXT NOT NULL,
        set_at REAL NOT NULL,
        PRIMARY KEY (owner, agent)
    ) WITHOUT ROWID
    """,
    # Agent state: the schema each agent declared, and one state per owner, agent and scope.
    """
    CREATE TABLE agent_state_schemas (
        owner TEXT NOT NULL,
        agent TEXT NOT NULL,
        schema TEXT NOT NULL,
        declared_at REAL NOT NULL,
        PRIMARY KEY (owner, agent)
    ) WITHOUT ROWID
    """,
    # scope_hash and subject_hash are keyed hashes (HMAC): a scope id is never stored in clear.
    """
    CREATE TABLE agent_states (
        owner TEXT NOT NULL,
        agent TEXT NOT NULL,
        scope_kind TEXT NOT NULL
            CHECK (scope_kind IN ('conversation', 'task', 'object', 'subject')),
        scope_hash TEXT NOT NULL,
        subject_hash TEXT,
        version INTEGER NOT NULL CHECK (version >= 1),
        body TEXT NOT NULL,
        written_at TEXT NOT NULL,
        size INTEGER NOT NULL,
        created_at REAL NOT NULL,
        updated_at REAL NOT NULL,
        PRIMARY KEY (owner, agent, scope_kind, scope_hash)
    ) WITHOUT ROWID
    """,
    "CREATE INDEX agent_states_by_subject ON agent_states (owner, subject_hash)",
    "CREATE INDEX agent_states_by_scope ON agent_states (owner, scope_kind, scope_hash)",
    # What each erasure removed, by count and digest: the proof outlives the data.
    """
    CREATE TABLE agent_state_erasures (
        id INTEGER PRIMARY KEY,
        owner TEXT NOT NULL,
        target TEXT NOT NULL,
        target_hash TEXT NOT NULL,
        states INTEGER NOT NULL,
        fields INTEGER NOT NULL,
        bytes INTEGER NOT NULL,
        digest TEXT NOT NULL,
        erased_at REAL NOT NULL
    )
    """,
]


# -- rows --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class WorkingRow:
    """One key of an agent's working state as stored (times are epoch seconds)."""

    key: str
    value: str
    reason: str
    set_by: str
    set_at: float
    expires_at: float | None = None


@dataclass(frozen=True)
class WorkingEvent:
    """One link of the supersession chain: a set, a clear or a handoff."""

    action: str
    key: str | None
    old_value: str | None
    new_value: str | None
    reason: str | None
    actor: str
    at: float
    expires_at: float | None = None


@dataclass(frozen=True)
class HandoffRow:
    """The note an agent leaves for its next wake-up, plain or structured."""

    note: str
    status: str | None
    next_steps: str | None
    evidence: str | None
    blocker: str | None
    actor: str
    set_at: float


@dataclass(frozen=True)
class WorkingSnapshot:
    """Everything stored for one agent's working state: keys, handoff, recent events."""

    rows: list[WorkingRow]
    handoff: HandoffRow | None
    events: list[WorkingEvent] = field(default_factory=list)


@dataclass(frozen=True)
class WorkingChange:
    """What one working-state write stores: a key upserted or deleted, or a new handoff,
    and always the event that records it."""

    event: WorkingEvent
    upsert: WorkingRow | None = None
    delete: str | None = None
    handoff: HandoffRow | None = None


@dataclass(frozen=True)
class AgentStateRow:
    """One stored agent state. `written_at` holds each field's last write (epoch seconds)."""

    agent: str
    scope_kind: str
    scope_hash: str
    subject_hash: str | None
    version: int
    body: dict[str, Any]
    written_at: dict[str, float]
    size: int
    created_at: float
    updated_at: float


@dataclass(frozen=True)
class ErasureRow:
    """The proof an erasure leaves: what was targeted (by hash), counts and a digest."""

    target: str
    target_hash: str
    states: int
    fields: int
    bytes: int
    digest: str
    erased_at: float


#: Where an erasure or a listing looks: every state of a scope, or naming a subject.
ScopeMatch = tuple[str, str]

_WORKING_COLUMNS = "key, value, reason, set_by, set_at, expires_at"
_EVENT_COLUMNS = "action, key, old_value, new_value, reason, actor, at, expires_at"
_HANDOFF_COLUMNS = "note, status, next_steps, evidence, blocker, actor, set_at"
_AGENT_COLUMNS = (
    "agent, scope_kind, scope_hash, subject_hash, version, body, written_at, size, "
    "created_at, updated_at"
)


def _columns(names: str) -> tuple[str, ...]:
    return tuple(name.strip() for name in names.split(","))


_UPSERT_WORKING = upsert(
    "working_state", ("owner", "agent", *_columns(_WORKING_COLUMNS)), ("owner", "agent", "key")
)
_UPSERT_HANDOFF = upsert(
    "working_handoffs", ("owner", "agent", *_columns(_HANDOFF_COLUMNS)), ("owner", "agent")
)
_UPSERT_AGENT_STATE = upsert(
    "agent_states",
    ("owner", *_columns(_AGENT_COLUMNS)),
    ("owner", "agent", "scope_kind", "scope_hash"),
)


def _no_number(name: str) -> None:
    """NaN or Infinity, which an older staffstore stored from a command line: read as null,
    as JSON writers that meet them do, so the state can be read and written again."""
    return None


def _agent_row(row: Sequence[Any]) -> AgentStateRow:
    agent, kind, scope, subject, version, body, written, size, created, updated = row
    return AgentStateRow(
        agent, kind, scope, subject, int(version), json.loads(body, parse_constant=_no_number),
        json.loads(written), int(size), float(created), float(updated),
    )  # fmt: skip


class StateTables:
    """SyncStore's working-state and agent-state methods (run on the store's thread)."""

    db: Database

    @contextmanager
    def _state_transaction(self) -> Iterator[Database]:
        # Erasing: a state deleted or replaced leaves no copy in the database's pages.
        with self.db.write(erasing=True):
            yield self.db

    def truncate_wal(self) -> bool:
        """Remove what an erasure left outside the live pages (on SQLite: copy the whole WAL
        into the database file and cut it to zero bytes, so no earlier frame still holds the
        row). False when other connections kept it from finishing; the next call finishes."""
        return self.db.after_erasure()

    def _rows(self, sql: str, params: Sequence[Any]) -> list[Any]:
        return self.db.fetchall(sql, params)

    # -- working state -----------------------------------------------------------------------

    def working_state(self, owner: str, agent: str, *, events: int = 0) -> WorkingSnapshot:
        """The agent's keys (expired ones too), its handoff and its last `events` events."""
        rows = [
            WorkingRow(*row)
            for row in self._rows(
                f"SELECT {_WORKING_COLUMNS} FROM working_state WHERE owner = ? AND agent = ? "
                "ORDER BY set_at DESC, key",
                (owner, agent),
            )
        ]
        found = self._rows(
            f"SELECT {_HANDOFF_COLUMNS} FROM working_handoffs WHERE owner = ? AND agent = ?",
            (owner, agent),
        )
        history: list[WorkingEvent] = []
        if events > 0:
            history = self._events(
                "owner = ? AND agent = ? ORDER BY id DESC LIMIT ?", (owner, agent, events)
            )
        return WorkingSnapshot(rows, HandoffRow(*found[0]) if found else None, history)

    def working_state_chain(self, owner: str, agent: str, key: str) -> list[WorkingEvent]:
        """Every event of one key, oldest first: its whole supersession chain."""
        return self._events("owner = ? AND agent = ? AND key = ? ORDER BY id", (owner, agent, key))

    def _events(self, where: str, params: Sequence[Any]) -> list[WorkingEvent]:
        sql = f"SELECT {_EVENT_COLUMNS} FROM working_state_events WHERE {where}"
        return [WorkingEvent(*row) for row in self._rows(sql, params)]

    def change_working_state(
        self,
        owner: str,
        agent: str,
        decide: Callable[[WorkingSnapshot], tuple[WorkingChange | None, T]],
    ) -> T:
        """In one transaction: read the agent's state, let `decide` pick the change (None
        for none), store it with its event, and return what `decide` returned with it."""
        with self._state_transaction() as connection:
            change, result = decide(self.working_state(owner, agent))
            if change is None:
                return result
            if change.upsert is not None:
                row = change.upsert
                connection.execute(
                    _UPSERT_WORKING,
                    (owner, agent, row.key, row.value, row.reason, row.set_by, row.set_at,
                     row.expires_at),
                )  # fmt: skip
            if change.delete is not None:
                connection.execute(
                    "DELETE FROM working_state WHERE owner = ? AND agent = ? AND key = ?",
                    (owner, agent, change.delete),
                )
            if change.handoff is not None:
                note = change.handoff
                connection.execute(
                    _UPSERT_HANDOFF,
                    (owner, agent, note.note, note.status, note.next_steps, note.evidence,
                     note.blocker, note.actor, note.set_at),
                )  # fmt: skip
            event = change.event
            connection.execute(
                f"INSERT INTO working_state_events (owner, agent, {_EVENT_COLUMNS}) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (owner, agent, event.action, event.key, event.old_value, event.new_value,
                 event.reason, event.actor, event.at, event.expires_at),
            )  # fmt: skip
        return result

    # -- agent state: schemas ------------------------------------------------------------------

    def agent_state_schema(self, owner: str, agent: str) -> str | None:
        """The schema the owner declared for `agent`, as the JSON text it was stored as."""
        rows = self._rows(
            "SELECT schema FROM agent_state_schemas WHERE owner = ? AND agent = ?", (owner, agent)
        )
        return str(rows[0][0]) if rows else None

    def agent_state_schemas(self, owner: str | None = None) -> list[tuple[str, str, str]]:
        """(owner, agent, schema JSON) of every declared schema, or of one owner's."""
        sql = "SELECT owner, agent, schema FROM agent_state_schemas"
        params: tuple[Any, ...] = ()
        if owner is not None:
            sql += " WHERE owner = ?"
            params = (owner,)
        return [(str(o), str(a), str(s)) for o, a, s in self._rows(sql + " ORDER BY 1, 2", params)]

    def declare_agent_state_schema(
        self, owner: str, agent: str, schema_json: str, declared_at: float
    ) -> None:
        """Store (or replace) the schema of `agent`; states already written are kept."""
        with self._state_transaction() as connection:
            connection.execute(
                upsert(
                    "agent_state_schemas",
                    ("owner", "agent", "schema", "declared_at"),
                    ("owner", "agent"),
                ),
                (owner, agent, schema_json, declared_at),
            )

    # -- agent state: states -------------------------------------------------------------------

    def agent_state(
        self, owner: str, agent: str, scope_kind: str, scope_hash: str
    ) -> AgentStateRow | None:
        rows = self._rows(
            f"SELECT {_AGENT_COLUMNS} FROM agent_states "
            "WHERE owner = ? AND agent = ? AND scope_kind = ? AND scope_hash = ?",
            (owner, agent, scope_kind, scope_hash),
        )
        return _agent_row(rows[0]) if rows else None

    def agent_states(
        self,
        owner: str,
        *,
        agent: str | None = None,
        scope: ScopeMatch | None = None,
        subject_hash: str | None = None,
    ) -> list[AgentStateRow]:
        """The owner's states, optionally of one agent, one scope or naming one subject."""
        sql = f"SELECT {_AGENT_COLUMNS} FROM agent_states WHERE owner = ?"
        params: list[Any] = [owner]
        if agent is not None:
            sql += " AND agent = ?"
            params.append(agent)
        if scope is not None:
            sql += " AND scope_kind = ? AND scope_hash = ?"
            params += list(scope)
        if subject_hash is not None:
            sql += " AND subject_hash = ?"
            params.append(subject_hash)
        rows = self._rows(sql + " ORDER BY agent, updated_at DESC, scope_hash", params)
        return [_agent_row(row) for row in rows]

    def change_agent_state(
        self,
        owner: str,
        agent: str,
        scope_kind: str,
        scope_hash: str,
        decide: Callable[[AgentStateRow | None], tuple[AgentStateRow | None, T]],
    ) -> T:
        """In one transaction: read the state, let `decide` return the row to store (None
        to store nothing), store it, and return what `decide` returned with it."""
        with self._state_transaction() as connection:
            current = self.agent_state(owner, agent, scope_kind, scope_hash)
            row, result = decide(current)
            if row is not None:
                self._put_agent_state(connection, owner, row)
        return result

    def _put_agent_state(self, connection: Database, owner: str, row: AgentStateRow) -> None:
        connection.execute(
            _UPSERT_AGENT_STATE,
            (owner, row.agent, row.scope_kind, row.scope_hash, row.subject_hash, row.version,
             canonical_json(row.body), canonical_json(row.written_at), row.size,
             row.created_at, row.updated_at),
        )  # fmt: skip

    def erase_agent_states(
        self,
        owner: str,
        *,
        scope: ScopeMatch | None = None,
        subject_hash: str | None = None,
        prove: Callable[[list[AgentStateRow]], ErasureRow],
    ) -> ErasureRow:
        """Delete the owner's states of `scope`, or of and naming `subject_hash` (a state of
        kind subject carries its own hash as subject), and record `prove`'s proof with it."""
        if (scope is None) == (subject_hash is None):
            raise ValueError("erase by exactly one of scope or subject_hash")
        with self._state_transaction() as connection:
            gone = self.agent_states(owner, scope=scope, subject_hash=subject_hash)
            if scope is not None:
                connection.execute(
                    "DELETE FROM agent_states WHERE owner = ? AND scope_kind = ? "
                    "AND scope_hash = ?",
                    (owner, *scope),
                )
            else:
                connection.execute(
                    "DELETE FROM agent_states WHERE owner = ? AND subject_hash = ?",
                    (owner, subject_hash),
                )
            proof = prove(gone)
            connection.execute(
                "INSERT INTO agent_state_erasures (owner, target, target_hash, states, "
                "fields, bytes, digest, erased_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (owner, proof.target, proof.target_hash, proof.states, proof.fields,
                 proof.bytes, proof.digest, proof.erased_at),
            )  # fmt: skip
        return proof

    def agent_state_erasures(self, owner: str) -> list[ErasureRow]:
        """The proofs of the owner's erasures, newest first."""
        return [
            ErasureRow(*row)
            for row in self._rows(
                "SELECT target, target_hash, states, fields, bytes, digest, erased_at "
                "FROM agent_state_erasures WHERE owner = ? ORDER BY id DESC",
                (owner,),
            )
        ]

    def sweep_agent_states(
        self, owner: str, agent: str, keep: Callable[[AgentStateRow], AgentStateRow | None]
    ) -> tuple[int, int]:
        """Pass each of the agent's states through `keep` in one transaction: None deletes
        it, another row replaces it, the same row leaves it. Returns (deleted, rewritten)."""
        deleted = rewritten = 0
        with self._state_transaction() as connection:
            for row in self.agent_states(owner, agent=agent):
                kept = keep(row)
                if kept is None:
                    connection.execute(
                        "DELETE FROM agent_states WHERE owner = ? AND agent = ? "
                        "AND scope_kind = ? AND scope_hash = ?",
                        (owner, agent, row.scope_kind, row.scope_hash),
                    )
                    deleted += 1
                elif kept != row:
                    self._put_agent_state(connection, owner, kept)
                    rewritten += 1
        return deleted, rewritten


class AsyncStateTables:
    """StaffStore's async face of StateTables: each call is one trip to the store's thread."""

    async def run_sync(self, work: Callable[[Any], T]) -> T:  # provided by StaffStore
        raise NotImplementedError

    async def working_state(self, owner: str, agent: str, *, events: int = 0) -> WorkingSnapshot:
        """The agent's keys (expired ones too), its handoff and its last `events` events."""
        return await self.run_sync(lambda sync: sync.working_state(owner, agent, events=events))

    async def working_state_chain(self, owner: str, agent: str, key: str) -> list[WorkingEvent]:
        """Every event of one key, oldest first."""
        return await self.run_sync(lambda sync: sync.working_state_chain(owner, agent, key))

    async def change_working_state(
        self,
        owner: str,
        agent: str,
        decide: Callable[[WorkingSnapshot], tuple[WorkingChange | None, T]],
    ) -> T:
        """See StateTables.change_working_state: `decide` runs inside the transaction."""
        return await self.run_sync(lambda sync: sync.change_working_state(owner, agent, decide))

    async def agent_state_schema(self, owner: str, agent: str) -> str | None:
        return await self.run_sync(lambda sync: sync.agent_state_schema(owner, agent))

    async def agent_state_schemas(self, owner: str | None = None) -> list[tuple[str, str, str]]:
        return await self.run_sync(lambda sync: sync.agent_state_schemas(owner))

    async def declare_agent_state_schema(
        self, owner: str, agent: str, schema_json: str, declared_at: float
    ) -> None:
        await self.run_sync(
            lambda sync: sync.declare_agent_state_schema(owner, agent, schema_json, declared_at)
        )

    async def agent_state(
        self, owner: str, agent: str, scope_kind: str, scope_hash: str
    ) -> AgentStateRow | None:
        return await self.run_sync(
            lambda sync: sync.agent_state(owner, agent, scope_kind, scope_hash)
        )

    async def agent_states(
        self,
        owner: str,
        *,
        agent: str | None = None,
        scope: ScopeMatch | None = None,
        subject_hash: str | None = None,
    ) -> list[AgentStateRow]:
        return await self.run_sync(
            lambda sync: sync.agent_states(
                owner, agent=agent, scope=scope, subject_hash=subject_hash
            )
        )

    async def change_agent_state(
        self,
        owner: str,
        agent: str,
        scope_kind: str,
        scope_hash: str,
        decide: Callable[[AgentStateRow | None], tuple[AgentStateRow | None, T]],
    ) -> T:
        """See StateTables.change_agent_state: `decide` runs inside the transaction."""
        return await self.run_sync(
            lambda sync: sync.change_agent_state(owner, agent, scope_kind, scope_hash, decide)
        )

    async def erase_agent_states(
        self,
        owner: str,
        *,
        scope: ScopeMatch | None = None,
        subject_hash: str | None = None,
        prove: Callable[[list[AgentStateRow]], ErasureRow],
    ) -> ErasureRow:
        return await self.run_sync(
            lambda sync: sync.erase_agent_states(
                owner, scope=scope, subject_hash=subject_hash, prove=prove
            )
        )

    async def agent_state_erasures(self, owner: str) -> list[ErasureRow]:
        return await self.run_sync(lambda sync: sync.agent_state_erasures(owner))

    async def truncate_wal(self) -> bool:
        """See StateTables.truncate_wal: no earlier copy of a deleted row left in the WAL."""
        return await self.run_sync(lambda sync: sync.truncate_wal())

    async def sweep_agent_states(
        self, owner: str, agent: str, keep: Callable[[AgentStateRow], AgentStateRow | None]
    ) -> tuple[int, int]:
        return await self.run_sync(lambda sync: sync.sweep_agent_states(owner, agent, keep))
