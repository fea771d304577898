"""Agent state: the working memory an agent's code keeps, under a schema it declared.

One state per owner, agent and scope (a conversation, a task, an object or a subject), written
by code and never by a model: it never enters a prompt, a working set or a receipt. A write is
`cas` (the whole body, at `if_version`, 0 for "must not exist") or `merge_by_key` (each named
field replaced whole, `{"$delete": true}` removes one, the rest stay); each stored write adds
1 to the version. Checks run in this order: the version (a mismatch is a `conflict`), the
declared fields, the byte cap; a state over the cap is not an error, the previous one stays.
Scope ids and subjects reach the store only as HMACs under the configured scope key. A body is
strict JSON (strict_json.check: no NaN, no Infinity, nesting at most 64 deep). An erasure
leaves no copy of what it removed on disk (see store.state_tables).
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Callable, Mapping
from dataclasses import replace
from datetime import datetime
from typing import Any, Literal

from ..errors import InputError
from ..identity import canonical_json
from ..models import utcnow
from ..store import StaffStore
from ..store.rows import datetime_at
from ..store.state_tables import AgentStateRow, ErasureRow
from . import strict_json
from .checks import check_agent, check_owner
from .config import check_scope_key
from .models import (
    AgentStateInfo,
    AgentStateRead,
    AgentStateWrite,
    ErasureProof,
    Scope,
    SweepReport,
    WriteMode,
)
from .schema import AgentStateSchema, load_schema

Clock = Callable[[], datetime]
DELETE: dict[str, bool] = {"$delete": True}
PII_MASK = "[pii]"
_DAY = 86_400.0


def _size(body: Mapping[str, Any]) -> int:
    return len(canonical_json(body).encode("utf-8"))


def _is_delete(value: Any) -> bool:
    return isinstance(value, dict) and value == DELETE


class _Policy:
    """A schema's retention as cut-off times at one moment."""

    def __init__(self, schema: AgentStateSchema | None, now: float) -> None:
        self.schema = schema
        self.now = now

    def state_expired(self, row: AgentStateRow) -> bool:
        if self.schema is None:
            return False
        return row.updated_at + self.schema.retention_days * _DAY <= self.now

    def field_expired(self, row: AgentStateRow, name: str) -> bool:
        spec = self.schema.fields.get(name) if self.schema is not None else None
        if spec is None or spec.retention_days is None:
            return False
        written = row.written_at.get(name, row.updated_at)
        return written + spec.retention_days * _DAY <= self.now

    def served(self, row: AgentStateRow | None) -> AgentStateRow | None:
        """The row as it may be served now: None past retention, expired fields left out."""
        if row is None or self.state_expired(row):
            return None
        gone = [name for name in row.body if self.field_expired(row, name)]
        if not gone:
            return row
        body = {k: v for k, v in row.body.items() if k not in gone}
        written = {k: v for k, v in row.written_at.items() if k not in gone}
        return replace(row, body=body, written_at=written, size=_size(body))


class AgentState:
    """An owner's agent states: `AgentState(store, "acme", scope_key=KEY)`.

    `scope_key` (at least 16 bytes; see state.config.scope_key_from_env) keys the hashes that
    stand for scope ids and subjects in the store. Declaring, listing and sweeping need none;
    a call that names a scope or subject without one raises MissingScopeKeyError. `clock` pins
    the time for tests.
    """

    def __init__(
        self,
        store: StaffStore,
        owner: str,
        *,
        scope_key: bytes | None = None,
        clock: Clock = utcnow,
    ) -> None:
        if scope_key is not None:
            check_scope_key(scope_key, "scope_key")
        self.store = store
        self.owner = check_owner(owner)
        self._key = scope_key
        self.clock = clock

    # -- hashing --------------------------------------------------------------------------------

    def _hash(self, *parts: str) -> str:
        key = check_scope_key(self._key, "scope_key")
        message = canonical_json(list(parts)).encode("utf-8")
        return hmac.new(key, message, hashlib.sha256).hexdigest()

    def scope_hash(self, scope: Scope) -> str:
        """The keyed hash a scope is stored under."""
        return self._hash("scope", scope.kind, scope.id)

    def subject_hash(self, subject: str) -> str:
        """The keyed hash a subject (a person's canonical handle) is stored under."""
        if not subject.strip():
            raise InputError("a subject must not be blank")
        return self._hash("subject", subject.strip())

    # -- schemas --------------------------------------------------------------------------------

    async def declare(self, agent: str, schema: Any, **overrides: Any) -> AgentStateSchema:
        """Declare (or replace) the schema of `agent`'s state; see schema.load_schema."""
        check_agent(agent)
        declared = load_schema(schema, **overrides)
        await self.store.declare_agent_state_schema(
            self.owner, agent, declared.to_json(), self.clock().timestamp()
        )
        return declared

    async def schema(self, agent: str) -> AgentStateSchema | None:
        """The schema declared for `agent`, or None."""
        stored = await self.store.agent_state_schema(self.owner, check_agent(agent))
        return AgentStateSchema.model_validate_json(stored) if stored is not None else None

    # -- reading and writing --------------------------------------------------------------------

    async def read(self, agent: str, scope: Scope, *, mask_pii: bool = False) -> AgentStateRead:
        """The state of `agent` for `scope`: unexpired fields, the version, when it changed.

        `mask_pii` shows each field the schema marks `pii` as PII_MASK, for a person looking
        at a state rather than the code that keeps it.
        """
        schema = await self.schema(agent)
        row = await self.store.agent_state(self.owner, agent, scope.kind, self.scope_hash(scope))
        served = _Policy(schema, self.clock().timestamp()).served(row)
        if served is None:
            return AgentStateRead(agent=agent, body={}, version=0)
        body = served.body
        if mask_pii and schema is not None:
            pii = {name for name, spec in schema.fields.items() if spec.pii}
            body = {name: PII_MASK if name in pii else value for name, value in body.items()}
        return AgentStateRead(
            agent=agent, body=body, version=served.version,
            updated_at=datetime_at(served.updated_at),
        )  # fmt: skip

    async def put(
        self,
        agent: str,
        scope: Scope,
        body: Mapping[str, Any],
        *,
        mode: WriteMode = "merge_by_key",
        if_version: int | None = None,
        subject: str | None = None,
    ) -> AgentStateWrite:
        """Write `agent`'s state for `scope` (see the module docstring for the rules).

        `subject` names the person a state is about when its scope does not, so erasing or
        exporting that subject finds it. A wrong mode or scope kind raises InputError.
        """
        schema = await self.schema(agent)
        if mode not in ("cas", "merge_by_key"):
            raise InputError(f"mode must be cas or merge_by_key, not {mode!r}")
        if mode == "cas" and if_version is None:
            raise InputError("a cas write needs if_version (0 when the state must not exist)")
        if if_version is not None and if_version < 0:
            raise InputError("if_version must not be negative")
        if not isinstance(body, Mapping) or not all(isinstance(k, str) for k in body):
            raise InputError("an agent-state body is a JSON object")
        strict_json.check(dict(body), "an agent-state body")
        if schema is not None:
            if scope.kind != schema.scope:
                raise InputError(f"agent {agent!r} keeps {schema.scope} states, not {scope.kind}")
            if mode not in schema.write:
                raise InputError(f"agent {agent!r} allows only {', '.join(schema.write)} writes")
        scope_hash = self.scope_hash(scope)
        named = self.subject_hash(subject) if subject is not None else None
        if scope.kind == "subject":
            named = self.subject_hash(scope.id)
        now = self.clock().timestamp()
        policy = _Policy(schema, now)
        given = dict(body)

        def decide(stored: AgentStateRow | None) -> tuple[AgentStateRow | None, AgentStateWrite]:
            current = policy.served(stored)
            version = current.version if current is not None else 0
            if if_version is not None and if_version != version:
                return None, AgentStateWrite(stored=False, version=version, reason="conflict")

            def refuse(
                reason: Literal["not_declared_field", "wrong_type"], name: str | None
            ) -> tuple[None, AgentStateWrite]:
                return None, AgentStateWrite(
                    stored=False, version=version, reason=reason, field=name
                )

            if schema is None:  # nothing declared: no field may be written
                return refuse("not_declared_field", min(given, default=None))
            for name, value in sorted(given.items()):
                spec = schema.fields.get(name)
                if spec is None and not (_is_delete(value) and mode == "merge_by_key"):
                    return refuse("not_declared_field", name)
                if spec is not None and not _is_delete(value) and not spec.accepts(value):
                    return refuse("wrong_type", name)
            if mode == "cas" or current is None:
                kept: dict[str, Any] = {}
                written: dict[str, float] = {}
            else:
                kept, written = dict(current.body), dict(current.written_at)
            for name, value in given.items():
                if _is_delete(value):
                    kept.pop(name, None)
                    written.pop(name, None)
                else:
                    kept[name], written[name] = value, now
            size = _size(kept)
            if size > schema.max_bytes:
                return None, AgentStateWrite(
                    stored=False, version=version, reason="over_cap", size=size
                )
            row = AgentStateRow(
                agent=agent, scope_kind=scope.kind, scope_hash=scope_hash,
                subject_hash=named or (current.subject_hash if current is not None else None),
                version=version + 1, body=kept, written_at=written, size=size,
                created_at=current.created_at if current is not None else now, updated_at=now,
            )  # fmt: skip
            return row, AgentStateWrite(stored=True, version=row.version, size=size)

        return await self.store.change_agent_state(
            self.owner, check_agent(agent), scope.kind, scope_hash, decide
        )

    async def list(self, agent: str | None = None) -> list[AgentStateInfo]:
        """The owner's states (of one agent) by size, version and dates, never their content."""
        rows = await self.store.agent_states(
            self.owner, agent=check_agent(agent) if agent is not None else None
        )
        schemas: dict[str, AgentStateSchema | None] = {}
        now = self.clock().timestamp()
        infos = []
        for row in rows:
            if row.agent not in schemas:
                schemas[row.agent] = await self.schema(row.agent)
            served = _Policy(schemas[row.agent], now).served(row)
            if served is None:
                continue
            infos.append(
                AgentStateInfo.model_validate(
                    {
                        "agent": served.agent,
                        "scope_kind": served.scope_kind,
                        "scope_hash": served.scope_hash[:16],
                        "version": served.version,
                        "size": served.size,
                        "fields": len(served.body),
                        "created_at": datetime_at(served.created_at),
                        "updated_at": datetime_at(served.updated_at),
                    }
                )
            )
        return infos

    # -- export, erasure, retention ---------------------------------------------------------------

    async def export(self, subject: str) -> dict[str, Any]:
        """Every state about `subject` as JSON, by declared field (type, pii, retention)."""
        subject_hash = self.subject_hash(subject)
        rows = await self.store.agent_states(self.owner, subject_hash=subject_hash)
        now = self.clock().timestamp()
        states = []
        for row in rows:
            schema = await self.schema(row.agent)
            served = _Policy(schema, now).served(row)
            if served is None:
                continue
            fields = {}
            for name, value in sorted(served.body.items()):
                spec = schema.fields.get(name) if schema is not None else None
                fields[name] = {
                    "value": value,
                    "declared": spec is not None,
                    "type": spec.type if spec is not None else None,
                    "pii": spec.pii if spec is not None else None,
                    "retention_days": spec.retention_days if spec is not None else None,
                    "written_at": datetime_at(
                        served.written_at.get(name, served.updated_at)
                    ).isoformat(),
                }
            states.append(
                {
                    "agent": served.agent,
                    "scope_kind": served.scope_kind,
                    "scope_hash": served.scope_hash,
                    "version": served.version,
                    "created_at": datetime_at(served.created_at).isoformat(),
                    "updated_at": datetime_at(served.updated_at).isoformat(),
                    "fields": fields,
                }
            )
        return {
            "object": "staffstore.agent_state_export",
            "owner": self.owner,
            "subject_hash": subject_hash,
            "exported_at": datetime_at(now).isoformat(),
            "states": states,
        }

    async def erase(
        self, *, subject: str | None = None, scope: Scope | None = None
    ) -> ErasureProof:
        """Erase every state about `subject` (its scope, and states naming it), or every state
        of `scope`; return the proof. A later read finds nothing."""
        if (subject is None) == (scope is None):
            raise InputError("erase by exactly one of a subject or a scope")
        erased_at = self.clock().timestamp()
        if scope is not None:
            target, target_hash = "scope", self.scope_hash(scope)
        else:
            assert subject is not None
            target, target_hash = "subject", self.subject_hash(subject)

        agents: list[str] = []

        def prove(rows: list[AgentStateRow]) -> ErasureRow:
            agents.extend(sorted({row.agent for row in rows}))
            removed = sorted(
                (
                    {
                        "agent": row.agent,
                        "scope_kind": row.scope_kind,
                        "scope_hash": row.scope_hash,
                        "version": row.version,
                        "body_sha256": hashlib.sha256(
                            canonical_json(row.body).encode("utf-8")
                        ).hexdigest(),
                    }
                    for row in rows
                ),
                key=canonical_json,
            )
            digest = hashlib.sha256(
                canonical_json(
                    {"target": target, "target_hash": target_hash, "erased_at": erased_at,
                     "states": removed}
                ).encode("utf-8")
            ).hexdigest()  # fmt: skip
            return ErasureRow(
                target if scope is None else f"scope:{scope.kind}", target_hash, len(rows),
                sum(len(row.body) for row in rows), sum(row.size for row in rows),
                "sha256:" + digest, erased_at,
            )  # fmt: skip

        if scope is not None:
            proof = await self.store.erase_agent_states(
                self.owner, scope=(scope.kind, target_hash), prove=prove
            )
        else:
            proof = await self.store.erase_agent_states(
                self.owner, subject_hash=target_hash, prove=prove
            )
        scrubbed = await self.store.truncate_wal()
        return ErasureProof(
            target="scope" if scope is not None else "subject",
            scope_kind=scope.kind if scope is not None else None,
            target_hash=proof.target_hash, states=proof.states, fields=proof.fields,
            bytes=proof.bytes, agents=agents, digest=proof.digest,
            erased_at=datetime_at(proof.erased_at), scrubbed=scrubbed,
        )  # fmt: skip

    async def sweep(self) -> SweepReport:
        """Remove what retention says is gone: whole states past their time, expired fields."""
        return await sweep_agent_states(self.store, owner=self.owner, now=self.clock())


async def sweep_agent_states(
    store: StaffStore, *, owner: str | None = None, now: datetime | None = None
) -> SweepReport:
    """Apply every declared schema's retention (of one owner, or of all) to what is stored;
    what it removes leaves no copy on disk, as an erasure's does."""
    moment = (now or utcnow()).timestamp()
    schemas = await store.agent_state_schemas(owner)
    removed = trimmed = 0
    for schema_owner, agent, text in schemas:
        policy = _Policy(AgentStateSchema.model_validate_json(text), moment)
        deleted, rewritten = await store.sweep_agent_states(schema_owner, agent, policy.served)
        removed += deleted
        trimmed += rewritten
    if removed or trimmed:
        await store.truncate_wal()
    return SweepReport(schemas=len(schemas), states_removed=removed, states_trimmed=trimmed)
