"""A large import normalises its questions in a helper process (store/keying.py): it stores
what an import keyed in one process stores, goes on keying here when the helper dies, and does
not run the caller's script a second time to start it (as multiprocessing's spawn would)."""

from __future__ import annotations

import io
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from contextlib import closing
from pathlib import Path

import pytest

from staffstore.models import NewClaim
from staffstore.processes import running as alive
from staffstore.store import StaffStore
from staffstore.store.async_store import key_claims
from staffstore.store.importer import parse_claims, store_claims
from staffstore.store.keying import BatchKeyer

#: The helper is started only where a second core can run it.
needs_two_cores = pytest.mark.skipif(
    (os.cpu_count() or 1) < 2, reason="a helper process is used only with two cores or more"
)

QUESTIONS = [
    "Why did the nightly backup on dbhost-{n} fail last Tuesday?",
    "hey, who owns the on-call rotation for shard {n} this week",
    "What's the p99 latency of the checkout API in eu-west-{n}?",
    "Could you tell me when release 2.{n} shipped — and was it rolled back?",
    "Wie lange dauert der Import von Kunde {n}?",
]


def claims_file(count: int) -> bytes:
    lines = []
    for n in range(count):
        question = QUESTIONS[n % len(QUESTIONS)].format(n=n)
        lines.append(json.dumps({"owner": "acme", "question": question, "answer": f"a{n}"}))
    return ("\n".join(lines) + "\n").encode()


async def import_into(db: Path, data: bytes, *, key_apart_from: int) -> int:
    async with StaffStore.open(db) as store:
        with parse_claims(io.BytesIO(data)) as parsed:
            report = await store_claims(store, parsed, batch_size=60, key_apart_from=key_apart_from)
    return report.added


def rows(db: Path) -> list[tuple[str, str, str]]:
    with closing(sqlite3.connect(db)) as connection:
        return connection.execute(
            "SELECT id, question, search_key FROM claims ORDER BY rowid"
        ).fetchall()


@needs_two_cores
async def test_an_import_keyed_in_a_helper_stores_what_one_keyed_here_stores(
    tmp_path: Path,
) -> None:
    data = claims_file(250)
    assert await import_into(tmp_path / "here.db", data, key_apart_from=10**9) == 250
    assert await import_into(tmp_path / "apart.db", data, key_apart_from=1) == 250
    assert rows(tmp_path / "apart.db") == rows(tmp_path / "here.db")


@needs_two_cores
async def test_the_helper_keys_as_key_claims_does_and_a_small_import_keys_here() -> None:
    batch = [
        NewClaim(owner="acme", question=QUESTIONS[n].format(n=n), answer="a") for n in range(5)
    ]
    async with BatchKeyer(len(batch), apart_from=len(batch)) as keyer:
        assert keyer.helper_pid is not None
        assert await (await keyer.start(batch)) == key_claims(batch)
    async with BatchKeyer(len(batch), apart_from=len(batch) + 1) as keyer:
        assert keyer.helper_pid is None
        assert await (await keyer.start(batch)) == key_claims(batch)


@needs_two_cores
@pytest.mark.parametrize("when", ["between batches", "holding a batch"])
async def test_when_the_helper_dies_the_batches_are_keyed_here(when: str) -> None:
    first = [
        NewClaim(owner="acme", question=f"what broke in build {n}?", answer="a") for n in range(40)
    ]
    second = [
        NewClaim(owner="acme", question=f"who fixed build {n}?", answer="a") for n in range(40)
    ]
    async with BatchKeyer(80, apart_from=1) as keyer:
        pid = keyer.helper_pid
        assert pid is not None
        assert await (await keyer.start(first)) == key_claims(first)
        if when == "between batches":
            os.kill(pid, signal.SIGKILL)
            keying = await keyer.start(second)
        else:  # stopped first, so that it dies holding the batch, not after answering it
            os.kill(pid, signal.SIGSTOP)
            keying = await keyer.start(second)
            os.kill(pid, signal.SIGKILL)
        assert await keying == key_claims(second)
        assert keyer.helper_pid is None


#: A caller's script with no `if __name__ == "__main__":` guard: starting the helper must not
#: import it again (it would import the file a second time, in the helper).
_UNGUARDED = """
import asyncio, sys
from staffstore.store import StaffStore
from staffstore.store.importer import read_claims, store_claims

print("script ran", flush=True)

async def main():
    async with StaffStore.open(sys.argv[1]) as store:
        with read_claims(sys.argv[2]) as parsed:
            report = await store_claims(store, parsed, batch_size=50, key_apart_from=1)
    print("added", report.added, flush=True)

asyncio.run(main())
"""


def test_an_unguarded_script_runs_once_when_its_import_uses_the_helper(tmp_path: Path) -> None:
    script = tmp_path / "load.py"
    script.write_text(_UNGUARDED)
    source = tmp_path / "claims.jsonl"
    source.write_bytes(claims_file(120))
    done = subprocess.run(
        [sys.executable, str(script), str(tmp_path / "s.db"), str(source)],
        capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    assert done.stdout.splitlines() == ["script ran", "added 120"]
    assert len(rows(tmp_path / "s.db")) == 120


#: Imports argv[2] into argv[1] through the helper, in small batches so that it runs a while.
_LONG_IMPORT = """
import asyncio, sys
from staffstore.store import StaffStore
from staffstore.store.importer import read_claims, store_claims

async def main():
    async with StaffStore.open(sys.argv[1]) as store:
        with read_claims(sys.argv[2]) as parsed:
            await store_claims(store, parsed, batch_size=100, key_apart_from=1)

asyncio.run(main())
"""


def helper_of(pid: int) -> int | None:
    """The keying helper whose parent is `pid`, from /proc; None while there is none."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            command = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        parent = int(stat.rsplit(")", 1)[1].split()[1])
        if parent == pid and b"staffstore.store.keying" in command:
            return int(entry.name)
    return None


@needs_two_cores
@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
def test_the_helper_exits_when_the_import_is_killed(tmp_path: Path) -> None:
    source = tmp_path / "claims.jsonl"
    source.write_bytes(claims_file(30_000))
    importing = subprocess.Popen(
        [sys.executable, "-c", _LONG_IMPORT, str(tmp_path / "s.db"), str(source)]
    )
    try:
        deadline = time.monotonic() + 60
        while (helper := helper_of(importing.pid)) is None:
            assert importing.poll() is None, "the import ended before its helper was seen"
            assert time.monotonic() < deadline, "no helper process started"
            time.sleep(0.02)
    finally:
        importing.kill()
        importing.wait()
    deadline = time.monotonic() + 30
    while alive(helper):
        assert time.monotonic() < deadline, "the helper outlived the import by 30 s"
        time.sleep(0.05)
