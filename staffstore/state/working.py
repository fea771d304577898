"""Working state: one authoritative table of an agent's current rules, changed only on purpose.

Each owner's agent keeps up to 32 live keys and one handoff note. A key changes only through
`set` or `clear`, each with a reason; the value it replaces joins the supersession chain (who,
when, why, old, new). `expected_value` makes a set a compare-and-swap, so two wake-ups running
at once cannot overwrite each other unseen. A key past its TTL stays readable and in the chain
but is no longer injected. Nothing here reads a model's reply: only explicit calls write.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta

from ..errors import InputError
from ..models import utcnow
from ..store import StaffStore
from ..store.rows import datetime_at, datetime_of
from ..store.state_tables import (
    HandoffRow,
    WorkingChange,
    WorkingEvent,
    WorkingRow,
    WorkingSnapshot,
)
from .checks import (
    check_actor,
    check_agent,
    check_history,
    check_key,
    check_owner,
    check_reason,
    check_value,
)
from .config import DEFAULT_AGENT, DEFAULTS, StateConfig
from .handoff import check_handoff
from .models import Handoff, StateEntry, StateEvent, StateWrite, WorkingStateView
from .section import render_section

Clock = Callable[[], datetime]
#: The longest TTL a key may be given: ten years is "no expiry" said another way.
MAX_TTL_HOURS = 24 * 365 * 10


def _live(row: WorkingRow, now: float) -> bool:
    return row.expires_at is None or row.expires_at > now


def _entry(row: WorkingRow, now: float) -> StateEntry:
    return StateEntry(
        key=row.key, value=row.value, reason=row.reason, set_by=row.set_by,
        set_at=datetime_at(row.set_at), expires_at=datetime_of(row.expires_at),
        expired=not _live(row, now),
    )  # fmt: skip


def _event(event: WorkingEvent) -> StateEvent:
    return StateEvent.model_validate(
        {
            "action": event.action,
            "key": event.key,
            "old_value": event.old_value,
            "new_value": event.new_value,
            "reason": event.reason,
            "by": event.actor,
            "at": datetime_at(event.at),
            "expires_at": datetime_of(event.expires_at),
        }
    )


def _handoff(row: HandoffRow, truncated: bool = False) -> Handoff:
    return Handoff.model_validate(
        {
            "note": row.note,
            "status": row.status,
            "next_steps": row.next_steps,
            "evidence": row.evidence,
            "blocker": row.blocker,
            "by": row.actor,
            "set_at": datetime_at(row.set_at),
            "truncated": truncated,
        }
    )


def _ttl(ttl_hours: float | None) -> timedelta | None:
    if ttl_hours is None:
        return None
    if not 0 < ttl_hours <= MAX_TTL_HOURS:
        raise InputError(f"ttl_hours must be more than 0 and at most {MAX_TTL_HOURS}")
    return timedelta(hours=ttl_hours)


class WorkingState:
    """One agent's working state: `async with StaffStore.open(path) as store:` then
    `WorkingState(store, "acme", "trader")`. `clock` pins the time (tests, replays)."""

    def __init__(
        self,
        store: StaffStore,
        owner: str,
        agent: str = DEFAULT_AGENT,
        *,
        config: StateConfig = DEFAULTS,
        clock: Clock = utcnow,
    ) -> None:
        self.store = store
        self.owner = check_owner(owner)
        self.agent = check_agent(agent)
        self.config = config
        self.clock = clock

    async def set(
        self,
        key: str,
        value: str,
        reason: str,
        *,
        ttl_hours: float | None = None,
        expected_value: str | None = None,
        by: str | None = None,
    ) -> StateWrite:
        """Set one key, with the reason why; the value it replaces joins the chain.

        With `expected_value`, the write is made only when the stored value (expired or not)
        is exactly that; otherwise nothing changes and the answer (`conflict`) carries the
        current value. A new key at the cap of live keys is refused (`at_cap`), listing them.
        """
        key, value, reason = check_key(key), check_value(value), check_reason(reason)
        actor = check_actor(by or self.agent)
        ttl = _ttl(ttl_hours)
        moment = self.clock()
        now = moment.timestamp()
        expires = (moment + ttl).timestamp() if ttl is not None else None
        cap = self.config.max_keys

        def decide(state: WorkingSnapshot) -> tuple[WorkingChange | None, StateWrite]:
            current = next((row for row in state.rows if row.key == key), None)
            stored = current.value if current is not None else None
            if expected_value is not None and stored != expected_value:
                entry = _entry(current, now) if current is not None else None
                return None, StateWrite(
                    written=False, reason="conflict", key=key, value=stored, entry=entry
                )
            live = sorted(row.key for row in state.rows if _live(row, now))
            if key not in live and len(live) >= cap:
                return None, StateWrite(
                    written=False, reason="at_cap", key=key, value=stored, keys=live
                )
            row = WorkingRow(key, value, reason, actor, now, expires)
            event = WorkingEvent("set", key, stored, value, reason, actor, now, expires)
            return WorkingChange(event, upsert=row), StateWrite(
                written=True, reason="set", key=key, value=value, previous=stored,
                entry=_entry(row, now),
            )  # fmt: skip

        return await self.store.change_working_state(self.owner, self.agent, decide)

    async def clear(self, key: str, reason: str, *, by: str | None = None) -> StateWrite:
        """Retire one key, with the reason why; its last value joins the chain."""
        key, reason = check_key(key), check_reason(reason)
        actor = check_actor(by or self.agent)
        now = self.clock().timestamp()

        def decide(state: WorkingSnapshot) -> tuple[WorkingChange | None, StateWrite]:
            current = next((row for row in state.rows if row.key == key), None)
            if current is None:
                return None, StateWrite(written=False, reason="not_found", key=key, value=None)
            event = WorkingEvent("clear", key, current.value, None, reason, actor, now)
            return WorkingChange(event, delete=key), StateWrite(
                written=True, reason="cleared", key=key, value=None, previous=current.value
            )

        return await self.store.change_working_state(self.owner, self.agent, decide)

    async def handoff(
        self,
        note: str | None = None,
        *,
        status: str | None = None,
        next_steps: str | None = None,
        evidence: str | None = None,
        blocker: str | None = None,
        by: str | None = None,
    ) -> Handoff:
        """Replace the handoff note (see handoff.py for the plain and structured rules).

        A structured handoff that breaks a rule or passes the byte cap raises InputError, and
        nothing is written.
        """
        checked = check_handoff(
            note, status=status, next_steps=next_steps, evidence=evidence, blocker=blocker,
            max_bytes=self.config.handoff_max_bytes, plain_chars=self.config.plain_handoff_chars,
        )  # fmt: skip
        actor = check_actor(by or self.agent)
        row = HandoffRow(
            checked.note, checked.status, checked.next_steps, checked.evidence, checked.blocker,
            actor, self.clock().timestamp(),
        )  # fmt: skip

        def decide(state: WorkingSnapshot) -> tuple[WorkingChange, Handoff]:
            old = state.handoff.note if state.handoff is not None else None
            event = WorkingEvent("handoff", None, old, row.note, checked.status, actor, row.set_at)
            return WorkingChange(event, handoff=row), _handoff(row, checked.truncated)

        return await self.store.change_working_state(self.owner, self.agent, decide)

    async def get(self, *, history: int | None = None) -> WorkingStateView:
        """Every key (expired ones marked), the handoff, and the `history` most recent events
        (0 to checks.MAX_HISTORY; the config's default when None)."""
        count = self.config.history if history is None else check_history(history)
        state = await self.store.working_state(self.owner, self.agent, events=count)
        now = self.clock().timestamp()
        entries = [_entry(row, now) for row in state.rows]
        return WorkingStateView(
            owner=self.owner, agent=self.agent, entries=entries,
            handoff=_handoff(state.handoff) if state.handoff is not None else None,
            history=[_event(event) for event in state.events],
            live_keys=sum(not entry.expired for entry in entries), max_keys=self.config.max_keys,
        )  # fmt: skip

    async def chain(self, key: str) -> list[StateEvent]:
        """The whole supersession chain of one key, oldest first."""
        events = await self.store.working_state_chain(self.owner, self.agent, check_key(key))
        return [_event(event) for event in events]

    async def section(self, *, max_bytes: int | None = None) -> str:
        """The text injected into this agent's prompts now ("" when there is none)."""
        return await working_state_section(
            self.store, self.owner, self.agent, now=self.clock(),
            max_bytes=self.config.section_max_bytes if max_bytes is None else max_bytes,
        )  # fmt: skip


async def working_state_section(
    store: StaffStore,
    owner: str,
    agent: str = DEFAULT_AGENT,
    *,
    now: datetime | None = None,
    max_bytes: int = DEFAULTS.section_max_bytes,
) -> str:
    """The working-state section for a prompt: live keys, newest first, and the handoff."""
    state = await store.working_state(owner, agent)
    moment = (now or utcnow()).timestamp()
    entries = [_entry(row, moment) for row in state.rows if _live(row, moment)]
    handoff = _handoff(state.handoff) if state.handoff is not None else None
    return render_section(entries, handoff, max_bytes=max_bytes)
