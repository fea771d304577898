"""Fakes to test code that calls a model endpoint, without a network or a model.

FakeOpenRouter speaks OpenRouter's wire format (chat completions as JSON or SSE, GET /models),
answers each chat request from a queue of scripted steps (a default answer when the queue is
empty), and records every request it receives. Reach it as an httpx transport, or as a real
HTTP server on 127.0.0.1 in a background thread. Its answers are deterministic: the text echoes
the last user message, ids count up, and `created` is fixed.

The package holds what tests of staffstore, or of code built on it, run against: these fakes,
and a throwaway PostgreSQL server (postgres.py, imported apart: it needs the server binaries).
May import models, errors and the proxy's server (to serve the fake on a real port); nothing
in staffstore imports it.
"""

from __future__ import annotations

import asyncio
import json
import re
import threading
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any, Literal

import httpx

#: Where OpenRouter puts the usage of a stream: a last chunk with `choices: []`, or a last
#: chunk whose one choice has an empty delta. Clients must read both.
UsageChunk = Literal["empty_choices", "empty_delta"]

CREATED = 1_700_000_000
DEFAULT_MODEL = "fake/echo"
PROCESSING_COMMENT = b": OPENROUTER PROCESSING\n\n"
_DONE = b"data: [DONE]\n\n"
_START_TIMEOUT = 10.0

_Message = dict[str, Any]
_Receive = Callable[[], Awaitable[_Message]]
_Send = Callable[[_Message], Awaitable[None]]


def echo(messages: list[Any]) -> str:
    """Return the fake's default answer: "echo: " and the text of the last user message."""
    for message in reversed(messages):
        if isinstance(message, dict) and message.get("role") == "user":
            return f"echo: {_text(message.get('content'))}"
    return "echo: "


@dataclass(frozen=True)
class RecordedRequest:
    """One request the fake received. Header names are lower-case; `json` is None if not JSON."""

    method: str
    path: str
    headers: dict[str, str]
    json: Any

    @property
    def bearer(self) -> str | None:
        """The key sent as `Authorization: Bearer KEY`, or None when there was none."""
        return _bearer(self.headers)


@dataclass(frozen=True)
class _Step:
    """What the fake does for one chat request."""

    status: int = 200
    text: str | None = None
    message: str | None = None
    code: int | str | None = None
    retry_after: str | None = None
    delay: float = 0.0
    chunk_delay: float = 0.0
    usage: bool | None = None
    break_after: int | None = None
    #: How a 200 answer misbehaves: "cut" ends a stream after `break_after` content chunks
    #: with no finish reason and no `[DONE]`; "empty" sends no event at all; "not_sse"
    #: answers a stream request with a JSON body.
    shape: Literal["cut", "empty", "not_sse"] | None = None


@dataclass(frozen=True)
class _Reply:
    """An answer on the wire: status, headers, a delay before it starts, then timed pieces."""

    status: int
    headers: list[tuple[str, str]]
    delay: float = 0.0
    pieces: tuple[tuple[float, bytes], ...] = ()


class FakeOpenRouter:
    """A scripted, recording fake of OpenRouter's chat completions API.

    Queue steps with `answer`, `fail` and `break_stream`; each chat request takes the next one.
    """

    def __init__(
        self,
        *,
        api_key: str | None = None,
        model: str | None = None,
        reply: Callable[[list[Any]], str] = echo,
        usage: bool = True,
        cost: float | None = 0.0001,
        usage_chunk: UsageChunk = "empty_choices",
        comments: bool = True,
        models: list[dict[str, Any]] | None = None,
    ) -> None:
        """Build the fake.

        `api_key`: when set, chat requests without `Bearer api_key` get a 401. `model`: the
        model answers name (None: the requested one). `reply`: the answer for a request's
        messages. `usage`/`cost`: whether answers report usage, and its `cost` (None: omitted).
        `comments`: start each stream with `: OPENROUTER PROCESSING`.
        """
        self.api_key = api_key
        self.model = model
        self.reply = reply
        self.usage = usage
        self.cost = cost
        self.usage_chunk = usage_chunk
        self.comments = comments
        self.models = models or [
            {
                "id": model or DEFAULT_MODEL,
                "name": "Fake: Echo",
                "context_length": 8192,
                "pricing": {"prompt": "0.000001", "completion": "0.000002"},
            }
        ]
        # The server mode answers from another thread than the one that scripts and asserts.
        self._lock = threading.Lock()
        self._steps: deque[_Step] = deque()
        self._requests: list[RecordedRequest] = []
        self._answered = 0

    # Scripting: each call queues one step (or `times` steps) for the next chat requests.

    def answer(
        self,
        text: str | None = None,
        *,
        usage: bool | None = None,
        delay: float = 0.0,
        chunk_delay: float = 0.0,
    ) -> None:
        """Queue a successful answer: `text` (None: the default reply), after `delay` seconds.

        `usage=False` omits usage; `chunk_delay` pauses before each streamed content chunk.
        """
        self._queue(_Step(text=text, usage=usage, delay=delay, chunk_delay=chunk_delay))

    def fail(
        self,
        status: int,
        message: str | None = None,
        *,
        code: int | str | None = None,
        retry_after: float | str | None = None,
        delay: float = 0.0,
        times: int = 1,
    ) -> None:
        """Queue `times` HTTP error answers with an OpenRouter error body and maybe Retry-After."""
        after = f"{retry_after:g}" if isinstance(retry_after, int | float) else retry_after
        for _ in range(times):
            self._queue(
                _Step(status=status, message=message, code=code, retry_after=after, delay=delay)
            )

    def break_stream(
        self, message: str = "provider error", *, code: int | str = 502, after_chunks: int = 1
    ) -> None:
        """Queue an answer that fails after `after_chunks` content chunks, with HTTP 200.

        A stream gets an error event (`error` plus `finish_reason: "error"`) and ends without
        `[DONE]`; a non-streaming request gets the same error in a 200 JSON body.
        """
        self._queue(_Step(message=message, code=code, break_after=after_chunks))

    def cut_stream(self, *, after_chunks: int = 1) -> None:
        """Queue a stream that stops after `after_chunks` content chunks, as a dropped
        connection would: no finish reason, no error event, no `[DONE]`."""
        self._queue(_Step(shape="cut", break_after=after_chunks))

    def empty_stream(self) -> None:
        """Queue a 200 event stream that ends before its first event."""
        self._queue(_Step(shape="empty"))

    def answer_not_sse(self, text: str | None = None) -> None:
        """Queue a 200 answer to a stream request that is a JSON completion, not events."""
        self._queue(_Step(text=text, shape="not_sse"))

    # What was received.

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every request received so far, oldest first."""
        with self._lock:
            return list(self._requests)

    @property
    def chat_requests(self) -> list[RecordedRequest]:
        """The chat completion requests received so far, oldest first."""
        return [r for r in self.requests if r.path.endswith("/chat/completions")]

    # Ways to reach it.

    def transport(self) -> httpx.AsyncBaseTransport:
        """Return an httpx transport that answers from this fake; it honours read timeouts."""
        return _FakeTransport(self)

    @contextmanager
    def serve_in_thread(self) -> Iterator[str]:
        """Serve this fake over HTTP on 127.0.0.1 (a free port); yield its base URL.

        The server runs in its own thread and event loop, so synchronous clients (such as
        the `openai` SDK) and async tests can both call it. Needs uvicorn (`staffstore[serve]`).
        """
        from ..proxy.server import serve_in_thread

        with serve_in_thread(
            self._asgi,
            name="fake-openrouter",
            interface="asgi3",  # a bound method: uvicorn cannot tell its shape by itself
            start_timeout=_START_TIMEOUT,
            shutdown_timeout=1,
        ) as port:
            yield f"http://127.0.0.1:{port}/api/v1"

    # The wire format.

    def _queue(self, step: _Step) -> None:
        with self._lock:
            self._steps.append(step)

    def _respond(self, method: str, path: str, headers: dict[str, str], body: bytes) -> _Reply:
        """Record one request and return the answer for it."""
        payload = _json_or_none(body)
        with self._lock:
            self._requests.append(RecordedRequest(method, path, headers, payload))
        if method == "GET" and path.endswith("/models"):
            return _json_reply(200, {"data": self.models})
        if method != "POST" or not path.endswith("/chat/completions"):
            return _error_reply(_Step(status=404))
        if self.api_key is not None and _bearer(headers) != self.api_key:
            # Like some real providers, echo the key that was presented: clients must redact.
            presented = _bearer(headers)
            message = (
                f"Incorrect API key provided: {presented}"
                if presented
                else "No auth credentials found"
            )
            return _error_reply(_Step(status=401, message=message))
        messages = payload.get("messages") if isinstance(payload, dict) else None
        if not isinstance(payload, dict) or not isinstance(messages, list):
            return _error_reply(_Step(status=400, message='Input required: specify "messages"'))
        with self._lock:
            step = self._steps.popleft() if self._steps else _Step()
            self._answered += 1
            number = self._answered
        if step.status >= 400:
            return _error_reply(step)
        text = step.text if step.text is not None else self.reply(messages)
        base = {
            "id": f"gen-fake-{number}",
            "provider": "Fake",
            "model": self.model or _str(payload.get("model")) or DEFAULT_MODEL,
            "created": CREATED,
        }
        usage = self._usage(messages, text) if _pick(step.usage, self.usage) else None
        if payload.get("stream") and step.shape != "not_sse":
            return self._stream(base, text, usage, step)
        return self._completion(base, text, usage, step)

    def _usage(self, messages: list[Any], text: str) -> dict[str, Any]:
        # Words stand in for tokens: deterministic, and close enough for a fake.
        prompt = sum(len(_text(m.get("content")).split()) for m in messages if isinstance(m, dict))
        completion = len(text.split())
        usage: dict[str, Any] = {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        }
        if self.cost is not None:
            usage["cost"] = self.cost
        return usage

    def _completion(
        self, base: dict[str, Any], text: str, usage: dict[str, Any] | None, step: _Step
    ) -> _Reply:
        body: dict[str, Any] = {**base, "object": "chat.completion"}
        finish = "stop"
        if step.break_after is not None and step.shape is None:
            body["error"] = {"message": step.message, "code": step.code}
            text, finish = "", "error"
        body["choices"] = [
            {
                "index": 0,
                "logprobs": None,
                "finish_reason": finish,
                "native_finish_reason": finish,
                "message": {"role": "assistant", "content": text, "refusal": None},
            }
        ]
        if usage is not None:
            body["usage"] = usage
        return _json_reply(200, body, delay=step.delay, generation=base["id"])

    def _stream(
        self, base: dict[str, Any], text: str, usage: dict[str, Any] | None, step: _Step
    ) -> _Reply:
        base = {**base, "object": "chat.completion.chunk"}

        def event(choices: list[dict[str, Any]], **extra: Any) -> bytes:
            return _sse({**base, "choices": choices, **extra})

        def choice(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
            return {"index": 0, "delta": delta, "finish_reason": finish}

        pieces: list[tuple[float, bytes]] = []
        if step.shape == "empty":
            return _Reply(200, _sse_headers(base["id"]), step.delay, ())
        if self.comments:
            pieces.append((0.0, PROCESSING_COMMENT))
        pieces.append((0.0, event([choice({"role": "assistant", "content": ""})])))
        words = re.findall(r"\S+\s*|\s+", text)
        if step.break_after is not None:
            words = words[: step.break_after]
        for word in words:
            pieces.append((step.chunk_delay, event([choice({"content": word})])))
        if step.shape == "cut":
            return _Reply(200, _sse_headers(base["id"]), step.delay, tuple(pieces))
        if step.break_after is not None:
            error = {"message": step.message, "code": step.code}
            pieces.append((0.0, event([choice({"content": ""}, "error")], error=error)))
            return _Reply(200, _sse_headers(base["id"]), step.delay, tuple(pieces))
        pieces.append((0.0, event([choice({"role": "assistant", "content": ""}, "stop")])))
        if usage is not None:
            if self.usage_chunk == "empty_choices":
                pieces.append((0.0, event([], usage=usage)))
            else:
                empty = choice({"role": "assistant", "content": ""})
                pieces.append((0.0, event([empty], usage=usage)))
        pieces.append((0.0, _DONE))
        return _Reply(200, _sse_headers(base["id"]), step.delay, tuple(pieces))

    async def _asgi(self, scope: _Message, receive: _Receive, send: _Send) -> None:
        """Answer one HTTP request as an ASGI 3 application (the server mode)."""
        if scope["type"] != "http":
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        reply = self._respond(scope["method"], scope["path"], headers, body)
        gone = asyncio.ensure_future(_disconnected(receive))
        try:
            if not await _pause(reply.delay, gone):
                return
            await send(
                {
                    "type": "http.response.start",
                    "status": reply.status,
                    "headers": [
                        (k.encode("latin-1"), v.encode("latin-1")) for k, v in reply.headers
                    ],
                }
            )
            for pause, data in reply.pieces:
                if not await _pause(pause, gone):
                    return
                await send({"type": "http.response.body", "body": data, "more_body": True})
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        finally:
            gone.cancel()


class _FakeTransport(httpx.AsyncBaseTransport):
    """Answers httpx requests from a FakeOpenRouter, raising ReadTimeout as a network would."""

    def __init__(self, fake: FakeOpenRouter) -> None:
        self._fake = fake

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        body = await request.aread()
        headers = {k.lower(): v for k, v in request.headers.items()}
        reply = self._fake._respond(request.method, request.url.path, headers, body)
        limit = _read_timeout(request)
        await _wait(reply.delay, limit, request)
        stream = _FakeByteStream(reply.pieces, limit, request)
        return httpx.Response(reply.status, headers=reply.headers, stream=stream, request=request)


class _FakeByteStream(httpx.AsyncByteStream):
    def __init__(
        self, pieces: tuple[tuple[float, bytes], ...], limit: float | None, request: httpx.Request
    ) -> None:
        self._pieces = pieces
        self._limit = limit
        self._request = request

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for pause, data in self._pieces:
            await _wait(pause, self._limit, self._request)
            yield data


def _read_timeout(request: httpx.Request) -> float | None:
    timeout = request.extensions.get("timeout")
    read = timeout.get("read") if isinstance(timeout, Mapping) else None
    return float(read) if isinstance(read, int | float) else None


async def _wait(seconds: float, limit: float | None, request: httpx.Request) -> None:
    """Sleep `seconds`, or raise ReadTimeout once `limit` passes first, as a socket read would."""
    if seconds <= 0:
        return
    if limit is not None and seconds > limit:
        await asyncio.sleep(limit)
        raise httpx.ReadTimeout("the fake upstream did not answer in time", request=request)
    await asyncio.sleep(seconds)


async def _disconnected(receive: _Receive) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass


async def _pause(seconds: float, gone: asyncio.Future[None]) -> bool:
    """Sleep `seconds`; return False at once if the client disconnects meanwhile."""
    if seconds > 0:
        await asyncio.wait({gone}, timeout=seconds)
    return not gone.done()


def _json_reply(
    status: int,
    body: dict[str, Any],
    *,
    headers: list[tuple[str, str]] | None = None,
    delay: float = 0.0,
    generation: str | None = None,
) -> _Reply:
    all_headers = [("content-type", "application/json"), *(headers or [])]
    if generation is not None:
        all_headers.append(("x-generation-id", generation))
    data = json.dumps(body).encode()
    return _Reply(status, all_headers, delay, ((0.0, data),))


def _error_reply(step: _Step) -> _Reply:
    """An OpenRouter error answer: `{"error": {"message", "code"}}` with the HTTP status."""
    message = step.message or HTTPStatus(step.status).phrase
    error = {"message": message, "code": step.code if step.code is not None else step.status}
    headers = [("retry-after", step.retry_after)] if step.retry_after is not None else []
    return _json_reply(step.status, {"error": error}, headers=headers, delay=step.delay)


def _sse(obj: dict[str, Any]) -> bytes:
    return f"data: {json.dumps(obj)}\n\n".encode()


def _sse_headers(generation: str) -> list[tuple[str, str]]:
    return [
        ("content-type", "text/event-stream"),
        ("cache-control", "no-cache"),
        ("x-generation-id", generation),
    ]


def _bearer(headers: Mapping[str, str]) -> str | None:
    scheme, _, key = headers.get("authorization", "").partition(" ")
    return (key.strip() or None) if scheme.lower() == "bearer" else None


def _json_or_none(body: bytes) -> Any:
    try:
        return json.loads(body) if body else None
    except (json.JSONDecodeError, UnicodeDecodeError):
        return None


def _pick(value: bool | None, default: bool) -> bool:
    return default if value is None else value


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _text(content: Any) -> str:
    """A message's text: a string as is, or the text parts of a content list joined."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = (p.get("text") for p in content if isinstance(p, dict))
        return "".join(text for text in texts if isinstance(text, str))
    return ""
