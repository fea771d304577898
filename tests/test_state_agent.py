"""Agent state: declared schemas, cas and merge_by_key writes, the check order, the byte cap,
keyed scope hashes, retention and its sweep, erasure with proof, export, owner isolation."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Literal

import pytest
from pydantic import BaseModel, ConfigDict, Field

from staffstore.errors import InputError, MissingScopeKeyError
from staffstore.state import AgentState, Scope, load_schema
from staffstore.state.config import scope_key_from_env
from staffstore.store import StaffStore

#: Runs on SQLite and on PostgreSQL (conftest.py).
pytestmark = pytest.mark.both_backends

KEY = b"test-scope-key-0123456789abcdef"
START = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)
CONVO = Scope(kind="conversation", id="+1-555-0100")  # an id that looks like a phone number

SHOP_SCHEMA: dict[str, Any] = {
    "type": "shopping_assistant_state",
    "ownership": "agent",
    "fields": {
        "step": {"type": "enum", "values": ["sizes", "checkout", "done"]},
        "offer": {"type": "string"},
        "items": {"type": "integer"},
        "cart_note": {"type": "text", "pii": True},
    },
    "agent_state": {"scope": "conversation", "max_bytes": 16384, "write": "both"},
    "retention": {"state": "30d", "cart_note": "7d"},
}


class Clock:
    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> datetime:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
async def states(store: StaffStore, clock: Clock) -> AgentState:
    states = AgentState(store, "acme", scope_key=KEY, clock=clock)
    await states.declare("shop", SHOP_SCHEMA)
    return states


# -- schemas --------------------------------------------------------------------------------------


def test_the_short_form_declares_types_pii_retention_scope_cap_and_modes() -> None:
    schema = load_schema(SHOP_SCHEMA)
    assert schema.scope == "conversation" and schema.max_bytes == 16_384
    assert schema.write == ("cas", "merge_by_key") and schema.retention_days == 30
    note = schema.fields["cart_note"]
    assert (note.type, note.pii, note.retention_days) == ("text", True, 7)
    assert schema.fields["step"].values == ["sizes", "checkout", "done"]


class CartState(BaseModel):
    model_config = ConfigDict(
        json_schema_extra={"agent_state": {"scope": "task", "max_bytes": 4096, "write": "cas"}}
    )

    step: Literal["sizes", "checkout"]
    items: int = 0
    note: str | None = Field(default=None, json_schema_extra={"pii": True, "retention": "12h"})


def test_a_pydantic_model_declares_the_same_things() -> None:
    schema = load_schema(CartState)
    assert (schema.scope, schema.max_bytes, schema.write) == ("task", 4096, ("cas",))
    assert schema.fields["step"].type == "enum" and schema.fields["items"].type == "integer"
    note = schema.fields["note"]
    assert note.type == "string" and note.nullable and note.pii and note.retention_days == 0.5


def test_a_json_schema_file_declares_them_too(tmp_path: Path) -> None:
    path = tmp_path / "schema.json"
    path.write_text(
        '{"type": "object", "properties": {"owner_of": {"type": "string", "pii": true}},'
        ' "agent_state": {"scope": "object", "max_bytes": 65536, "retention": "90d"}}'
    )
    schema = load_schema(path)
    assert schema.scope == "object" and schema.max_bytes == 65_536 and schema.retention_days == 90


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ({"agent_state": {"scope": "conversation", "max_bytes": 65_537}}, "max_bytes"),
        ({"agent_state": {"scope": "galaxy"}}, "scope"),
        ({"agent_state": {"max_bytes": 100}}, "needs a scope"),
        ({"agent_state": {"scope": "task", "write": "append"}}, "write"),
        ({"agent_state": {"scope": "task", "over_cap": "truncate"}}, "keep_previous"),
        ({"retention": {"state": "181d"}}, "retention_days"),
        ({"retention": {"state": "30d", "nope": "1d"}}, "not a declared field"),
    ],
)
def test_a_bad_schema_is_refused_saying_why(change: dict[str, Any], problem: str) -> None:
    with pytest.raises(InputError, match=problem):
        load_schema({**SHOP_SCHEMA, **change})


# -- writes ---------------------------------------------------------------------------------------


async def test_a_state_never_written_reads_as_version_0_and_empty(states: AgentState) -> None:
    read = await states.read("shop", CONVO)
    assert (read.body, read.version, read.updated_at) == ({}, 0, None)


async def test_each_stored_write_adds_one_to_the_version(states: AgentState) -> None:
    first = await states.put("shop", CONVO, {"step": "sizes", "offer": "familia-plus"})
    second = await states.put("shop", CONVO, {"step": "checkout"})
    assert (first.stored, first.version, second.version) == (True, 1, 2)
    read = await states.read("shop", CONVO)
    assert read.body == {"step": "checkout", "offer": "familia-plus"} and read.version == 2


async def test_merge_by_key_replaces_named_fields_whole_and_keeps_the_rest(
    states: AgentState,
) -> None:
    await states.put("shop", CONVO, {"step": "sizes", "offer": "a", "items": 2})
    await states.put("shop", CONVO, {"offer": "b"})
    assert (await states.read("shop", CONVO)).body == {"step": "sizes", "offer": "b", "items": 2}


async def test_delete_removes_one_field_and_it_never_comes_back(states: AgentState) -> None:
    await states.put("shop", CONVO, {"step": "sizes", "offer": "a"})
    await states.put("shop", CONVO, {"offer": {"$delete": True}})
    await states.put("shop", CONVO, {"step": "checkout"})
    assert (await states.read("shop", CONVO)).body == {"step": "checkout"}


async def test_cas_applies_only_at_if_version_and_zero_means_must_not_exist(
    states: AgentState,
) -> None:
    created = await states.put("shop", CONVO, {"step": "sizes"}, mode="cas", if_version=0)
    assert created.stored and created.version == 1
    again = await states.put("shop", CONVO, {"step": "done"}, mode="cas", if_version=0)
    assert (again.stored, again.reason, again.version) == (False, "conflict", 1)
    whole = await states.put("shop", CONVO, {"offer": "x"}, mode="cas", if_version=1)
    assert whole.stored and whole.version == 2
    # cas writes the whole body: a field left out is gone.
    assert (await states.read("shop", CONVO)).body == {"offer": "x"}


async def test_a_cas_without_if_version_is_an_input_error(states: AgentState) -> None:
    with pytest.raises(InputError, match="if_version"):
        await states.put("shop", CONVO, {"step": "sizes"}, mode="cas")


async def test_merge_with_a_stale_if_version_conflicts_and_changes_nothing(
    states: AgentState,
) -> None:
    await states.put("shop", CONVO, {"step": "sizes"})
    refused = await states.put("shop", CONVO, {"step": "done"}, if_version=0)
    assert (refused.stored, refused.reason) == (False, "conflict")
    assert (await states.read("shop", CONVO)).body == {"step": "sizes"}


async def test_an_undeclared_field_is_refused_and_nothing_changes(states: AgentState) -> None:
    await states.put("shop", CONVO, {"step": "sizes"})
    refused = await states.put("shop", CONVO, {"step": "done", "password": "hunter2"})
    assert (refused.stored, refused.reason, refused.field) == (
        False, "not_declared_field", "password",
    )  # fmt: skip
    assert (await states.read("shop", CONVO)).body == {"step": "sizes"}


async def test_a_value_of_the_wrong_type_is_refused(states: AgentState) -> None:
    refused = await states.put("shop", CONVO, {"step": "teleport"})
    assert (refused.reason, refused.field) == ("wrong_type", "step")
    assert (await states.put("shop", CONVO, {"items": "two"})).reason == "wrong_type"


async def test_without_a_declared_schema_every_write_is_refused(
    store: StaffStore, clock: Clock
) -> None:
    states = AgentState(store, "acme", scope_key=KEY, clock=clock)
    refused = await states.put("undeclared", CONVO, {"step": "sizes"})
    assert (refused.stored, refused.reason) == (False, "not_declared_field")


async def test_over_the_cap_is_not_an_error_and_the_previous_state_stays(
    store: StaffStore, clock: Clock
) -> None:
    states = AgentState(store, "acme", scope_key=KEY, clock=clock)
    await states.declare("tiny", SHOP_SCHEMA, max_bytes=64)
    assert (await states.put("tiny", CONVO, {"offer": "x" * 20})).stored
    over = await states.put("tiny", CONVO, {"offer": "x" * 60})
    assert (over.stored, over.reason, over.version) == (False, "over_cap", 1)
    assert over.size is not None and over.size > 64
    assert (await states.read("tiny", CONVO)).body == {"offer": "x" * 20}


async def test_the_check_order_is_version_then_fields_then_cap(
    store: StaffStore, clock: Clock
) -> None:
    states = AgentState(store, "acme", scope_key=KEY, clock=clock)
    await states.declare("tiny", SHOP_SCHEMA, max_bytes=64)
    await states.put("tiny", CONVO, {"step": "sizes"})
    huge_and_undeclared = {"offer": "x" * 100, "zzz": 1}
    assert (await states.put("tiny", CONVO, huge_and_undeclared, if_version=7)).reason == (
        "conflict"
    )
    assert (await states.put("tiny", CONVO, huge_and_undeclared, if_version=1)).reason == (
        "not_declared_field"
    )
    assert (await states.put("tiny", CONVO, {"offer": "x" * 100}, if_version=1)).reason == (
        "over_cap"
    )


async def test_a_mode_the_schema_does_not_allow_is_an_input_error(
    store: StaffStore, clock: Clock
) -> None:
    states = AgentState(store, "acme", scope_key=KEY, clock=clock)
    await states.declare("strict", CartState)
    with pytest.raises(InputError, match="allows only cas"):
        await states.put("strict", Scope(kind="task", id="t-1"), {"step": "sizes"})
    with pytest.raises(InputError, match="keeps task states"):
        await states.put("strict", CONVO, {"step": "sizes"}, mode="cas", if_version=0)


# -- the scope id is never stored in clear --------------------------------------------------------


async def _rows(store: StaffStore, sql: str) -> list[Any]:
    """Rows as the store's own connection reads them, on either backend."""
    return await store.run_sync(lambda sync: sync.fetchall(sql))


async def test_the_scope_id_and_subject_are_stored_only_as_keyed_hashes(
    states: AgentState, store: StaffStore
) -> None:
    await states.put("shop", CONVO, {"step": "sizes"}, subject="alice@example.com")
    if store.path is not None:  # SQLite: the file's bytes, and its WAL's
        wal = store.path.with_name(store.path.name + "-wal")
        raw = store.path.read_bytes() + (wal.read_bytes() if wal.exists() else b"")
    else:  # PostgreSQL: every column of every row
        raw = repr(await _rows(store, "SELECT * FROM agent_states")).encode()
    assert b"+1-555-0100" not in raw and b"alice@example.com" not in raw
    (scope_hash, subject_hash), *_ = await _rows(
        store, "SELECT scope_hash, subject_hash FROM agent_states"
    )
    assert scope_hash == states.scope_hash(CONVO) and subject_hash == states.subject_hash(
        "alice@example.com"
    )
    other_key = AgentState(states.store, "acme", scope_key=b"another-key-0123456789")
    assert other_key.scope_hash(CONVO) != scope_hash


def test_a_missing_or_short_scope_key_is_refused_without_echoing_it() -> None:
    with pytest.raises(MissingScopeKeyError, match="STAFFSTORE_STATE_KEY"):
        scope_key_from_env({})
    with pytest.raises(MissingScopeKeyError) as caught:
        scope_key_from_env({"STAFFSTORE_STATE_KEY": "short-secret"})
    assert "short-secret" not in str(caught.value)


# -- owners ---------------------------------------------------------------------------------------


async def test_another_owner_reads_nothing_and_erases_nothing(
    store: StaffStore, states: AgentState, clock: Clock
) -> None:
    await states.put("shop", CONVO, {"step": "sizes"})
    other = AgentState(store, "globex", scope_key=KEY, clock=clock)
    assert (await other.read("shop", CONVO)).version == 0
    assert (await other.put("shop", CONVO, {"step": "done"})).reason == "not_declared_field"
    assert (await other.erase(scope=CONVO)).states == 0
    assert await other.list() == []
    assert (await states.read("shop", CONVO)).body == {"step": "sizes"}


# -- retention ------------------------------------------------------------------------------------


async def test_an_expired_field_is_never_served_and_leaves_with_the_next_write(
    states: AgentState, clock: Clock
) -> None:
    await states.put("shop", CONVO, {"step": "sizes", "cart_note": "size 42 for Ana"})
    clock.now += timedelta(days=6)
    await states.put("shop", CONVO, {"step": "checkout"})
    assert (await states.read("shop", CONVO)).body["cart_note"] == "size 42 for Ana"
    clock.now += timedelta(days=1)  # seven days after the note's own last write
    assert (await states.read("shop", CONVO)).body == {"step": "checkout"}
    await states.put("shop", CONVO, {"items": 1})
    ((body,),) = await _rows(states.store, "SELECT body FROM agent_states")
    assert "size 42" not in body


async def test_a_whole_state_past_retention_reads_as_never_written(
    states: AgentState, clock: Clock
) -> None:
    await states.put("shop", CONVO, {"step": "sizes"})
    clock.now += timedelta(days=30)
    assert (await states.read("shop", CONVO)).version == 0
    assert (await states.put("shop", CONVO, {"step": "done"}, mode="cas", if_version=0)).stored


async def test_the_sweep_removes_expired_states_and_fields(
    states: AgentState, clock: Clock
) -> None:
    other = Scope(kind="conversation", id="c-2")
    await states.put("shop", CONVO, {"step": "sizes", "cart_note": "private"})
    clock.now += timedelta(days=8)
    await states.put("shop", other, {"step": "done"})
    clock.now += timedelta(days=23)  # CONVO 31 days old, other 23, other's fields fine
    report = await states.sweep()
    assert (report.states_removed, report.states_trimmed) == (1, 0)
    rows = await _rows(states.store, "SELECT body FROM agent_states")
    assert rows == [('{"step":"done"}',)]


async def test_the_sweep_trims_expired_fields_without_a_new_version(
    states: AgentState, clock: Clock
) -> None:
    await states.put("shop", CONVO, {"step": "sizes", "cart_note": "private"})
    clock.now += timedelta(days=7)
    report = await states.sweep()
    assert report.states_trimmed == 1
    assert await _rows(states.store, "SELECT body, version FROM agent_states") == [
        ('{"step":"sizes"}', 1)
    ]


# -- erasure and export ---------------------------------------------------------------------------


async def test_erasing_a_subject_removes_its_scope_and_the_states_naming_it_with_proof(
    store: StaffStore, states: AgentState, clock: Clock
) -> None:
    await states.declare("profile", {**SHOP_SCHEMA, "agent_state": {"scope": "subject"}})
    ana = Scope(kind="subject", id="ana@example.com")
    await states.put("profile", ana, {"offer": "vip"})
    await states.put("shop", CONVO, {"step": "sizes", "cart_note": "n"}, subject="ana@example.com")
    kept = Scope(kind="conversation", id="someone-else")
    await states.put("shop", kept, {"step": "done"})
    proof = await states.erase(subject="ana@example.com")
    assert (proof.target, proof.states, proof.fields) == ("subject", 2, 3)
    assert proof.agents == ["profile", "shop"] and proof.digest.startswith("sha256:")
    assert proof.target_hash == states.subject_hash("ana@example.com")
    assert proof.bytes > 0 and proof.erased_at == START
    assert (await states.read("profile", ana)).version == 0
    assert (await states.read("shop", CONVO)).version == 0
    assert (await states.read("shop", kept)).body == {"step": "done"}
    assert (await states.export("ana@example.com"))["states"] == []
    (stored_proof,) = await store.agent_state_erasures("acme")
    assert stored_proof.digest == proof.digest and stored_proof.states == 2


async def test_erasing_a_scope_removes_that_scope_only(states: AgentState) -> None:
    await states.put("shop", CONVO, {"step": "sizes"})
    await states.put("shop", Scope(kind="conversation", id="c-2"), {"step": "done"})
    proof = await states.erase(scope=CONVO)
    assert (proof.target, proof.scope_kind, proof.states) == ("scope", "conversation", 1)
    assert (await states.read("shop", CONVO)).version == 0
    assert len(await states.list()) == 1


async def test_the_erasure_digest_depends_on_what_was_removed(
    store: StaffStore, clock: Clock
) -> None:
    digests = []
    for step in ("sizes", "checkout"):
        states = AgentState(store, f"owner-{step}", scope_key=KEY, clock=clock)
        await states.declare("shop", SHOP_SCHEMA)
        await states.put("shop", CONVO, {"step": step})
        digests.append((await states.erase(scope=CONVO)).digest)
    assert digests[0] != digests[1]


async def test_export_gives_a_subjects_states_by_declared_field(states: AgentState) -> None:
    await states.put("shop", CONVO, {"step": "sizes", "cart_note": "n"}, subject="ana")
    await states.put("shop", Scope(kind="conversation", id="c-2"), {"step": "done"})
    export = await states.export("ana")
    (state,) = export["states"]
    assert state["agent"] == "shop" and state["version"] == 1
    assert state["fields"]["cart_note"] == {
        "value": "n", "declared": True, "type": "text", "pii": True, "retention_days": 7.0,
        "written_at": START.isoformat(),
    }  # fmt: skip
    assert state["fields"]["step"]["pii"] is False


async def test_a_masked_read_hides_the_fields_declared_pii(states: AgentState) -> None:
    await states.put("shop", CONVO, {"step": "sizes", "cart_note": "size 42 for Ana"})
    masked = await states.read("shop", CONVO, mask_pii=True)
    assert masked.body == {"step": "sizes", "cart_note": "[pii]"}
    assert (await states.read("shop", CONVO)).body["cart_note"] == "size 42 for Ana"


async def test_list_shows_size_version_and_dates_never_content(states: AgentState) -> None:
    await states.put("shop", CONVO, {"step": "sizes", "cart_note": "secret note"})
    (info,) = await states.list()
    assert (info.agent, info.scope_kind, info.version, info.fields) == (
        "shop", "conversation", 1, 2,
    )  # fmt: skip
    assert "secret note" not in info.model_dump_json()
