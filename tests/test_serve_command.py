"""`staffstore serve` as a user runs it: a real process, the openai SDK as the client."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from openai import OpenAI
from typer.testing import CliRunner, Result

from staffstore.cli import app
from staffstore.testing import FakeOpenRouter


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def upstream() -> Iterator[tuple[FakeOpenRouter, str]]:
    fake = FakeOpenRouter(api_key="sk-upstream")
    with fake.serve_in_thread() as base_url:
        yield fake, base_url


@pytest.fixture
def served(tmp_path: Path, upstream: tuple[FakeOpenRouter, str]) -> Iterator[str]:
    _fake, base_url = upstream
    port = free_port()
    env = {**os.environ, "OPENROUTER_API_KEY": "sk-upstream"}
    command = [
        sys.executable, "-m", "staffstore", "--db", str(tmp_path / "s.db"), "serve",
        "--port", str(port), "--upstream", base_url, "--owner-key", "acme=sk-client",
        "--log-level", "warning",
    ]  # fmt: skip
    process = subprocess.Popen(command, env=env, stderr=subprocess.PIPE)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                if httpx.get(url + "/healthz", timeout=0.5).status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.1)
        else:
            process.kill()
            pytest.fail(
                f"serve did not start: {process.stderr.read().decode() if process.stderr else ''}"
            )
        yield url
    finally:
        process.terminate()
        process.wait(timeout=10)


def test_serve_answers_the_openai_sdk_through_the_upstream(
    served: str, upstream: tuple[FakeOpenRouter, str]
) -> None:
    client = OpenAI(base_url=served + "/v1", api_key="sk-client", max_retries=0)
    reply = client.chat.completions.with_raw_response.create(
        model="test/model", messages=[{"role": "user", "content": "What port does it use?"}]
    )
    assert reply.headers["x-staffstore-outcome"] == "miss"
    assert reply.parse().choices[0].message.content == "echo: What port does it use?"
    assert len(upstream[0].chat_requests) == 1


def test_serve_rejects_an_unknown_client_key(served: str) -> None:
    response = httpx.post(
        served + "/v1/chat/completions",
        headers={"Authorization": "Bearer sk-wrong"},
        json={"model": "m", "messages": [{"role": "user", "content": "hi"}]},
    )
    assert response.status_code == 401
    assert set(response.json()["error"]) >= {"message", "type", "param", "code"}


def test_serve_without_keys_or_trusted_mode_is_a_one_line_error(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["--db", str(tmp_path / "s.db"), "serve"])
    assert result.exit_code == 1
    assert "error:" in result.output
    assert "Traceback" not in result.output


def _ask_then_promote(
    tmp_path: Path, base_url: str, monkeypatch: pytest.MonkeyPatch, question: str
) -> tuple[str, Result]:
    """Pay for an answer with `ask`, then promote its receipt; the db and the promote result."""
    db = str(tmp_path / "s.db")
    monkeypatch.setenv("OPENROUTER_API_KEY", "sk-upstream")
    runner = CliRunner()
    asked = runner.invoke(
        app, ["--db", db, "ask", "--owner", "acme", "--base-url", base_url, "--json", question]
    )
    assert asked.exit_code == 0, asked.output
    receipt_id = json.loads(asked.stdout)["receipt_id"]
    promoted = runner.invoke(app, ["--db", db, "claims", "promote", receipt_id, "--owner", "acme"])
    assert promoted.exit_code == 0, promoted.output
    assert promoted.stdout.startswith(f"promoted {receipt_id}")
    return db, promoted


def test_promote_turns_a_paid_answer_into_a_claim_that_hits(
    tmp_path: Path, upstream: tuple[FakeOpenRouter, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    question = "Which port does the proxy listen on?"
    db, _promoted = _ask_then_promote(tmp_path, upstream[1], monkeypatch, question)
    decision = CliRunner().invoke(
        app,
        ["--db", db, "query", "--owner", "acme", "--json", "which port does the proxy listen on"],
    )
    assert '"outcome": "hit"' in decision.output


def test_promoting_a_question_the_gate_can_never_serve_says_so(
    tmp_path: Path, upstream: tuple[FakeOpenRouter, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    question = "What does this error mean?"
    _db, promoted = _ask_then_promote(tmp_path, upstream[1], monkeypatch, question)
    assert "will never serve it; name the thing in --question" in promoted.stderr
