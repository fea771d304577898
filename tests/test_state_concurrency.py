"""Two writers in two real processes on one SQLite file: a compare-and-swap has exactly one
winner each round, nothing is merged in silence, and merges of different fields lose nothing."""

from __future__ import annotations

import asyncio
import multiprocessing
from pathlib import Path
from typing import Any

import pytest
from state_writers import KEY, SCOPE, run_writer

from staffstore.state import AgentState, WorkingState
from staffstore.store import StaffStore

ROUNDS = 60
WRITERS = ("a", "b")


def _race(kind: str, db: Path, rounds: int = ROUNDS) -> dict[str, list[Any]]:
    context = multiprocessing.get_context("spawn")
    barrier = context.Barrier(len(WRITERS))
    out = context.Queue()
    processes = [
        context.Process(target=run_writer, args=(kind, str(db), who, rounds, barrier, out))
        for who in WRITERS
    ]
    for process in processes:
        process.start()
    results = dict(out.get(timeout=120) for _ in processes)
    for process in processes:
        process.join(timeout=30)
        assert process.exitcode == 0
    return results


async def _prepare(db: Path, schema: dict[str, Any]) -> None:
    async with StaffStore.open(db) as store:
        await WorkingState(store, "acme", "trader").set("stop_loss", "r0", "start")
        await AgentState(store, "acme", scope_key=KEY).declare("worker", schema)


SCHEMA = {
    "fields": {"step": {"type": "integer"}, "by": {"type": "string"},
               "a": {"type": "integer"}, "b": {"type": "integer"}},
    "agent_state": {"scope": "task"},
}  # fmt: skip


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "race.db"
    asyncio.run(_prepare(path, SCHEMA))
    return path


def test_two_expected_value_writers_have_exactly_one_winner_each_round(db: Path) -> None:
    results = _race("expected_value", db)
    for n in range(ROUNDS):
        outcomes = [results[who][n] for who in WRITERS]
        winners = [o for o in outcomes if o[1]]
        losers = [o for o in outcomes if not o[1]]
        assert len(winners) == 1 and len(losers) == 1, outcomes
        # The loser is told the value the winner wrote, and wrote nothing itself.
        assert losers[0][2:] == ("conflict", f"r{n + 1}")

    async def chain() -> list[Any]:
        async with StaffStore.open(db) as store:
            return await WorkingState(store, "acme", "trader").chain("stop_loss")

    events = asyncio.run(chain())[1:]  # after the starting value
    assert [(e.old_value, e.new_value) for e in events] == [
        (f"r{n}", f"r{n + 1}") for n in range(ROUNDS)
    ]
    winners_by_round = {n: who for who in WRITERS for (n, won, _, _) in results[who] if won}
    assert [e.by for e in events] == [winners_by_round[n] for n in range(ROUNDS)]


def test_two_if_version_writers_have_exactly_one_winner_each_round(db: Path) -> None:
    results = _race("if_version", db)
    for n in range(ROUNDS):
        outcomes = [results[who][n] for who in WRITERS]
        assert sorted(o[1] for o in outcomes) == [False, True], outcomes
        assert {o[3] for o in outcomes} == {n + 1}  # the loser is told the winner's version
        assert [o[2] for o in outcomes if not o[1]] == ["conflict"]

    async def final() -> Any:
        async with StaffStore.open(db) as store:
            return await AgentState(store, "acme", scope_key=KEY).read("worker", SCOPE)

    state = asyncio.run(final())
    assert state.version == ROUNDS and state.body["step"] == ROUNDS


def test_parallel_merges_of_different_fields_never_lose_a_write(db: Path) -> None:
    results = _race("merge", db)
    assert all(stored for who in WRITERS for (_, stored, _, _) in results[who])
    versions = sorted(version for who in WRITERS for (_, _, _, version) in results[who])
    assert versions == list(range(1, 2 * ROUNDS + 1))  # every write stored, none twice

    async def final() -> Any:
        async with StaffStore.open(db) as store:
            return await AgentState(store, "acme", scope_key=KEY).read("worker", SCOPE)

    state = asyncio.run(final())
    assert state.body == {"a": ROUNDS - 1, "b": ROUNDS - 1} and state.version == 2 * ROUNDS
