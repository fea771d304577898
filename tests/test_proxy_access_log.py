"""The proxy's access log: one line per request with the owner and the gate's decision, never a
key, a header or a query string; off unless asked for. Real servers, the openai SDK as client,
the fake upstream behind them."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
from openai import OpenAI
from test_proxy_support import (
    ALICE_ADMIN_KEY,
    ALICE_KEY,
    METRICS_KEY,
    UPSTREAM_KEY,
    ask,
    proxy_config,
    running_proxy,
)
from test_serve_command import free_port

from staffstore.errors import InputError
from staffstore.proxy.access_log import AccessLogWriter, json_line, text_line
from staffstore.proxy.app import create_app
from staffstore.proxy.config import build_config, hash_key
from staffstore.testing import FakeOpenRouter

_QUERY_SECRET = "sk-in-a-query-string-9999"
_CLIENT_KEY = "sk-client-access-log-8888"


def test_text_log_has_one_line_per_request_with_owner_and_gate_reason(tmp_path: Path) -> None:
    log = tmp_path / "access.log"
    with running_proxy(tmp_path / "p.db", access_log=True, access_log_file=log) as server:
        claim = server.post(
            {"question": "How do I rotate the proxy logs?", "answer": "Send SIGHUP."},
            key=ALICE_ADMIN_KEY,
            path="/staffstore/claims",
        )
        assert claim.status_code == 201, claim.text
        with server.sdk() as client:
            paraphrase = client.chat.completions.with_raw_response.create(
                **ask("how do i rotate proxy logs")
            )
            client.chat.completions.create(**ask("what colour is a duck's egg"))
            repeat = client.chat.completions.with_raw_response.create(
                **ask("what colour is a duck's egg")
            )
        ledger = httpx.get(
            f"{server.base_url}/staffstore/ledger?api_key={_QUERY_SECRET}",
            headers={"Authorization": f"Bearer {ALICE_KEY}"},
        )
        assert ledger.status_code == 200
        assert server.post(ask("hi"), key="sk-nobody-knows-this").status_code == 401
    # The server has stopped, so every queued line is written.
    lines = log.read_text().splitlines()
    assert len(lines) == 6, lines
    stored, hit, miss, again, read, refused = (line.split(" ") for line in lines)
    assert stored[2:5] == ["POST", "/v1/staffstore/claims", "201"]
    assert stored[1].startswith("127.0.0.1:") and stored[0].endswith("Z")
    assert hit[2:5] == ["POST", "/v1/chat/completions", "200"]
    assert hit[5].endswith("ms") and float(hit[5].removesuffix("ms")) >= 0
    assert hit[6:9] == ["owner=alice", "outcome=hit", "reason=paraphrase"]
    assert hit[9] == f"receipt={paraphrase.headers['x-staffstore-receipt']}"
    assert miss[6:9] == ["owner=alice", "outcome=miss", "reason=no_candidate"]
    assert again[6:9] == ["owner=alice", "outcome=hit", "reason=exact_repeat"]
    assert again[9] == f"receipt={repeat.headers['x-staffstore-receipt']}"
    assert read[2:7] == ["GET", "/v1/staffstore/ledger", "200", read[5], "owner=alice"]
    assert refused[4] == "401" and len(refused) == 6  # no owner: the key named none
    text = log.read_text()
    for secret in (ALICE_KEY, ALICE_ADMIN_KEY, UPSTREAM_KEY, "sk-nobody-knows-this", _QUERY_SECRET):
        assert secret not in text
    assert "api_key" not in text and "Bearer" not in text and "SIGHUP" not in text


def test_text_line_escapes_what_a_client_chose() -> None:
    line = text_line(
        {"time": "T", "client": "c", "method": "GET", "path": "/a b\nforged 200",
         "status": 404, "duration_ms": 1.0, "owner": "eve\nT c GET / 200"}
    )  # fmt: skip
    assert "\n" not in line
    assert line.split(" ")[3] == "/a%20b%0Aforged%20200"
    assert json.loads(json_line({"path": "/a\nb"})) == {"path": "/a\nb"}


@contextmanager
def _serve(tmp_path: Path, base_url: str, *flags: str) -> Iterator[tuple[str, Path]]:
    """`staffstore serve` in a process of its own; yields its URL and its stderr's file, which
    is complete once the block ends (the server has shut down by then)."""
    port = free_port()
    stderr = tmp_path / f"stderr-{port}.txt"
    command = [
        sys.executable, "-m", "staffstore", "--db", str(tmp_path / "s.db"), "serve",
        "--port", str(port), "--upstream", base_url, "--log-level", "warning",
        "--owner-key", f"acme=sha256:{hash_key(_CLIENT_KEY)}", *flags,
    ]  # fmt: skip
    env = {**os.environ, "OPENROUTER_API_KEY": "sk-upstream"}
    with stderr.open("wb") as output:
        process = subprocess.Popen(command, env=env, stderr=output)
        url = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + 20
            while True:
                try:
                    if httpx.get(url + "/healthz", timeout=0.5).status_code == 200:
                        break
                except httpx.TransportError:
                    if time.monotonic() > deadline or process.poll() is not None:
                        pytest.fail(f"serve did not start: {stderr.read_text()}")
                    time.sleep(0.1)
            yield url, stderr
        finally:
            process.terminate()
            process.wait(timeout=10)


def _two_turns(url: str) -> None:
    with OpenAI(base_url=url + "/v1", api_key=_CLIENT_KEY, max_retries=0) as client:
        for _ in range(2):  # a miss, then its exact repeat
            client.chat.completions.create(**ask("which port does the proxy use"))


@pytest.fixture(scope="module")
def upstream_url() -> Iterator[str]:
    with FakeOpenRouter(api_key="sk-upstream").serve_in_thread() as base_url:
        yield base_url


def test_serve_access_log_json_goes_to_stderr(tmp_path: Path, upstream_url: str) -> None:
    with _serve(tmp_path, upstream_url, "--access-log", "--access-log-format", "json") as (
        url,
        stderr,
    ):
        _two_turns(url)
        assert httpx.get(url + "/healthz").status_code == 200
    records = [json.loads(line) for line in stderr.read_text().splitlines() if line[:1] == "{"]
    turns = [r for r in records if r["path"] == "/v1/chat/completions"]
    assert [(r["outcome"], r["reason"]) for r in turns] == [
        ("miss", "no_candidate"),
        ("hit", "exact_repeat"),
    ]
    assert {r["owner"] for r in turns} == {"acme"} and {r["status"] for r in turns} == {200}
    assert all(r["method"] == "POST" and r["duration_ms"] >= 0 for r in turns)
    assert set(turns[0]) == {
        "time", "client", "method", "path", "status", "duration_ms", "owner", "outcome",
        "reason", "receipt",
    }  # fmt: skip
    assert [r["owner"] for r in records if r["path"] == "/healthz"][-1] is None
    assert _CLIENT_KEY not in stderr.read_text()


def test_serve_writes_no_access_log_without_the_flag(tmp_path: Path, upstream_url: str) -> None:
    with _serve(tmp_path, upstream_url) as (url, stderr):
        _two_turns(url)
    text = stderr.read_text()
    assert text.startswith("staffstore serve: database")  # the banner: stderr was captured
    assert "/v1/chat/completions" not in text and "POST" not in text


def test_a_file_turns_the_log_on_and_a_bad_format_is_refused(tmp_path: Path) -> None:
    config = tmp_path / "serve.toml"
    config.write_text('[serve]\naccess_log_file = "logs/access.log"\n')
    named = build_config(config_file=config, owner_keys=["a=k"], environ={})
    assert named.access_log and named.access_log_file == tmp_path / "logs" / "access.log"
    off = build_config(config_file=config, owner_keys=["a=k"], access_log=False, environ={})
    assert not off.access_log
    assert not build_config(owner_keys=["a=k"], environ={}).access_log
    with pytest.raises(InputError, match="access_log_format"):
        build_config(owner_keys=["a=k"], access_log_format="xml", environ={})


def test_an_access_log_that_cannot_be_opened_stops_the_server_at_startup(tmp_path: Path) -> None:
    config = proxy_config(tmp_path / "p.db", access_log=True, access_log_file=tmp_path / "no" / "a")
    with pytest.raises(InputError, match="cannot open the access log"):
        create_app(config)


# -- a log reader that stops reading -----------------------------------------------------------


def _record(index: int) -> dict[str, object]:
    return {
        "time": "2026-03-02T09:14:07.120Z", "client": "127.0.0.1:1", "method": "POST",
        "path": f"/v1/chat/completions/{index:06d}", "status": 200, "duration_ms": 1.0,
        "owner": "acme",
    }  # fmt: skip


async def _log_in_batches(writer: AccessLogWriter, first: int, count: int, batch: int) -> None:
    """Log `count` records, `batch` per hand-over, as a busy server would."""
    for start in range(first, first + count, batch):
        for index in range(start, min(start + batch, first + count)):
            writer.write(_record(index))
        await asyncio.sleep(AccessLogWriter.BATCH_SECONDS + 0.05)


def test_a_stalled_log_reader_drops_lines_past_the_bound_and_the_log_says_how_many(
    tmp_path: Path,
) -> None:
    # The log is a named pipe whose reader stops reading: once the pipe's buffer is full the
    # writer's thread blocks in write(), as it would on a stalled stderr consumer.
    fifo = tmp_path / "access.fifo"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    writer = AccessLogWriter(path=fifo, max_waiting_lines=2500)
    writer.start()
    try:
        # 20,000 lines of about 90 bytes: far more than a pipe holds (64 KiB by default).
        asyncio.run(_log_in_batches(writer, 0, 20_000, 2000))
        assert writer.dropped > 0
        dropped_while_stalled = writer.dropped
        # The reader comes back: everything waiting is written, then one more batch, which
        # says how many lines went before it.
        os.set_blocking(reader, True)
        received = bytearray()
        drain = threading.Thread(target=lambda: _read_all(reader, received), daemon=True)
        drain.start()
        time.sleep(0.5)  # what waited is written meanwhile
        asyncio.run(_log_in_batches(writer, 20_000, 10, 10))
    finally:
        writer.stop()
    drain.join(timeout=20)
    os.close(reader)
    lines = received.decode("utf-8").splitlines()
    notices = [line for line in lines if "access-log dropped_lines=" in line]
    records = [line for line in lines if "POST /v1/chat/completions/" in line]
    assert len(notices) == 1
    assert int(notices[0].rsplit("=", 1)[1]) == dropped_while_stalled == writer.dropped
    # Every line was either written or counted as dropped; none went missing unsaid.
    assert len(records) + writer.dropped == 20_010
    assert records[-1].endswith("/v1/chat/completions/020009 200 1.0ms owner=acme")


def _read_all(fd: int, into: bytearray) -> None:
    while chunk := os.read(fd, 65536):
        into += chunk


def test_the_dropped_access_log_lines_are_in_the_metrics(tmp_path: Path) -> None:
    log = tmp_path / "access.log"
    with running_proxy(tmp_path / "p.db", access_log=True, access_log_file=log) as server:
        text = server.get("/metrics", key=METRICS_KEY).text
    assert "staffstore_access_log_dropped_lines_total 0.0" in text
    with running_proxy(tmp_path / "q.db") as server:
        assert "access_log_dropped" not in server.get("/metrics", key=METRICS_KEY).text
