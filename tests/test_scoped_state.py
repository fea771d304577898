"""Scoped state on both backends: four namespaces that never fall back, absent as absent, one
owner's keys invisible to another, and a value holding a secret refused without a word of it."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from staffstore.errors import InputError
from staffstore.state import ScopedState, ScopeRef, Scrubber
from staffstore.store import StaffStore

pytestmark = pytest.mark.both_backends

NOON = datetime(2026, 11, 2, 12, 0, tzinfo=UTC)
STEP = ScopeRef.of_step("triage", "fetch")
FLOW = ScopeRef.of_workflow("triage")
PROJECT = ScopeRef.of_project()
GLOBAL = ScopeRef.everything()
EVERY = (STEP, FLOW, PROJECT, GLOBAL)


def _state(store: StaffStore, owner: str = "acme", **options: object) -> ScopedState:
    return ScopedState(store, owner, scrubber=Scrubber(["hunter2-password"]), clock=lambda: NOON,
                       **options)  # type: ignore[arg-type]  # fmt: skip


@pytest.mark.parametrize("written", EVERY, ids=lambda ref: ref.scope)
async def test_a_key_written_in_one_namespace_is_absent_in_every_other(
    store: StaffStore, written: ScopeRef
) -> None:
    state = _state(store)
    await state.set(written, "last_id", "42")
    for where in EVERY:
        value = await state.get(where, "last_id")
        if where == written:
            assert (value.present, value.value) == (True, "42")
        else:
            assert (value.present, value.value) == (False, None), where.label


async def test_a_step_never_reads_its_workflows_value_of_the_same_key(store: StaffStore) -> None:
    state = _state(store)
    await state.set(FLOW, "watermark", "workflow's")
    await state.set(ScopeRef.of_step("triage", "notify"), "watermark", "notify's")
    value = await state.get(STEP, "watermark")
    assert value.present is False and value.value is None and value.set_at is None


async def test_the_same_names_in_another_project_or_workflow_are_other_namespaces(
    store: StaffStore,
) -> None:
    state = _state(store)
    await state.set(ScopeRef.of_workflow("triage", "acme-api"), "k", "api")
    await state.set(ScopeRef.of_workflow("triage", "acme-web"), "k", "web")
    assert (await state.get(ScopeRef.of_workflow("triage", "acme-api"), "k")).value == "api"
    assert (await state.get(ScopeRef.of_workflow("triage", "acme-web"), "k")).value == "web"
    assert (await state.get(FLOW, "k")).present is False


async def test_set_answers_with_the_value_it_replaced(store: StaffStore) -> None:
    state = _state(store)
    first = await state.set(FLOW, "last_id", "41", by="fetch")
    second = await state.set(FLOW, "last_id", "42", by="fetch")
    assert (first.written, first.previous) == (True, None)
    assert (second.reason, second.previous, second.entry.value) == ("set", "41", "42")
    assert second.entry.set_by == "fetch" and second.entry.set_at == NOON


async def test_an_empty_string_is_a_value_and_absent_is_not_one(store: StaffStore) -> None:
    state = _state(store)
    await state.set(FLOW, "cursor", "")
    assert (await state.get(FLOW, "cursor")).model_dump(include={"present", "value"}) == {
        "present": True, "value": "",
    }  # fmt: skip
    assert (await state.get(FLOW, "never")).model_dump(include={"present", "value"}) == {
        "present": False, "value": None,
    }  # fmt: skip


async def test_list_shows_one_namespace_by_key(store: StaffStore) -> None:
    state = _state(store)
    await state.set(FLOW, "b", "2")
    await state.set(FLOW, "a", "1")
    await state.set(STEP, "c", "3")
    assert [(v.key, v.value) for v in await state.list(FLOW)] == [("a", "1"), ("b", "2")]


async def test_delete_makes_a_key_absent_and_a_second_delete_finds_nothing(
    store: StaffStore,
) -> None:
    state = _state(store)
    await state.set(PROJECT, "heartbeat", "12:00")
    gone = await state.delete(PROJECT, "heartbeat")
    again = await state.delete(PROJECT, "heartbeat")
    assert (gone.written, gone.reason, gone.previous) == (True, "deleted", "12:00")
    assert (again.written, again.reason) == (False, "not_found")
    assert (await state.get(PROJECT, "heartbeat")).present is False


async def test_another_owner_neither_sees_nor_changes_a_key(store: StaffStore) -> None:
    acme, globex = _state(store, "acme"), _state(store, "globex")
    await acme.set(GLOBAL, "note", "acme's")
    assert (await globex.get(GLOBAL, "note")).present is False
    assert await globex.list(GLOBAL) == []
    await globex.set(GLOBAL, "note", "globex's")
    assert (await globex.delete(GLOBAL, "note")).written is True
    assert (await acme.get(GLOBAL, "note")).value == "acme's"


async def test_a_new_key_in_a_full_namespace_is_refused_and_an_old_one_still_changes(
    store: StaffStore,
) -> None:
    state = _state(store, max_keys=2)
    await state.set(FLOW, "a", "1")
    await state.set(FLOW, "b", "1")
    refused = await state.set(FLOW, "c", "1")
    assert (refused.written, refused.reason) == (False, "at_cap")
    assert (await state.set(FLOW, "a", "2")).written is True
    assert (await state.set(STEP, "c", "1")).written is True  # another namespace


@pytest.mark.parametrize(
    "value", ["hunter2-password", "token sk-or-v1-0123456789abcdef0123456789", "ghp_" + "a1" * 18]
)
async def test_a_value_holding_a_secret_is_refused_without_repeating_it(
    store: StaffStore, value: str
) -> None:
    with pytest.raises(InputError) as refused:
        await _state(store).set(FLOW, "token", value)
    assert value not in str(refused.value) and "secret" in str(refused.value)
    assert (await _state(store).get(FLOW, "token")).present is False


@pytest.mark.parametrize(
    ("build", "problem"),
    [
        (lambda: ScopeRef.named("step", workflow="triage"), "needs a step"),
        (lambda: ScopeRef.named("workflow"), "needs a workflow"),
        (lambda: ScopeRef.named("project", workflow="triage"), "belongs to no workflow"),
        (lambda: ScopeRef.named("global", project="p"), "belongs to no project"),
        (lambda: ScopeRef.named("session"), "scope must be one of"),
        (lambda: ScopeRef.of_workflow("infra/deploy"), "letters, digits"),
    ],
)
def test_a_namespace_missing_or_holding_a_part_is_refused(build: object, problem: str) -> None:
    with pytest.raises(InputError, match=problem):
        build()  # type: ignore[operator]


@pytest.mark.parametrize("key", ["", "two words", "new\nline", "x" * 129])
async def test_a_bad_key_is_refused_and_nothing_is_written(store: StaffStore, key: str) -> None:
    with pytest.raises(InputError):
        await _state(store).set(FLOW, key, "1")
    assert await _state(store).list(FLOW) == []
