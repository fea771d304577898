"""Scoped state: what repeated work keeps between runs, in four namespaces that never fall back.

A key lives in exactly one namespace, named by what it belongs to:

    step      one step of one workflow (project, workflow, step)
    workflow  one workflow (project, workflow)
    project   every workflow of one project
    global    everything of one owner

They are namespaces, not a cascade: reading `step.last_id` never returns `workflow.last_id`,
because every read names its whole namespace and the store is asked for that one only. A key
never written is absent (`ScopedValue.present` False, `value` None), never an empty string: a
workflow resuming from a watermark nobody set must be told so. Values are text a workflow
writes on purpose (a watermark, an id already filed); one that holds a secret is refused, not
silently rewritten, because a changed value is the worst thing state can hand back.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import datetime
from typing import Literal

from ..errors import InputError
from ..models import FrozenModel, utcnow
from ..store import StaffStore
from ..store.memory_tables import MemoryTables, ScopedPlace, ScopedRow
from ..store.rows import datetime_at
from .checks import check_actor, check_name, check_owner, is_control, shown
from .secrets import Scrubber

ScopeName = Literal["step", "workflow", "project", "global"]
SCOPE_NAMES: tuple[ScopeName, ...] = ("step", "workflow", "project", "global")
#: The project of a workflow that names none.
DEFAULT_PROJECT = "default"
MAX_KEY_CHARS = 128
MAX_VALUE_CHARS = 8_192
#: Keys one namespace may hold: state past this many keys is a log, and belongs elsewhere.
MAX_KEYS = 1_000
_PART = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}")

Clock = Callable[[], datetime]


def check_part(name: str, what: str) -> str:
    """A project, workflow or step name: 1-64 letters, digits, `_`, `.`, `:` or `-`, from a
    letter or digit (no `/`: `project/workflow` spells a workflow of another project)."""
    check_name(name, what, 64)
    if not _PART.fullmatch(name):
        raise InputError(
            f"{what} {shown(name)} must be 1-64 letters, digits, '_', '.', ':' or '-', "
            "starting with a letter or digit"
        )
    return name


class ScopeRef(FrozenModel):
    """One namespace: its scope and the names that place it. Build it with ScopeRef.step(),
    .workflow(), .project() or .everything(); `checked()` says which part is missing."""

    scope: ScopeName
    project: str = ""
    workflow: str = ""
    step: str = ""

    @classmethod
    def of_step(cls, workflow: str, step: str, project: str = DEFAULT_PROJECT) -> ScopeRef:
        return cls(scope="step", project=project, workflow=workflow, step=step).checked()

    @classmethod
    def of_workflow(cls, workflow: str, project: str = DEFAULT_PROJECT) -> ScopeRef:
        return cls(scope="workflow", project=project, workflow=workflow).checked()

    @classmethod
    def of_project(cls, project: str = DEFAULT_PROJECT) -> ScopeRef:
        return cls(scope="project", project=project).checked()

    @classmethod
    def everything(cls) -> ScopeRef:
        """The global namespace: everything of one owner."""
        return cls(scope="global")

    @classmethod
    def named(
        cls,
        scope: str,
        *,
        project: str | None = None,
        workflow: str | None = None,
        step: str | None = None,
    ) -> ScopeRef:
        """The namespace `scope` names, from parts that may be None (a URL's query, a body)."""
        if scope not in SCOPE_NAMES:
            raise InputError(f"scope must be one of {', '.join(SCOPE_NAMES)}, not {shown(scope)}")
        if scope == "global":
            if project or workflow or step:
                raise InputError("the global scope belongs to no project, workflow or step")
            return cls.everything()
        ref = cls.model_validate(
            {"scope": scope, "project": project or DEFAULT_PROJECT, "workflow": workflow or "",
             "step": step or ""}
        )  # fmt: skip
        return ref.checked()

    def checked(self) -> ScopeRef:
        """This namespace when its parts fit its scope, else InputError naming the problem."""
        needs = {
            "step": ("project", "workflow", "step"),
            "workflow": ("project", "workflow"),
            "project": ("project",),
            "global": (),
        }[self.scope]
        for part in ("project", "workflow", "step"):
            value = getattr(self, part)
            if part in needs:
                if not value:
                    raise InputError(f"a {self.scope}-scope key needs a {part}")
                check_part(value, f"a {part} name")
            elif value:
                raise InputError(f"a {self.scope}-scope key belongs to no {part}: leave it out")
        return self

    @property
    def place(self) -> ScopedPlace:
        return (self.scope, self.project, self.workflow, self.step)

    @property
    def label(self) -> str:
        """`step default/triage/fetch`, `workflow default/triage`, `project default`, `global`."""
        names = "/".join(part for part in (self.project, self.workflow, self.step) if part)
        return f"{self.scope} {names}".strip()


class ScopedValue(FrozenModel):
    """One key read from one namespace: present with its value, or absent (value None)."""

    scope: ScopeName
    project: str
    workflow: str
    step: str
    key: str
    present: bool
    value: str | None = None
    set_by: str | None = None
    set_at: datetime | None = None


class ScopedWrite(FrozenModel):
    """What a set or delete did: `set`, `deleted`, `not_found` (nothing to delete) or
    `at_cap` (a new key in a full namespace; nothing written)."""

    written: bool
    reason: Literal["set", "deleted", "not_found", "at_cap"]
    entry: ScopedValue
    previous: str | None = None


def check_scoped_key(key: str) -> str:
    """A scoped-state key: 1-128 characters, no whitespace or control characters."""
    check_name(key, "a scoped-state key", MAX_KEY_CHARS)
    if any(ch.isspace() for ch in key):
        raise InputError(f"scoped-state key {shown(key)} must not hold spaces")
    return key


def _value(ref: ScopeRef, key: str, row: ScopedRow | None) -> ScopedValue:
    if row is None:
        return ScopedValue(
            scope=ref.scope, project=ref.project, workflow=ref.workflow, step=ref.step, key=key,
            present=False,
        )  # fmt: skip
    return ScopedValue(
        scope=ref.scope, project=ref.project, workflow=ref.workflow, step=ref.step, key=key,
        present=True, value=row.value, set_by=row.set_by, set_at=datetime_at(row.set_at),
    )  # fmt: skip


class ScopedState:
    """One owner's scoped state: `ScopedState(store, "acme")`, then get/set/list/delete with a
    ScopeRef. `scrubber` decides what counts as a secret (default: Scrubber.from_env());
    `max_keys` is the most keys one namespace may hold."""

    def __init__(
        self,
        store: StaffStore,
        owner: str,
        *,
        scrubber: Scrubber | None = None,
        clock: Clock = utcnow,
        max_keys: int = MAX_KEYS,
    ) -> None:
        self.store = store
        self.owner = check_owner(owner)
        self.scrubber = scrubber if scrubber is not None else Scrubber.from_env()
        self.clock = clock
        self.max_keys = max_keys

    async def get(self, where: ScopeRef, key: str) -> ScopedValue:
        """The key's value in exactly this namespace; absent when it was never written there,
        whatever another namespace holds under the same key."""
        where, key = where.checked(), check_scoped_key(key)
        row = await self.store.memory_read(
            lambda sync: sync.scoped_value(self.owner, where.place, key)
        )
        return _value(where, key, row)

    async def list(self, where: ScopeRef) -> list[ScopedValue]:
        """Every key of exactly this namespace, by key."""
        where = where.checked()
        rows = await self.store.memory_read(
            lambda sync: sync.scoped_values(self.owner, where.place)
        )
        return [_value(where, row.key, row) for row in rows]

    async def set(
        self, where: ScopeRef, key: str, value: str, *, by: str | None = None
    ) -> ScopedWrite:
        """Set one key of one namespace; the answer carries the value it replaced."""
        where, key = where.checked(), check_scoped_key(key)
        value = self._check_value(value)
        actor = check_actor(by or "api")
        row = ScopedRow(key, value, actor, self.clock().timestamp())

        def write(sync: MemoryTables) -> ScopedWrite:
            current = sync.scoped_value(self.owner, where.place, key)
            if current is None and sync.scoped_key_count(self.owner, where.place) >= self.max_keys:
                return ScopedWrite(written=False, reason="at_cap", entry=_value(where, key, None))
            sync.put_scoped_value(self.owner, where.place, row)
            previous = current.value if current is not None else None
            return ScopedWrite(
                written=True, reason="set", entry=_value(where, key, row), previous=previous
            )

        return await self.store.memory_transaction(write)

    async def delete(self, where: ScopeRef, key: str) -> ScopedWrite:
        """Remove one key of one namespace: it reads as absent again."""
        where, key = where.checked(), check_scoped_key(key)

        def write(sync: MemoryTables) -> ScopedWrite:
            current = sync.scoped_value(self.owner, where.place, key)
            if current is None:
                absent = _value(where, key, None)
                return ScopedWrite(written=False, reason="not_found", entry=absent)
            sync.delete_scoped_value(self.owner, where.place, key)
            return ScopedWrite(
                written=True, reason="deleted", entry=_value(where, key, None),
                previous=current.value,
            )  # fmt: skip

        return await self.store.memory_transaction(write)

    def _check_value(self, value: str) -> str:
        if not isinstance(value, str):
            raise InputError("a scoped-state value must be a string")
        if len(value) > MAX_VALUE_CHARS:
            raise InputError(f"a scoped-state value must have at most {MAX_VALUE_CHARS} characters")
        if "\x00" in value or any(is_control(ch) and ch not in "\n\t" for ch in value):
            raise InputError(
                "a scoped-state value must not hold control characters other than \\n and \\t"
            )
        if self.scrubber.holds_secret(value):
            # Never repeat the value: it holds the secret.
            raise InputError(
                "the value holds a secret (a configured secret's value or an API-key shape); "
                "nothing was stored"
            )
        return value
