"""A whole store copied between SQLite and PostgreSQL (`staffstore copy`), and a store's schema
brought up to date (`staffstore migrate`).

Real SQLite files under tmp_path, a throwaway PostgreSQL server (conftest.py), and the real
command line in subprocesses, two of them at once where two migrations race.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from staffstore.errors import InputError, MissingStoreError, StoreError
from staffstore.gate import query_first
from staffstore.identity import bytes_hash
from staffstore.jobs import JobRequest
from staffstore.jobs.identity import new_job
from staffstore.models import NewClaim, Receipt, Turn
from staffstore.state import AgentState, Scope, WorkingState
from staffstore.store import StaffStore
from staffstore.store.copy import ALL_TABLES, TABLES, copy_store
from staffstore.store.database import Database
from staffstore.store.kept_prompts import KeptPrompt
from staffstore.store.memory_tables import (
    DigestRow,
    LessonRow,
    MemorySettingsRow,
    MemoryTables,
    RunRow,
    ScopedRow,
)
from staffstore.store.migrations import MIGRATIONS
from staffstore.store.migrations_postgres import MIGRATIONS as POSTGRES_MIGRATIONS
from staffstore.store.migrations_postgres import SCHEMA_SETTING
from staffstore.store.sync_store import KeptAnswer, PaidOrigin, TurnRecord

MOMENT = datetime(2026, 3, 2, 9, 0, 0, 123456, tzinfo=UTC)
SCOPE_KEY = b"test-scope-key-0123456789abcdef"
PASSWORD = "s3cret"
PORT_QUESTION = "What port does the api listen on?"
FLAKY_QUESTION = "Which tests are flaky in the ledger replay?"
RETRACTED_QUESTION = "Is the ledger replay deterministic?"
#: An exact repeat of each stored question, a paraphrase, and one nothing answers.
TURNS = [
    ("acme", PORT_QUESTION),
    ("acme", FLAKY_QUESTION),
    ("acme", RETRACTED_QUESTION),
    ("acme", "which tests in the ledger replay are flaky?"),
    ("acme", "How long should sourdough bread proof overnight?"),
    ("globex", PORT_QUESTION),
]
SHOP_SCHEMA: dict[str, Any] = {
    "type": "shopping_assistant_state",
    "fields": {
        "step": {"type": "enum", "values": ["sizes", "checkout", "done"]},
        "offer": {"type": "string"},
        "cart_note": {"type": "text", "pii": True},
    },
    "agent_state": {"scope": "conversation", "max_bytes": 16384, "write": "both"},
}
ARTIFACT = bytes(range(256)) * 3  # every byte value, NUL first


class Clock:
    def __init__(self) -> None:
        self.now = MOMENT

    def __call__(self) -> datetime:
        self.now += timedelta(seconds=1)
        return self.now


def _receipt(number: int, **fields: Any) -> Receipt:
    started = MOMENT + timedelta(minutes=number, microseconds=number)
    values: dict[str, Any] = {
        "id": f"rcpt_{number}", "owner": "acme", "outcome": "miss", "reason": "no_candidate",
        "status": "ok", "model": "fake/one", "prompt_tokens": 12, "completion_tokens": 7,
        "cost_usd": 0.1 + 0.2, "inference_avoided": False, "inference_attempted": True,
        "latency_ms": 1 / 3, "started_at": started, "finished_at": started,
        "question": f"question {number}", "answer": f"answer {number}",
    }  # fmt: skip
    return Receipt(**{**values, **fields})


async def fill(store: StaffStore) -> None:
    """Something in every table, through the public API: claims (one superseded by a later
    revision, one retracted), receipts, a kept answer, sessions and messages, artifacts, jobs
    with outputs, working state and agent state."""
    port = NewClaim(
        owner="acme", agent="kernel", question=PORT_QUESTION, answer="8080", source="job",
        job_id="J-1", repository="acme/api", revision="r1",
    )  # fmt: skip
    await store.ensure_claim(port, now=MOMENT)
    await store.ensure_claim(
        port.model_copy(update={"answer": "8443", "revision": "r2"}), now=MOMENT
    )
    flaky = await store.ensure_claim(
        NewClaim(owner="acme", question=FLAKY_QUESTION, answer="test_ledger_order, 1 run in 10"),
        now=MOMENT,
    )
    retracted = await store.ensure_claim(
        NewClaim(owner="acme", question=RETRACTED_QUESTION, answer="yes"), now=MOMENT
    )
    await store.retract_claim("acme", retracted.id)
    await store.ensure_claim(
        NewClaim(owner="globex", question=PORT_QUESTION, answer="9090", agent=None), now=MOMENT
    )
    await store.ensure_claim(
        NewClaim(owner="acme", question="Où est le café « Zoë » ?", answer="rue 3.11"),
        now=MOMENT,
    )

    await store.add_receipt(_receipt(1))
    await store.add_receipt(
        _receipt(2, cost_usd=None, prompt_tokens=None, completion_tokens=None, model=None,
                 question=None, answer=None, error="upstream said no", status="error")
    )  # fmt: skip
    await store.add_receipt(
        _receipt(3, outcome="hit", reason="exact", inference_avoided=True,
                 inference_attempted=False, cost_usd=0.0, claim_id=flaky.id,
                 served_from="rcpt_1", avoided_cost_usd=0.1 + 0.2)
    )  # fmt: skip
    kept = KeptAnswer(
        owner="acme", namespace="", request_hash="hash-4", receipt_id="rcpt_4",
        model="fake/one", answer="kept answer", created_at=MOMENT,
        prompt=KeptPrompt("Which port does the replay use?", "context-1"),
    )  # fmt: skip
    await store.record_turns(
        [TurnRecord(_receipt(4), session_name="standup",
                    messages=[("user", "question 4"), ("assistant", "kept answer")], kept=kept)],
        now=MOMENT,
    )  # fmt: skip
    await store.ensure_claim_origin("acme", flaky.id, PaidOrigin("rcpt_1", 0.1 + 0.2))
    session = await store.ensure_session("acme", "notes", now=MOMENT)
    await store.append_messages(
        session, [("system", "be brief"), ("user", "hi\nthere"), ("assistant", "")], now=MOMENT
    )
    # A session's story, replaced once: both versions are copied (the history is kept).
    await store.put_story(session, "about the notes", "client", MOMENT.timestamp())
    await store.put_story(session, "- the port is 8443", "extractive", MOMENT.timestamp())

    await store.ensure_artifact("acme", ARTIFACT, kind="binary", now=MOMENT)
    request = JobRequest(
        owner="acme", agent="kernel", kind="analyze", task="Find the flaky tests",
        repository="acme/api", revision="r2", inputs={"paths": ["tests/"]},
        command=["scan", "tests/"],
    )  # fmt: skip
    launched = await store.ensure_job_launch(new_job(request, "local"), reason="first_request")
    assert isinstance(launched, tuple)
    job, _new = launched
    await store.finish_job(
        "acme", job.id, status="succeeded", exit_code=0, substantive=True,
        outputs=[("report.txt", "text", b"scanned 12 files\n"), ("raw.bin", "binary", b"\0\xff")],
        claim_ids=[flaky.id], now=MOMENT,
    )  # fmt: skip
    await store.add_job_receipt("acme", job.id, "reused", "same_identity", matched=["task"])
    other = request.model_copy(update={"task": "Count the tests", "kind": "implement"})
    failed = await store.ensure_job_launch(new_job(other, "local"), reason="first_request")
    assert isinstance(failed, tuple)
    await store.finish_job("acme", failed[0].id, status="failed", error=None, now=MOMENT)

    trader = WorkingState(store, "acme", "trader", clock=Clock())
    await trader.set("stop_loss.2317", "262", "pre-market plan")
    await trader.set("stop_loss.2317", "254", "-5% per the strategy", ttl_hours=2.5)
    await trader.set("position_cap", "96%", "fee buffer")
    await trader.clear("position_cap", "closed")
    await trader.handoff("patrolling every 3 minutes")

    states = AgentState(store, "acme", scope_key=SCOPE_KEY, clock=Clock())
    await states.declare("shop", SHOP_SCHEMA)
    convo = Scope(kind="conversation", id="conv-8812")
    await states.put("shop", convo, {"step": "sizes", "offer": "familia-plus"})
    await states.put("shop", convo, {"step": "checkout", "cart_note": "size 42"})
    gone = Scope(kind="conversation", id="conv-0001")
    await states.put("shop", gone, {"step": "done"}, subject="ana@example.com")
    await states.erase(subject="ana@example.com")
    await store.run_sync(lambda sync: sync.memory_transaction(remember))


def remember(sync: MemoryTables) -> None:
    """Scoped state and workflow memory, through the store's own calls for them."""
    place, workflow, at = ("project", "acme/api", "", ""), ("acme/api", "nightly"), 1.0 / 7
    sync.put_scoped_value("acme", place, ScopedRow("branch", "main", "kernel", at))
    sync.put_run("acme", RunRow("run-1", *workflow, "done", "scan", "ok", [{"step": "scan"}],
                                [], at, at + 1))  # fmt: skip
    sync.put_run("acme", RunRow("run-2", *workflow, "running", "scan", None, [], [], at + 2))
    sync.put_lesson("acme", LessonRow("lesson-1", *workflow, "run-1", "scan", "remember",
                                      "skip vendored files", at, at))  # fmt: skip
    sync.put_digest("acme", DigestRow("digest-1", *workflow, "- run-1 done", 1, 1, 0, 0, at, at,
                                      "extractive", None, at))  # fmt: skip
    sync.put_memory_settings("acme", workflow, MemorySettingsRow("", True, 800, 5, None, None, at))


async def snapshot(store: StaffStore) -> dict[str, Any]:
    """What the store answers through its public API, for two stores to compare."""
    jobs = await store.list_jobs("acme", limit=100)
    working = WorkingState(store, "acme", "trader", clock=lambda: MOMENT)
    states = AgentState(store, "acme", scope_key=SCOPE_KEY, clock=lambda: MOMENT)
    sessions = [await store.ensure_session("acme", name) for name in ("standup", "notes")]
    decisions = [
        await query_first(store, Turn(owner=owner, text=text, now=MOMENT))
        for owner, text in TURNS
    ]  # fmt: skip
    return {
        "claims": [await store.list_claims(o, limit=100, now=MOMENT) for o in ("acme", "globex")],
        "receipts": await store.list_receipts(None, limit=100),
        "ledger": (await store.ledger(), await store.ledger("acme"), await store.job_ledger()),
        "kept": await store.list_kept_answers("acme", limit=100),
        "kept_answer": await store.kept_answer("acme", "", "hash-4", now=MOMENT),
        "origin": [await store.claim_origin("acme", c.id) for c in await store.list_claims("acme")],
        "artifact": await store.get_artifact("acme", bytes_hash(ARTIFACT)),
        "jobs": [await store.get_job("acme", job.id) for job in jobs],
        "job_receipts": await store.list_job_receipts("acme"),
        "messages": [await store.recent_messages(s, limit=100) for s in sessions],
        "working": (await working.get(history=50), await working.chain("stop_loss.2317")),
        "agent_state": (
            await states.read("shop", Scope(kind="conversation", id="conv-8812")),
            await states.list(),
            await store.agent_state_erasures("acme"),
        ),
        "gate": [(d.outcome, d.reason, d.claim_id) for d in decisions],
    }


def _columns(db: Database, table: str) -> list[str]:
    if db.dialect == "sqlite":
        rows = db.fetchall("SELECT name FROM pragma_table_info(?)", (table,))
    else:
        rows = db.fetchall(
            "SELECT column_name FROM information_schema.columns WHERE table_schema = "
            "current_schema() AND table_name = ? ORDER BY ordinal_position",
            (table,),
        )
    return [str(row[0]) for row in rows]


async def dump(store: StaffStore) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every table, as stored: numbered tables in their numbering's order (which
    the copy must keep), the rest by primary key; without the numbers themselves and
    PostgreSQL's search tokens, which each database makes for itself."""

    def read(db: Database) -> dict[str, list[tuple[Any, ...]]]:
        made = {"search_tokens", "text_tokens", "token_count"}
        found = {}
        for table in TABLES:
            columns = [c for c in _columns(db, table.name) if c not in made | {table.identity}]
            order = table.identity or ", ".join(table.key)
            found[table.name] = [
                tuple(row)
                for row in db.fetchall(f"SELECT {', '.join(columns)} FROM {table.name} "
                                       f"ORDER BY {order}")
            ]  # fmt: skip
        found["term_counts"] = db.fetchall("SELECT owner, term, n FROM term_counts ORDER BY 1, 2")
        found["store_settings"] = db.fetchall(
            "SELECT name, value FROM store_settings WHERE name <> ? ORDER BY name",
            (SCHEMA_SETTING,),
        )
        return found

    return await store.run_sync(lambda sync: read(sync.db))


async def contents(where: str | Path) -> tuple[dict[str, Any], dict[str, Any]]:
    async with StaffStore.open(where, create=False) as store:
        return await snapshot(store), await dump(store)


async def rows_of(where: str | Path) -> dict[str, Any]:
    async with StaffStore.open(where, create=False) as store:
        return await dump(store)


# -- the copy ------------------------------------------------------------------------------


async def test_a_store_goes_to_postgres_and_back_unchanged(
    db_path: Path, postgres_url: str, tmp_path: Path
) -> None:
    async with StaffStore.open(db_path) as source:
        await fill(source)
    back = tmp_path / "back.db"

    there = await copy_store(db_path, postgres_url)
    again = await copy_store(postgres_url, back)

    for report in (there, again):
        assert [count.table for count in report.tables] == list(ALL_TABLES)
        assert all(count.source == count.target for count in report.tables)
        # Every table held something, so each one was really carried across.
        assert all(count.target > 0 for count in report.tables), report.tables
    original, copied, returned = (
        await contents(db_path), await contents(postgres_url), await contents(back)
    )  # fmt: skip
    assert copied[1] == original[1]  # every row, bytes, NULLs and floats exactly
    assert returned[1] == original[1]
    assert copied[0] == original[0]  # what the store answers, the gate's decisions included
    assert returned[0] == original[0]


async def test_the_copies_answer_the_turns_as_the_source_does(
    db_path: Path, postgres_url: str, tmp_path: Path
) -> None:
    async with StaffStore.open(db_path) as source:
        await fill(source)
    await copy_store(db_path, postgres_url)
    await copy_store(postgres_url, tmp_path / "back.db")
    gates = [(await contents(where))[0]["gate"]
             for where in (db_path, postgres_url, tmp_path / "back.db")]  # fmt: skip
    assert gates[0] == gates[1] == gates[2]
    by_turn = dict(zip(TURNS, gates[0], strict=True))
    async with StaffStore.open(tmp_path / "back.db", create=False) as back:
        latest = {c.answer: c.id for c in await back.list_claims("acme", status="live")}
    assert by_turn[("acme", PORT_QUESTION)] == ("hit", "exact", latest["8443"])  # revision r2
    assert by_turn[("acme", FLAKY_QUESTION)][0] == "hit"
    assert by_turn[("acme", "which tests in the ledger replay are flaky?")][0] == "hit"
    assert by_turn[("acme", RETRACTED_QUESTION)][:2] == ("miss", "retracted")
    assert by_turn[("acme", "How long should sourdough bread proof overnight?")][0] == "miss"
    assert by_turn[("globex", PORT_QUESTION)][0] == "hit"
    assert by_turn[("globex", PORT_QUESTION)][2] != by_turn[("acme", PORT_QUESTION)][2]


async def test_floats_and_bytes_come_back_exactly(
    db_path: Path, postgres_url: str, tmp_path: Path
) -> None:
    async with StaffStore.open(db_path) as source:
        await fill(source)
    await copy_store(db_path, postgres_url)
    await copy_store(postgres_url, tmp_path / "back.db")
    async with StaffStore.open(tmp_path / "back.db", create=False) as back:
        receipt = await back.get_receipt("acme", "rcpt_1")
        nothing = await back.get_receipt("acme", "rcpt_2")
        (job,) = [j for j in await back.list_jobs("acme") if j.status == "succeeded"]
        report = next(a for a in (await back.get_job("acme", job.id)).artifacts
                      if a.name == "raw.bin")  # fmt: skip
        assert await back.get_artifact("acme", report.artifact_id) == b"\0\xff"
    assert receipt.cost_usd == 0.30000000000000004 and receipt.latency_ms == 1 / 3
    assert receipt.started_at == MOMENT + timedelta(minutes=1, microseconds=1)
    assert (nothing.cost_usd, nothing.prompt_tokens, nothing.question) == (None, None, None)


async def test_a_sqlite_file_copies_to_another_file(db_path: Path, tmp_path: Path) -> None:
    async with StaffStore.open(db_path) as source:
        await fill(source)
    await copy_store(db_path, tmp_path / "other.db", batch_size=1)  # a batch a row
    assert await contents(tmp_path / "other.db") == await contents(db_path)


async def test_a_postgres_store_copies_to_another_postgres_database(
    db_path: Path, postgres_url: str, migrated_postgres_url: str
) -> None:
    async with StaffStore.open(db_path) as source:
        await fill(source)
    await copy_store(db_path, postgres_url)
    await copy_store(postgres_url, migrated_postgres_url, batch_size=1)
    assert await contents(migrated_postgres_url) == await contents(db_path)


async def test_a_copy_onto_a_store_with_rows_is_refused_and_writes_nothing(
    db_path: Path, migrated_postgres_url: str
) -> None:
    async with StaffStore.open(db_path) as source:
        await fill(source)
    async with StaffStore.open(migrated_postgres_url) as target:
        await target.ensure_claim(NewClaim(owner="acme", question="who is on call", answer="ana"))
    before = await rows_of(migrated_postgres_url)
    with pytest.raises(StoreError, match=r"already holds a store \(claims has rows\).*nothing was"):
        await copy_store(db_path, migrated_postgres_url)
    assert await rows_of(migrated_postgres_url) == before


async def test_a_copy_that_stops_names_the_table_and_the_partial_target(
    db_path: Path, postgres_url: str
) -> None:
    async with StaffStore.open(db_path) as source:
        await source.ensure_claim(NewClaim(owner="acme", question="who is on call", answer="ana"))
    # A damaged source: a message of a session that is not there, written by a connection
    # without foreign keys (sqlite3's default). PostgreSQL refuses it mid-copy.
    with sqlite3.connect(db_path) as raw:
        raw.execute(
            "INSERT INTO messages (session_id, role, content, created_at) "
            "VALUES ('ghost', 'user', 'hi', 0)"
        )
    with pytest.raises(StoreError, match=r"stopped at messages .*holds part of the store"):
        await copy_store(db_path, postgres_url)
    # The batch that failed was rolled back and nothing came before it: trying again meets
    # the same row, not a refusal of a target with rows.
    with pytest.raises(StoreError, match=r"stopped at messages"):
        await copy_store(db_path, postgres_url)


async def test_leases_of_calls_in_flight_are_not_copied(db_path: Path, tmp_path: Path) -> None:
    async with StaffStore.open(db_path) as source:
        await source.ensure_claim(NewClaim(owner="acme", question="who is on call", answer="ana"))
        won = await source.run_sync(
            lambda sync: sync.claim_call("acme", "", "hash-1", "replica-1", ttl=3600)
        )
        assert won
    await copy_store(db_path, tmp_path / "copy.db")
    async with StaffStore.open(tmp_path / "copy.db", create=False) as copy:
        holder = await copy.run_sync(lambda sync: sync.call_holder("acme", "", "hash-1"))
        assert holder is None and await copy.count_claims() == 1


async def test_a_missing_source_is_an_error_and_creates_no_file(tmp_path: Path) -> None:
    with pytest.raises(MissingStoreError):
        await copy_store(tmp_path / "absent.db", tmp_path / "new.db")
    assert not (tmp_path / "absent.db").exists() and not (tmp_path / "new.db").exists()


async def test_a_store_is_not_copied_onto_itself(db_path: Path) -> None:
    async with StaffStore.open(db_path):
        pass
    with pytest.raises(InputError, match="the same store"):
        await copy_store(db_path, f"sqlite:///{db_path}")


# -- the command line ----------------------------------------------------------------------


def staffstore(*args: str) -> subprocess.CompletedProcess[str]:
    """Run `staffstore ARGS...` as its own process, away from any user's settings."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("STAFFSTORE_")}
    env["XDG_CONFIG_HOME"] = "/nonexistent-staffstore-config"
    return subprocess.run(
        [sys.executable, "-m", "staffstore", *args],
        capture_output=True, text=True, env=env, timeout=120, check=False,
    )  # fmt: skip


def succeeded(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 0, (done.stdout, done.stderr)
    assert "Traceback" not in done.stderr
    return done.stdout


def one_error(done: subprocess.CompletedProcess[str]) -> str:
    """The single `error: ...` line of a command that failed, checked to be the only one."""
    assert done.returncode == 1, (done.stdout, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), done.stderr
    return lines[0]


def test_migrate_a_new_sqlite_file_then_again_changes_nothing(db_path: Path) -> None:
    first = succeeded(staffstore("--db", str(db_path), "migrate"))
    assert first == f"migrated {db_path}: schema 0 -> schema {len(MIGRATIONS)}\n"
    second = succeeded(staffstore("--db", str(db_path), "migrate"))
    assert second == f"{db_path} is at schema {len(MIGRATIONS)} already: nothing to do\n"
    report = json.loads(succeeded(staffstore("--db", str(db_path), "migrate", "--json")))
    assert report == {
        "store": str(db_path), "backend": "sqlite", "before": len(MIGRATIONS),
        "after": len(MIGRATIONS), "migrated": False,
    }  # fmt: skip


async def test_a_postgres_store_opens_only_once_migrated(postgres_url: str) -> None:
    with pytest.raises(StoreError, match="run `staffstore migrate"):
        async with StaffStore.open(postgres_url):
            pass
    refused = one_error(staffstore("--db", postgres_url, "claims", "list", "--owner", "acme"))
    assert "staffstore migrate" in refused
    latest = len(POSTGRES_MIGRATIONS)
    first = succeeded(staffstore("--db", postgres_url, "migrate"))
    assert first == f"migrated {postgres_url}: no schema -> schema {latest}\n"
    again = succeeded(staffstore("--db", postgres_url, "migrate"))
    assert again == f"{postgres_url} is at schema {latest} already: nothing to do\n"
    async with StaffStore.open(postgres_url) as store:
        assert await store.count_claims() == 0


def test_two_migrations_at_once_both_succeed_and_one_does_the_work(postgres_url: str) -> None:
    env = {key: value for key, value in os.environ.items() if not key.startswith("STAFFSTORE_")}
    command = [sys.executable, "-m", "staffstore", "--db", postgres_url, "migrate", "--json"]
    racers = [
        subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
        )
        for _ in range(2)
    ]
    outputs = [racer.communicate(timeout=120) for racer in racers]
    assert [racer.returncode for racer in racers] == [0, 0], outputs
    reports = [json.loads(out) for out, _err in outputs]
    assert sorted(report["migrated"] for report in reports) == [False, True]
    assert {report["after"] for report in reports} == {len(POSTGRES_MIGRATIONS)}
    succeeded(staffstore("--db", postgres_url, "claims", "list", "--owner", "acme"))


def test_copy_prints_the_counts_of_both_sides(db_path: Path, tmp_path: Path) -> None:
    succeeded(staffstore("--db", str(db_path), "claims", "add", "--owner", "acme",
                         "--question", PORT_QUESTION, "--answer", "8080"))  # fmt: skip
    out = succeeded(staffstore("copy", "--from", str(db_path), "--to", str(tmp_path / "b.db")))
    lines = out.splitlines()
    assert lines[0].split() == ["TABLE", "SOURCE", "TARGET"]
    assert ["claims", "1", "1"] in [line.split() for line in lines]
    assert lines[-1].startswith(f"copied {db_path} to {tmp_path / 'b.db'}: ")
    help_text = " ".join(succeeded(staffstore("copy", "--help")).split())
    assert "writes made to the source while it runs may be missed" in help_text


def test_the_command_line_never_shows_a_password(db_path: Path, postgres_url: str) -> None:
    secret = postgres_url.replace("postgresql://postgres@", f"postgresql://postgres:{PASSWORD}@")
    assert PASSWORD in secret  # the throwaway server trusts every local connection: unused
    masked = secret.replace(PASSWORD, "***")
    unreachable = f"postgresql://postgres:{PASSWORD}@127.0.0.1:1/nowhere"
    succeeded(staffstore("--db", str(db_path), "claims", "add", "--owner", "acme",
                         "--question", PORT_QUESTION, "--answer", "8080"))  # fmt: skip
    runs = {
        "unmigrated": staffstore("--db", secret, "claims", "list", "--owner", "acme"),
        "migrate": staffstore("--db", secret, "migrate"),
        "migrate again": staffstore("--db", secret, "migrate", "--json"),
        "copy": staffstore("copy", "--from", str(db_path), "--to", secret),
        "copy refused": staffstore("copy", "--from", str(db_path), "--to", secret, "--json"),
        "copy back": staffstore("copy", "--from", secret, "--to", str(db_path.with_name("b.db"))),
        "copy back json": staffstore(
            "copy", "--from", secret, "--to", str(db_path.with_name("c.db")), "--json"
        ),
        "unreachable": staffstore("--db", unreachable, "migrate"),
        "copy to unreachable": staffstore("copy", "--from", str(db_path), "--to", unreachable),
    }
    for name, done in runs.items():
        assert PASSWORD not in done.stdout + done.stderr, name
        assert "Traceback" not in done.stderr, name
    for name in ("migrate", "copy", "copy back"):
        assert masked in succeeded(runs[name]), name
    assert json.loads(succeeded(runs["copy back json"]))["source"] == masked
    for name in ("unmigrated", "copy refused", "unreachable", "copy to unreachable"):
        assert "postgresql://postgres:***@" in one_error(runs[name]), name
    assert "already holds a store" in one_error(runs["copy refused"])
