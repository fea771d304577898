"""Shared parts of the proxy tests (no tests in here): a real proxy server on 127.0.0.1 in front
of the fake upstream, reached through an httpx transport, and strict checks of what the proxy
writes on the wire (the `openai` SDK accepts almost anything, so these check field by field).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import openai

from staffstore.models import Receipt
from staffstore.proxy.config import OwnerKey, ServeConfig, hash_key
from staffstore.proxy.run import serve_in_thread
from staffstore.store import StaffStore
from staffstore.testing import FakeOpenRouter

UPSTREAM_KEY = "sk-or-v1-upstream-secret-7777"
ALICE_KEY = "sk-staffstore-alice-1111"
BOB_KEY = "sk-staffstore-bob-2222"
ADMIN_KEY = "sk-staffstore-admin-3333"  # the admin key of the owner "root"
ALICE_ADMIN_KEY = "sk-staffstore-alice-admin-4444"
BOB_ADMIN_KEY = "sk-staffstore-bob-admin-5555"
#: An owner's admin key acts for that owner only.
ADMIN_KEYS = {"alice": ALICE_ADMIN_KEY, "bob": BOB_ADMIN_KEY, "root": ADMIN_KEY}
METRICS_KEY = "sk-staffstore-metrics-6666"


class _Watched(httpx.AsyncByteStream):
    """An upstream response body that remembers whether it was read to the end, and closed."""

    def __init__(self, inner: httpx.AsyncByteStream) -> None:
        self.inner = inner
        self.finished = False
        self.closed = False

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self.inner:
            yield chunk
        self.finished = True

    async def aclose(self) -> None:
        self.closed = True
        await self.inner.aclose()


class Upstream(httpx.AsyncBaseTransport):
    """The proxy's network to the model: a fresh FakeOpenRouter per test, or no network."""

    def __init__(self) -> None:
        self.fake = FakeOpenRouter(api_key=UPSTREAM_KEY)
        self.unreachable = False
        self.bodies: list[_Watched] = []

    def reset(self, **options: Any) -> FakeOpenRouter:
        options.setdefault("api_key", UPSTREAM_KEY)
        self.fake = FakeOpenRouter(**options)
        self.unreachable = False
        self.bodies = []
        return self.fake

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if self.unreachable:
            raise httpx.ConnectError("connection refused", request=request)
        response = await self.fake.transport().handle_async_request(request)
        assert isinstance(response.stream, httpx.AsyncByteStream)
        body = _Watched(response.stream)
        self.bodies.append(body)
        return httpx.Response(
            response.status_code, headers=response.headers, stream=body, request=request
        )


@dataclass
class Server:
    """A running proxy: where it listens, its database, and the upstream behind it."""

    base_url: str  # ends in /v1, as the OpenAI SDK wants it
    db: Path
    upstream: Upstream
    config: ServeConfig

    @property
    def root(self) -> str:
        return self.base_url.removesuffix("/v1")

    def sdk(self, key: str = ALICE_KEY, **options: Any) -> openai.OpenAI:
        options.setdefault("max_retries", 0)
        options.setdefault("timeout", 10)
        return openai.OpenAI(base_url=self.base_url, api_key=key, **options)

    def async_sdk(self, key: str = ALICE_KEY, **options: Any) -> openai.AsyncOpenAI:
        options.setdefault("max_retries", 0)
        options.setdefault("timeout", 10)
        return openai.AsyncOpenAI(base_url=self.base_url, api_key=key, **options)

    def post(
        self,
        body: Any,
        *,
        key: str | None = ALICE_KEY,
        headers: dict[str, str] | None = None,
        path: str = "/chat/completions",
    ) -> httpx.Response:
        """POST to the proxy with raw httpx: a dict goes as JSON, bytes as they are."""
        all_headers = dict(headers or {})
        if key is not None:
            all_headers["authorization"] = f"Bearer {key}"
        content = body if isinstance(body, bytes) else json.dumps(body).encode()
        all_headers.setdefault("content-type", "application/json")
        return httpx.post(self.base_url + path, content=content, headers=all_headers, timeout=10)

    @contextmanager
    def stream(self, body: Any, *, key: str = ALICE_KEY) -> Iterator[httpx.Response]:
        """POST a chat request and read its answer as it arrives."""
        with httpx.stream(
            "POST",
            self.base_url + "/chat/completions",
            json=body,
            headers={"authorization": f"Bearer {key}"},
            timeout=10,
        ) as response:
            yield response

    def promote(self, paid: httpx.Response, owner: str = "alice") -> httpx.Response:
        """Promote the paid answer of response `paid` to a claim of `owner` (their admin key)."""
        return self.post(
            {"receipt_id": paid.headers["x-staffstore-receipt"], "owner": owner},
            key=ADMIN_KEYS[owner],
            path="/staffstore/claims",
        )

    def get(self, path: str, *, key: str | None = ALICE_KEY) -> httpx.Response:
        headers = {"authorization": f"Bearer {key}"} if key is not None else {}
        return httpx.get(self.root + path, headers=headers, timeout=10)

    def receipt(self, owner: str, receipt_id: str) -> Receipt:
        return asyncio.run(_read_receipt(self.db, owner, receipt_id))

    def receipts(self, owner: str | None = None, limit: int = 10_000) -> list[Receipt]:
        return asyncio.run(_read_receipts(self.db, owner, limit))

    async def receipts_async(self, owner: str | None = None, limit: int = 10_000) -> list[Receipt]:
        return await _read_receipts(self.db, owner, limit)

    def wait_for_receipt(self, owner: str, receipt_id: str, timeout: float = 5.0) -> Receipt:
        """The receipt, once it is there: a disconnected stream records it a moment later."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                return self.receipt(owner, receipt_id)
            except Exception:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.02)


async def _read_receipt(db: Path, owner: str, receipt_id: str) -> Receipt:
    async with StaffStore.open(db) as store:
        return await store.get_receipt(owner, receipt_id)


async def _read_receipts(db: Path, owner: str | None, limit: int) -> list[Receipt]:
    async with StaffStore.open(db) as store:
        return await store.list_receipts(owner, limit=limit)


def proxy_config(db: Path, **overrides: Any) -> ServeConfig:
    """The tests' proxy: alice and bob as tenants, an admin, the fake's key upstream."""
    settings: dict[str, Any] = {
        "db_path": db,
        "upstream_url": "http://upstream.invalid/api/v1",
        "upstream_key": UPSTREAM_KEY,
        "keys": {
            hash_key(ALICE_KEY): OwnerKey("alice"),
            hash_key(BOB_KEY): OwnerKey("bob"),
            hash_key(ADMIN_KEY): OwnerKey("root", admin=True),
            hash_key(ALICE_ADMIN_KEY): OwnerKey("alice", admin=True),
            hash_key(BOB_ADMIN_KEY): OwnerKey("bob", admin=True),
        },
        "metrics_key_sha256": hash_key(METRICS_KEY),
        "upstream_retries": 0,
        "timeout": 1.0,
        "max_body_bytes": 64 * 1024,
    }
    settings.update(overrides)
    return ServeConfig(**settings)


@contextmanager
def running_proxy(db: Path, **overrides: Any) -> Iterator[Server]:
    upstream = Upstream()
    config = proxy_config(db, **overrides)
    with serve_in_thread(config, transport=upstream) as base_url:
        yield Server(base_url, db, upstream, config)


def ask(text: str, **extra: Any) -> dict[str, Any]:
    """A chat request body asking `text` of the fake model."""
    return {"model": "fake/model", "messages": [{"role": "user", "content": text}], **extra}


# -- strict checks of the wire format -----------------------------------------------------------


def check_completion(body: Any, answer: str | None = None) -> None:
    """A `chat.completion` as OpenAI writes it, carrying an answer from the store."""
    assert set(body) == {"id", "object", "created", "model", "choices", "usage"}
    assert isinstance(body["id"], str) and body["id"].startswith("chatcmpl-")
    assert body["object"] == "chat.completion"
    assert isinstance(body["created"], int) and not isinstance(body["created"], bool)
    assert isinstance(body["model"], str) and body["model"]
    assert len(body["choices"]) == 1
    choice = body["choices"][0]
    assert set(choice) == {"index", "message", "logprobs", "finish_reason"}
    assert (choice["index"], choice["finish_reason"], choice["logprobs"]) == (0, "stop", None)
    message = choice["message"]
    assert message["role"] == "assistant" and isinstance(message["content"], str)
    if answer is not None:
        assert message["content"] == answer
    assert body["usage"] == {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}


def sse_data(text: str) -> list[str]:
    """The data of each event in an SSE body, checking the framing: blank-line separated
    events, each made of `data:` lines (comments allowed), the body ending in a blank line."""
    assert text.endswith("\n\n"), "an SSE body ends with a blank line"
    data: list[str] = []
    for block in text.split("\n\n")[:-1]:
        lines = [line for line in block.split("\n") if not line.startswith(":")]
        if not lines:
            continue
        assert all(line.startswith("data: ") for line in lines), block
        data.append("\n".join(line.removeprefix("data: ") for line in lines))
    return data


def check_chunks(text: str, *, usage: bool) -> tuple[list[dict[str, Any]], str]:
    """A stored answer as `chat.completion.chunk` events: role, content, finish, usage?, [DONE].

    Returns the chunks and the text they carry.
    """
    data = sse_data(text)
    assert data[-1] == "[DONE]"
    chunks = [json.loads(item) for item in data[:-1]]
    ids = {chunk["id"] for chunk in chunks}
    assert len(ids) == 1 and next(iter(ids)).startswith("chatcmpl-")
    for chunk in chunks:
        assert chunk["object"] == "chat.completion.chunk"
        assert isinstance(chunk["created"], int) and isinstance(chunk["model"], str)
    tail = chunks[-1]
    if usage:
        assert tail["choices"] == []
        assert tail["usage"] == {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}
        chunks_with_choices = chunks[:-1]
    else:
        assert all("usage" not in chunk for chunk in chunks)
        chunks_with_choices = chunks
    first, *content, finish = chunks_with_choices
    assert first["choices"][0]["delta"] == {"role": "assistant", "content": ""}
    assert first["choices"][0]["finish_reason"] is None
    assert content, "at least one content chunk"
    for chunk in content:
        (choice,) = chunk["choices"]
        assert choice["index"] == 0 and choice["finish_reason"] is None
        assert set(choice["delta"]) == {"content"}
    (last,) = finish["choices"]
    assert (last["delta"], last["finish_reason"]) == ({}, "stop")
    return chunks, "".join(c["choices"][0]["delta"]["content"] for c in content)
