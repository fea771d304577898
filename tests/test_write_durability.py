"""An acknowledged write survives everything else that touches the database file: a job route
opening its own store, the command line writing to the same file, and `kill -9` of the server.

Issue 36: a header check read the file with plain Python I/O inside the server; closing that
descriptor dropped the server's POSIX locks on the file, so the next CLI command to close took
itself for the last connection, checkpointed and deleted the -wal, and the server went on
committing to the deleted one. These tests run the real `staffstore serve` and the real CLI as
separate processes and read every acknowledged write back from a third.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from test_serve_command import free_port

from staffstore.errors import CorruptStoreError
from staffstore.models import NewClaim
from staffstore.proxy.config import hash_key
from staffstore.store import StaffStore
from staffstore.testing import FakeOpenRouter

CLIENT_KEY = "sk-durability-client"
OWNER = "acme"
SCOPE_KEY = "durability-scope-key-0123456789"
#: A job command that leaves one finding, so a dispatch through the CLI stores a claim too.
FINDING = (
    "import json, os\n"
    "open(os.environ['STAFFSTORE_FINDINGS'], 'a').write(json.dumps("
    "{'question': 'Which port does the durability job use?', 'answer': '8787'}) + '\\n')\n"
)


@dataclass
class Serve:
    """A running `staffstore serve` subprocess and what the tests need to reach it."""

    process: subprocess.Popen[bytes]
    base_url: str
    db: Path
    env: dict[str, str]

    def post(self, path: str, body: Any) -> httpx.Response:
        return httpx.post(
            self.base_url + path,
            json=body,
            headers={"authorization": f"Bearer {CLIENT_KEY}"},
            timeout=10,
        )

    def get(self, path: str) -> httpx.Response:
        return httpx.get(
            self.base_url + path, headers={"authorization": f"Bearer {CLIENT_KEY}"}, timeout=10
        )

    def set_state(self, agent: str, key: str, value: str) -> None:
        """An acknowledged working-state write over HTTP."""
        response = self.post(
            f"/v1/staffstore/state/{agent}/set", {"key": key, "value": value, "reason": "test"}
        )
        assert response.status_code == 200, response.text

    def cli(self, *args: str) -> str:
        """Run `staffstore --db DB ARGS` as its own process; its standard output."""
        done = subprocess.run(
            [sys.executable, "-m", "staffstore", "--db", str(self.db), *args],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 0, (args, done.stdout, done.stderr)
        return done.stdout

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=10)


@contextmanager
def serving(tmp_path: Path, upstream_url: str = "http://127.0.0.1:9/v1") -> Iterator[Serve]:
    """`staffstore serve` with an owner key, a job command and agent state, as its own process."""
    db = tmp_path / "s.db"
    port = free_port()
    config = tmp_path / "serve.toml"
    command = json.dumps([sys.executable, "-c", FINDING])
    config.write_text(
        f'[serve.jobs]\ndir = "jobs"\n[serve.jobs.commands]\nscan = {command}\n', encoding="utf-8"
    )
    env = {
        **os.environ,
        "OPENROUTER_API_KEY": "sk-upstream",
        "STAFFSTORE_STATE_KEY": SCOPE_KEY,
        "STAFFSTORE_JOBS_DIR": str(tmp_path / "jobs"),
    }
    serve = [
        sys.executable, "-m", "staffstore", "--db", str(db), "serve", "--config", str(config),
        "--port", str(port), "--upstream", upstream_url, "--log-level", "warning",
        "--owner-key", f"{OWNER}=sha256:{hash_key(CLIENT_KEY)}",
    ]  # fmt: skip
    process = subprocess.Popen(
        serve,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base_url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                if httpx.get(base_url + "/healthz", timeout=0.5).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert process.poll() is None and time.monotonic() < deadline, "serve did not start"
            time.sleep(0.05)
        yield Serve(process, base_url, db, env)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=10)


def working_state(db: Path, agent: str) -> dict[str, str]:
    """The agent's live working state as a third process sees it (`staffstore state get`)."""
    done = subprocess.run(
        [sys.executable, "-m", "staffstore", "--db", str(db), "state", "get",
         "--owner", OWNER, "--agent", agent, "--json"],
        capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    return {entry["key"]: entry["value"] for entry in json.loads(done.stdout)["entries"]}


def read_now(db: Path, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Rows as a fresh sqlite3 connection (not staffstore's code) reads them, in milliseconds.

    Quick on purpose: the server's checkpointer copies its WAL into the file every half
    second, which would hide a commit to a deleted WAL from a slower look until kill -9.
    """
    with closing(sqlite3.connect(db)) as check:
        return check.execute(sql, params).fetchall()


def state_rows(db: Path, agent: str) -> dict[str, str]:
    rows = read_now(
        db, "SELECT key, value FROM working_state WHERE owner = ? AND agent = ?", (OWNER, agent)
    )
    return dict(rows)


def deleted_database_files(pid: int, db: Path) -> list[str]:
    """The process's open descriptors on a deleted -wal or -shm of `db` (Linux's /proc)."""
    folder = Path(f"/proc/{pid}/fd")
    if not folder.is_dir():
        return []  # no /proc here: the reads above still tell a lost write
    targets = []
    for link in folder.iterdir():
        try:
            targets.append(os.readlink(link))
        except OSError:
            continue  # closed meanwhile
    return [t for t in targets if t.startswith(str(db)) and t.endswith(" (deleted)")]


def test_a_job_lookup_then_a_cli_write_loses_no_acknowledged_state(tmp_path: Path) -> None:
    with serving(tmp_path) as serve:
        serve.set_state("wal", "k1", "v1")
        assert serve.get("/v1/staffstore/jobs/abcdef").status_code == 404
        serve.cli("state", "set", "c1", "x", "--owner", OWNER, "--reason", "cli")
        serve.set_state("wal", "k2", "v2")
        seen = state_rows(serve.db, "wal")
        deleted = deleted_database_files(serve.process.pid, serve.db)
        serve.kill()
    assert seen == {"k1": "v1", "k2": "v2"}
    assert deleted == []
    assert working_state(serve.db, "wal") == {"k1": "v1", "k2": "v2"}
    assert state_rows(serve.db, "default") == {"c1": "x"}  # the CLI's own write
    with closing(sqlite3.connect(serve.db)) as check:
        assert check.execute("PRAGMA integrity_check").fetchone() == ("ok",)


#: Prints the rows of the query argv[2] reads from the database argv[1], as JSON.
READ_ROWS = (
    "import json, sqlite3, sys\n"
    "print(json.dumps(sqlite3.connect(sys.argv[1]).execute(sys.argv[2]).fetchall()))\n"
)


def in_another_process(db: Path, sql: str) -> list[list[Any]]:
    """The rows of `sql` as a fresh process (plain sqlite3, not staffstore) reads them."""
    done = subprocess.run(
        [sys.executable, "-c", READ_ROWS, str(db), sql],
        capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    rows: list[list[Any]] = json.loads(done.stdout)
    return rows


def claim(question: str) -> NewClaim:
    return NewClaim(owner=OWNER, question=question, answer="kept")


async def test_a_second_store_opened_and_closed_beside_a_first_keeps_its_writes(
    tmp_path: Path,
) -> None:
    # The root cause alone, whatever the proxy's routes do: this process plays the server.
    db = tmp_path / "s.db"
    async with StaffStore.open(db) as kept:
        await kept.ensure_claim(claim("Which question came first?"))
        async with StaffStore.open(db) as second:  # a library user's second store
            await second.count_claims()
        done = subprocess.run(
            [sys.executable, "-m", "staffstore", "--db", str(db), "claims", "add",
             "--owner", OWNER, "--question", "Which process wrote this?", "--answer", "cli"],
            capture_output=True, timeout=60,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        await kept.ensure_claim(claim("Which question came last?"))
        deleted = deleted_database_files(os.getpid(), db)
        seen = in_another_process(db, "SELECT question FROM claims ORDER BY question")
    assert deleted == []
    assert seen == [
        ["Which process wrote this?"], ["Which question came first?"], ["Which question came last?"]
    ]  # fmt: skip


async def test_a_file_that_is_not_sqlite_is_refused_and_left_as_it_was(tmp_path: Path) -> None:
    # SQLite itself reads the header now: it must not change or add a file it refuses.
    db = tmp_path / "notes.db"
    db.write_bytes(b"not a database, a note\n" * 100)
    with pytest.raises(CorruptStoreError, match="not a staffstore database"):
        async with StaffStore.open(db):
            pass
    assert db.read_bytes() == b"not a database, a note\n" * 100
    assert sorted(path.name for path in tmp_path.iterdir()) == ["notes.db"]


#: What a third process must find, by name: a query, its parameters and the rows it returns.
Facts = dict[str, tuple[str, tuple[Any, ...], list[tuple[Any, ...]]]]

CLAIM_STATUS = "SELECT status FROM claims WHERE id = ?"
CLAIMS_FILE = (
    '{"owner": "acme", "question": "Which shard holds tenant 1?", "answer": "shard 1"}\n'
    '{"owner": "acme", "question": "Which shard holds tenant 2?", "answer": "shard 2"}\n'
)
SCHEMA = {
    "fields": {"step": {"type": "enum", "values": ["sizes", "checkout"]}},
    "agent_state": {"scope": "conversation"},
}


def unmet(db: Path, facts: Facts) -> list[str]:
    """The facts a fresh sqlite3 connection does not find as expected."""
    with closing(sqlite3.connect(db)) as connection:
        return [
            name
            for name, (sql, params, rows) in facts.items()
            if sorted(connection.execute(sql, params).fetchall()) != rows
        ]


class Writes:
    """Acknowledged writes through a running server and the CLI, and what each left behind."""

    def __init__(self, serve: Serve) -> None:
        self.serve = serve
        self.facts: Facts = {}
        self.turns = 0
        self.receipts: list[str] = []

    def expect(self, name: str, rows: list[tuple[Any, ...]], sql: str, *params: Any) -> None:
        self.facts[name] = (sql, params, rows)

    def over_http(self) -> None:
        """A working-state set and a chat turn (a receipt), each answered 200."""
        self.turns += 1
        key, value = f"h{self.turns}", f"v{self.turns}"
        self.serve.set_state("http", key, value)
        self.expect(
            f"http state {key}", [(value,)],
            "SELECT value FROM working_state WHERE owner = ? AND agent = 'http' AND key = ?",
            OWNER, key,
        )  # fmt: skip
        asked = {"role": "user", "content": f"turn number {self.turns}"}
        turn = self.serve.post("/v1/chat/completions", {"model": "m", "messages": [asked]})
        assert turn.status_code == 200, turn.text
        receipt = turn.headers["x-staffstore-receipt"]
        self.receipts.append(receipt)
        self.expect(f"receipt {receipt}", [(receipt,)], "SELECT id FROM receipts WHERE id = ?",
                    receipt)  # fmt: skip

    def verify(self) -> None:
        """Every fact so far, from a third process, while the server runs."""
        assert unmet(self.serve.db, self.facts) == []
        assert deleted_database_files(self.serve.process.pid, self.serve.db) == []

    def cli(self, *args: str) -> Any:
        """Check what the last step wrote, run one CLI command (its JSON), then write over HTTP.

        The caller records what the command wrote; the next step checks it.
        """
        self.verify()
        end = args.index("--") if "--" in args else len(args)  # a job's command follows --
        out = self.serve.cli(*args[:end], "--json", *args[end:])
        self.over_http()
        return json.loads(out)


def test_every_cli_write_beside_a_running_server_loses_no_acknowledged_write(
    tmp_path: Path,
) -> None:
    (tmp_path / "claims.jsonl").write_text(CLAIMS_FILE, encoding="utf-8")
    (tmp_path / "schema.json").write_text(json.dumps(SCHEMA), encoding="utf-8")
    fake = FakeOpenRouter(api_key="sk-upstream")
    with fake.serve_in_thread() as upstream_url, serving(tmp_path, upstream_url) as serve:
        run = Writes(serve)
        # Both of the server's job routes, which each open a store of their own, first.
        assert serve.get("/v1/staffstore/jobs/abcdef").status_code == 404
        job = {"agent": "kernel", "task": "scan the api", "command": "scan", "wait": True}
        dispatched = serve.post("/v1/staffstore/jobs/dispatch", job)
        assert dispatched.status_code == 201, dispatched.text
        run.expect("http job", [("succeeded",)], "SELECT status FROM jobs WHERE id = ?",
                   dispatched.json()["job"]["id"])  # fmt: skip
        run.over_http()
        owner = ("--owner", OWNER)

        added = run.cli("claims", "add", *owner, "--question", "Which db?", "--answer", "SQLite")
        run.expect("added claim", [("live",)], CLAIM_STATUS, added["id"])
        run.cli("claims", "import", str(tmp_path / "claims.jsonl"))
        run.expect("imported claims", [("shard 1",), ("shard 2",)],
                   "SELECT answer FROM claims WHERE question LIKE 'Which shard%'")  # fmt: skip
        run.cli("claims", "retract", added["id"], *owner)
        run.expect("added claim", [("retracted",)], CLAIM_STATUS, added["id"])
        run.cli("claims", "unretract", added["id"], *owner)
        run.expect("added claim", [("live",)], CLAIM_STATUS, added["id"])
        run.cli("claims", "supersede", added["id"], *owner, "--answer", "SQLite, in WAL mode")
        run.expect("added claim", [("superseded",)], CLAIM_STATUS, added["id"])
        run.expect("correction", [("live",)],
                   "SELECT status FROM claims WHERE answer = 'SQLite, in WAL mode'")  # fmt: skip
        promoted = run.cli("claims", "promote", run.receipts[0], *owner)
        run.expect("promoted claim", [("live",)], CLAIM_STATUS, promoted["id"])

        in_state = "SELECT key, value FROM working_state WHERE owner = ? AND agent = 'cli'"
        run.cli("state", "set", "c1", "x", *owner, "--reason", "cli", "--agent", "cli")
        run.expect("cli state", [("c1", "x")], in_state, OWNER)
        run.cli("state", "clear", "c1", *owner, "--reason", "done", "--agent", "cli")
        run.expect("cli state", [], in_state, OWNER)
        run.cli("state", "handoff", "pick up at c2", *owner, "--agent", "cli")
        run.expect("cli handoff", [("pick up at c2",)],
                   "SELECT note FROM working_handoffs WHERE agent = 'cli'")  # fmt: skip

        shop = ("--owner", OWNER, "--agent", "shop")
        run.cli("agent-state", "declare", str(tmp_path / "schema.json"), *shop)
        run.expect("schema", [("shop",)], "SELECT agent FROM agent_state_schemas")
        scope = ("--scope-kind", "conversation", "--scope-id", "c1", "--subject", "ana")
        run.cli("agent-state", "put", '{"step": "sizes"}', *shop, *scope)
        in_agent_state = "SELECT version FROM agent_states WHERE agent = 'shop'"
        run.expect("agent state", [(1,)], in_agent_state)
        run.cli("agent-state", "erase", *owner, "--subject", "ana")
        run.expect("agent state", [], in_agent_state)
        run.cli("agent-state", "sweep")

        task = ("--agent", "kernel", "--task", "scan the web", "--wait")
        launched = run.cli("jobs", "dispatch", *owner, *task, "--", sys.executable, "-c", FINDING)
        job_id = launched["job"]["id"]
        run.expect("cli job", [("succeeded",)], "SELECT status FROM jobs WHERE id = ?", job_id)
        run.expect("cli job's claim", [(1,)],
                   "SELECT count(*) FROM job_claims WHERE job_id = ?", job_id)  # fmt: skip
        run.cli("jobs", "attach", job_id, *owner)

        asked = run.cli("ask", *owner, "--upstream", upstream_url, "--model", "m", "Sky blue?")
        run.expect("asked", [(asked["receipt_id"],)], "SELECT id FROM receipts WHERE question = ?",
                   "Sky blue?")  # fmt: skip
        run.verify()
        serve.kill()
    assert unmet(serve.db, run.facts) == []
    with closing(sqlite3.connect(serve.db)) as connection:
        assert connection.execute("PRAGMA integrity_check").fetchone() == ("ok",)
