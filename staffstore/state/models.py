"""The values working state and agent state hand back: entries, events, writes, reads, proofs.

A refused write is a value with a reason a person can read (`conflict`, `at_cap`, `over_cap`,
`not_declared_field`, ...), never an exception: a caller decides what to do with it.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import Field

from ..models import FrozenModel

HandoffStatus = Literal["continue", "complete", "blocked"]
EventAction = Literal["set", "clear", "handoff"]
ScopeKind = Literal["conversation", "task", "object", "subject"]
WriteMode = Literal["cas", "merge_by_key"]
SCOPE_KINDS: tuple[ScopeKind, ...] = ("conversation", "task", "object", "subject")
WRITE_MODES: tuple[WriteMode, ...] = ("cas", "merge_by_key")

#: Why a working-state write was or was not made.
StateWriteReason = Literal["set", "cleared", "conflict", "at_cap", "not_found"]
#: Why an agent-state write was not stored (None when it was).
AgentWriteReason = Literal["conflict", "not_declared_field", "wrong_type", "over_cap"]


# -- working state ------------------------------------------------------------------------------


class StateEntry(FrozenModel):
    """One key of an agent's working state: its value, who set it when and why, its expiry."""

    key: str
    value: str
    reason: str
    set_by: str
    set_at: datetime
    expires_at: datetime | None = None
    #: Past its expiry: still readable and in the history, no longer injected.
    expired: bool = False


class StateEvent(FrozenModel):
    """One link of the supersession chain: who changed what, when, why, from what to what."""

    action: EventAction
    key: str | None
    old_value: str | None
    new_value: str | None
    reason: str | None
    by: str
    at: datetime
    expires_at: datetime | None = None


class Handoff(FrozenModel):
    """The note an agent leaves for its next wake-up; the structured fields when given."""

    note: str
    status: HandoffStatus | None = None
    next_steps: str | None = None
    evidence: str | None = None
    blocker: str | None = None
    by: str
    set_at: datetime
    #: A plain note longer than the limit was cut (structured handoffs never are).
    truncated: bool = False


class StateWrite(FrozenModel):
    """The answer to a set or a clear: whether it was written, why, and the value as it stands.

    On `conflict` `value` is the current value the write did not expect; on `at_cap` `keys`
    lists the live keys, so the caller can clear one or reuse it.
    """

    written: bool
    reason: StateWriteReason
    key: str
    #: The value stored now: the new one after a set, the current one after a refusal.
    value: str | None
    #: The value this write replaced or cleared.
    previous: str | None = None
    entry: StateEntry | None = None
    keys: list[str] = Field(default_factory=list)


class WorkingStateView(FrozenModel):
    """Everything `get` returns: every key (expired ones marked), the handoff, recent history."""

    owner: str
    agent: str
    entries: list[StateEntry]
    handoff: Handoff | None
    history: list[StateEvent]
    live_keys: int
    max_keys: int


# -- agent state --------------------------------------------------------------------------------


class Scope(FrozenModel):
    """What one agent state belongs to: a conversation, a task, an object or a subject (a
    person), by its id. The id is hashed with the scope key before it reaches the store."""

    kind: ScopeKind
    id: str = Field(min_length=1, max_length=512)


class AgentStateRead(FrozenModel):
    """A state as served: unexpired fields only; version 0 and an empty body before any write."""

    agent: str
    body: dict[str, Any]
    version: int
    updated_at: datetime | None = None


class AgentStateWrite(FrozenModel):
    """The answer to a write: stored or not, the version now, and why not (None when stored)."""

    stored: bool
    version: int
    reason: AgentWriteReason | None = None
    #: The field a `not_declared_field` or `wrong_type` refusal is about.
    field: str | None = None
    #: The size of the state in bytes: the stored one, or on `over_cap` the one refused.
    size: int | None = None


class AgentStateInfo(FrozenModel):
    """What may be shown of a state without its content: size, version and dates."""

    agent: str
    scope_kind: ScopeKind
    #: The start of the scope's keyed hash: enough to tell states apart, not the id.
    scope_hash: str
    version: int
    size: int
    fields: int
    created_at: datetime
    updated_at: datetime


class ErasureProof(FrozenModel):
    """What an erasure removed: the target by keyed hash, counts, and a digest over what went."""

    target: Literal["subject", "scope"]
    scope_kind: ScopeKind | None = None
    target_hash: str
    states: int
    fields: int
    bytes: int
    agents: list[str]
    #: SHA-256 over the canonical JSON of each removed state's agent, scope hash, version and
    #: body digest: a later audit can show these states, and no others, were removed.
    digest: str
    erased_at: datetime
    #: No copy of the erased states is left on disk: they were zeroed where they lay and the
    #: WAL was copied back and cut to nothing. False only when other connections kept the WAL
    #: busy past the lock timeout; the next erasure or sweep then finishes the job.
    scrubbed: bool = True


class SweepReport(FrozenModel):
    """What a retention sweep removed: whole states past retention, and states it trimmed."""

    schemas: int
    states_removed: int
    states_trimmed: int
