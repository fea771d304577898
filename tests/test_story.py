"""A session's story: last wins, replaced whole, history kept, in the working set when present."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from staffstore.cli.app import app
from staffstore.errors import InputError
from staffstore.models import Role, Turn
from staffstore.store import StaffStore
from staffstore.working_set import (
    MAX_STORY_CHARS,
    ROLE_BUDGETS,
    build_working_set,
    extract_story,
    write_story,
)
from staffstore.working_set.extract import asks, frame, is_key, latest_by_subject, same_subject

#: Runs on SQLite and on PostgreSQL (conftest.py).
pytestmark = pytest.mark.both_backends


async def test_the_newest_story_is_the_current_one(store: StaffStore) -> None:
    await write_story(store, "alice", "main", "We are porting the ledger to Rust.")
    await write_story(store, "alice", "main", "We are porting the ledger to Go.")
    session = await store.ensure_session("alice", "main")
    current = await store.story(session)
    assert current is not None and (current.version, current.body) == (
        2,
        "We are porting the ledger to Go.",
    )


async def test_a_replaced_story_stays_in_the_history(store: StaffStore) -> None:
    await write_story(store, "alice", "main", "first")
    await write_story(store, "alice", "main", "second")
    history = await store.story_history(await store.ensure_session("alice", "main"))
    assert [(row.version, row.body, row.source) for row in history] == [
        (1, "first", "client"),
        (2, "second", "client"),
    ]


async def test_a_story_over_its_bound_is_refused(store: StaffStore) -> None:
    with pytest.raises(InputError, match="at most"):
        await write_story(store, "alice", "main", "x" * (MAX_STORY_CHARS + 1))


async def test_the_working_set_carries_the_current_story_only(store: StaffStore) -> None:
    await write_story(store, "alice", "main", "The deploy target is STAGING-OLD.")
    await write_story(store, "alice", "main", "The deploy target is PROD-EU.")
    working_set = await build_working_set(
        store, Turn(owner="alice", text="where do we deploy?", session="main")
    )
    sent = "\n".join(m.content for m in working_set.messages)
    assert "PROD-EU" in sent and "STAGING-OLD" not in sent
    assert working_set.part_tokens["story"] > 0


async def test_the_story_keeps_within_its_part_budget(store: StaffStore) -> None:
    await write_story(store, "alice", "main", "decided: " + "ledger " * 280)
    budgets = ROLE_BUDGETS["main"].with_parts(story=40)
    working_set = await build_working_set(
        store, Turn(owner="alice", text="what did we decide?", session="main"), budgets
    )
    assert 0 < working_set.part_tokens["story"] <= 40


async def test_an_extractive_story_keeps_the_newest_value_of_each_subject(
    store: StaffStore,
) -> None:
    session = await store.ensure_session("alice", "main")
    await store.append_messages(
        session,
        [
            ("user", "Hello there. The database port is 5432."),
            ("assistant", "Noted."),
            ("user", "We decided to name the service Heron."),
            ("user", "Change of plan: the database port is 6543."),
        ],
    )
    row = await extract_story(store, "alice", "main")
    assert row is not None and row.source == "extractive"
    assert "6543" in row.body and "5432" not in row.body and "Heron" in row.body
    assert "Noted" not in row.body


def test_a_revised_value_has_the_subject_of_the_value_it_revises() -> None:
    assert same_subject(
        frame("The database port is 5432."), frame("Update: the database port is now 6543.")
    )
    assert not same_subject(
        frame("The database port is 5432."), frame("The migration deadline is March-14.")
    )


def test_the_newer_of_two_sentences_on_one_subject_wins() -> None:
    said = [("user", "The database port is 5432."), ("user", "The database port is 6543.")]
    assert latest_by_subject(said, 500) == ["The database port is 6543."]


@pytest.mark.parametrize(
    "sentence",
    [
        "why does the 1st request after a deploy take 8 seconds",
        "was the leaked Stripe key ever used",
        "Translate 'good morning' into German",
        "convert 72 fahrenheit to celsius",
        "Is port 5432 open?",
    ],
)
def test_a_question_or_a_request_states_nothing(sentence: str) -> None:
    assert asks(sentence) and not is_key(sentence)


def test_a_statement_that_names_or_numbers_something_is_key() -> None:
    assert not asks("The database port is 5433.") and is_key("The database port is 5433.")
    assert is_key("Whichever region we pick, Kestrel ships first.")  # "whichever" asks nothing


def test_an_assistants_numbers_and_names_are_no_story_but_its_decisions_are() -> None:
    said = [
        ("user", "Why does the export fail?"),
        (
            "assistant",
            "The endpoint returns 404 since Tuesday. We agreed to pin the client to 2.3.",
        ),
        ("user", "The release train leaves at 16:00."),
    ]
    assert latest_by_subject(said, 500) == [
        "We agreed to pin the client to 2.3.",
        "The release train leaves at 16:00.",
    ]


def test_story_set_and_show_on_the_command_line(tmp_path: Path) -> None:
    runner = CliRunner()
    db = str(tmp_path / "s.db")
    base = ["--db", db, "story"]
    who = ["--owner", "alice", "--session", "main"]
    assert runner.invoke(app, [*base, "set", "We ship on Friday.", *who]).exit_code == 0
    assert runner.invoke(app, [*base, "set", "We ship on Monday.", *who]).exit_code == 0
    shown = runner.invoke(app, [*base, "show", *who])
    assert shown.stdout.strip() == "We ship on Monday."
    history = runner.invoke(app, [*base, "show", "--history", *who])
    assert "Friday" in history.stdout and "Monday" in history.stdout


async def test_a_stale_extractive_line_gives_way_to_a_newer_message(store: StaffStore) -> None:
    session = await store.ensure_session("alice", "main")
    chatter: list[tuple[Role, str]] = [("assistant", f"ok {n}") for n in range(9)]
    await store.append_messages(session, [("user", "The database port is 5432."), *chatter])
    await extract_story(store, "alice", "main")  # the tail no longer holds the first value
    await store.append_messages(
        session, [("user", "Update: the database port is now 6543."), *chatter]
    )
    working_set = await build_working_set(
        store, Turn(owner="alice", text="which port?", session="main")
    )
    sent = "\n".join(m.content for m in working_set.messages)
    assert "6543" in sent and "5432" not in sent
