"""`staffstore serve` killed with SIGKILL under load: every receipt a client was told about is
on disk, and the store opens whole."""

from __future__ import annotations

import asyncio
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from contextlib import closing
from pathlib import Path

import httpx
from test_serve_command import free_port

from staffstore.proxy.config import hash_key
from staffstore.store import StaffStore
from staffstore.testing import FakeOpenRouter

CLIENT_KEY = "sk-crash-client"


def _start(
    db: Path, upstream_url: str, port: int, *, log: Path | None = None
) -> subprocess.Popen[bytes]:
    env = {**os.environ, "OPENROUTER_API_KEY": "sk-upstream"}
    command = [
        sys.executable, "-m", "staffstore", "--db", str(db), "serve", "--port", str(port),
        "--upstream", upstream_url, "--owner-key", f"acme=sha256:{hash_key(CLIENT_KEY)}",
        "--log-level", "debug" if log else "warning",
    ]  # fmt: skip
    if log:  # the access log too, so the log shows every request
        config = log.with_suffix(".toml")
        config.write_text("[serve]\naccess_log = true\n")
        command += ["--config", str(config)]
    output = log.open("wb") if log else subprocess.DEVNULL
    process = subprocess.Popen(command, env=env, stdout=output, stderr=output)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=0.5).status_code == 200:
                return process
        except httpx.TransportError:
            time.sleep(0.1)
    process.kill()
    raise AssertionError("serve did not start")


def test_sigkill_under_load_loses_no_receipt_a_client_was_given(tmp_path: Path) -> None:
    fake = FakeOpenRouter(api_key="sk-upstream")
    db = tmp_path / "s.db"
    port = free_port()
    told: list[str] = []
    lock = threading.Lock()
    stop = threading.Event()

    def client(number: int) -> None:
        with httpx.Client(timeout=5) as http:
            turn = 0
            while not stop.is_set():
                turn += 1
                try:
                    response = http.post(
                        f"http://127.0.0.1:{port}/v1/chat/completions",
                        headers={"authorization": f"Bearer {CLIENT_KEY}"},
                        json={
                            "model": "m",
                            # every third one repeats, so hits and misses both run
                            "messages": [
                                {"role": "user", "content": f"crash {number} {turn % 3 or turn}"}
                            ],
                        },
                    )
                except httpx.TransportError:
                    return  # the server is gone
                if response.status_code == 200:
                    with lock:
                        told.append(response.headers["x-staffstore-receipt"])

    with fake.serve_in_thread() as upstream_url:
        process = _start(db, upstream_url, port)
        threads = [threading.Thread(target=client, args=(n,)) for n in range(8)]
        for thread in threads:
            thread.start()
        deadline = time.monotonic() + 20
        while len(told) < 150 and time.monotonic() < deadline:
            time.sleep(0.01)
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=10)
        stop.set()
        for thread in threads:
            thread.join(timeout=10)
    assert len(told) >= 150
    with closing(sqlite3.connect(db)) as check:
        assert check.execute("PRAGMA integrity_check").fetchone() == ("ok",)

    async def stored() -> set[str]:
        async with StaffStore.open(db) as store:
            return {r.id for r in await store.list_receipts("acme", limit=100_000)}

    missing = set(told) - asyncio.run(stored())
    assert not missing


def test_a_password_in_the_upstream_url_never_reaches_the_log(tmp_path: Path) -> None:
    password = "pw-in-the-url-9431"
    port, closed = free_port(), free_port()
    log = tmp_path / "serve.log"
    upstream = f"http://staff:{password}@127.0.0.1:{closed}/v1"
    process = _start(tmp_path / "s.db", upstream, port, log=log)
    try:
        for stream in (False, True):
            response = httpx.post(
                f"http://127.0.0.1:{port}/v1/chat/completions",
                headers={"authorization": f"Bearer {CLIENT_KEY}"},
                json={"model": "m", "messages": [{"role": "user", "content": "hi"}],
                      "stream": stream},
                timeout=10,
            )  # fmt: skip
            assert response.status_code == 502 and password not in response.text
    finally:
        process.terminate()
        process.wait(timeout=10)
    text = log.read_text()
    assert text.count("POST /v1/chat/completions") == 2  # the log did see the requests
    assert password not in text
