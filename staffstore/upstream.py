"""The OpenRouter / OpenAI-compatible chat client: one async httpx client, failures mapped to ours.

`OpenRouter` is the ChatFn the rest of staffstore calls, and also forwards whole request bodies
(`complete`, `stream`) for the HTTP proxy. Every failure surfaces as an UpstreamError subclass;
429 and 5xx answers and failed connections are retried a bounded number of times, honouring
Retry-After, and nothing is retried once a byte of an answer has been handed to the caller.
The API key travels only in the Authorization header and is scrubbed from every error message.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from types import TracebackType
from typing import Any, Self

import httpx

from staffstore.errors import (
    InputError,
    MissingApiKeyError,
    UpstreamConnectError,
    UpstreamStatusError,
    UpstreamTimeoutError,
    UpstreamUnreachableError,
)
from staffstore.models import ChatReply, Message

DEFAULT_BASE_URL = "https://openrouter.ai/api/v1"
DEFAULT_MODEL = "openrouter/auto"
API_KEY_ENV = "OPENROUTER_API_KEY"
#: The longest one retry waits, whatever a Retry-After header asks for.
MAX_RETRY_WAIT = 30.0
#: The status an answer that is not a usable chat completion is reported under (Bad Gateway).
BAD_ANSWER_STATUS = 502

_REDACTED = "[redacted]"
_MAX_BODY_IN_MESSAGE = 300

Event = dict[str, Any]


def usage_from(obj: dict[str, Any]) -> tuple[int | None, int | None, float | None]:
    """Return (prompt_tokens, completion_tokens, cost_usd) read from `obj["usage"]`.

    A value the provider did not report is None, never 0.
    """
    usage = obj.get("usage")
    if not isinstance(usage, dict):
        return None, None, None
    return (
        _int_or_none(usage.get("prompt_tokens")),
        _int_or_none(usage.get("completion_tokens")),
        _float_or_none(usage.get("cost")),
    )


def retry_delay(
    attempt: int, retry_after: str | None, *, backoff: float, now: datetime | None = None
) -> float:
    """Return the seconds to wait before retry number `attempt + 1`, never more than 30.

    A Retry-After header (seconds, or an HTTP date) wins over the exponential backoff.
    """
    wait = _retry_after_seconds(retry_after, now or datetime.now(UTC))
    if wait is None:
        wait = backoff * 2**attempt
    return min(max(wait, 0.0), MAX_RETRY_WAIT)


class OpenRouter:
    """An async client for OpenRouter's (or any OpenAI-compatible) chat completions endpoint."""

    def __init__(
        self,
        *,
        api_key: str | None = None,
        base_url: str = DEFAULT_BASE_URL,
        model: str = DEFAULT_MODEL,
        referer: str | None = None,
        title: str | None = None,
        timeout: float = 60.0,
        max_retries: int = 2,
        backoff: float = 0.5,
        transport: httpx.AsyncBaseTransport | None = None,
        client: httpx.AsyncClient | None = None,
    ) -> None:
        if transport is not None and client is not None:
            raise ValueError("pass a transport or a client, not both")
        if max_retries < 0:
            raise ValueError("max_retries must be 0 or more")
        # Read once, at construction, so a call never changes keys halfway through a session.
        self._api_key = (api_key if api_key is not None else os.environ.get(API_KEY_ENV)) or None
        self.base_url = base_url.rstrip("/")
        # A password in the URL is a secret like the key: messages show the URL without it.
        self.shown_url = shown_url(self.base_url)
        self._secrets = [s for s in (self._api_key, url_password(self.base_url)) if s]
        self.model = model
        self.referer = referer
        self.title = title
        self.timeout = timeout
        self.max_retries = max_retries
        self.backoff = backoff
        self._owns_client = client is None
        self._client = client or httpx.AsyncClient(transport=transport)

    def __repr__(self) -> str:
        key = "set" if self._api_key else "missing"
        return f"OpenRouter(base_url={self.shown_url!r}, model={self.model!r}, api_key={key})"

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the HTTP client, unless it was passed in (then its owner closes it)."""
        if self._owns_client:
            await self._client.aclose()

    async def __call__(self, messages: list[Message]) -> ChatReply:
        """Ask the configured model to answer `messages`; return its reply and usage."""
        body = {"model": self.model, "messages": [m.model_dump() for m in messages]}
        _, reply = await self.complete(body)
        return reply

    async def complete(self, body: dict[str, Any]) -> tuple[dict[str, Any], ChatReply]:
        """Send a whole OpenAI-style chat request body; return the raw JSON answer and its reply.

        The body goes out as given, except that `model` defaults to this client's model.
        """
        if body.get("stream"):
            raise InputError("complete() cannot send a streaming request; use stream()")
        response = await self._send("POST", "/chat/completions", {"model": self.model, **body})
        payload = self._json_object(response)
        return payload, self._reply_from(payload)

    def stream(self, body: dict[str, Any]) -> ChatStream:
        """Return a ChatStream for this body, sent with `stream: true` when entered or iterated.

        Use it as `async with chat.stream(body) as events: async for event in events: ...`,
        then read `events.reply`. Like `complete`, `model` defaults to this client's model.
        """
        return ChatStream(self, {"model": self.model, **body, "stream": True})

    async def models(self) -> dict[str, Any]:
        """Return the endpoint's model list (GET /models); no API key is needed for it."""
        response = await self._send("GET", "/models", None, require_key=False)
        return self._json_object(response)

    async def _send(
        self,
        method: str,
        path: str,
        body: dict[str, Any] | None,
        *,
        require_key: bool = True,
        stream: bool = False,
    ) -> httpx.Response:
        """Send one request, retrying 429, 5xx and failed connections; return a 2xx/3xx response.

        With `stream` the response comes back unread and open; the caller must close it.
        """
        headers = self._headers(require_key=require_key)
        url = f"{self.base_url}{path}"
        attempt = 0
        while True:
            request = self._client.build_request(
                method, url, json=body, headers=headers, timeout=self.timeout
            )
            retry_after: str | None = None
            try:
                response = await self._client.send(request, stream=True)
            except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
                # Nothing reached the endpoint, so trying again cannot double-bill.
                if attempt >= self.max_retries:
                    raise self._connect_error(exc, method, url) from None
            except httpx.TransportError as exc:
                raise self._transport_error(exc, method, url) from None
            else:
                if response.status_code < 400 and stream:
                    return response
                with self._translating(method, url):
                    try:
                        await response.aread()
                    finally:
                        await response.aclose()
                if response.status_code < 400:
                    return response
                if not _retryable(response.status_code) or attempt >= self.max_retries:
                    raise self._status_error(response)
                retry_after = response.headers.get("retry-after")
            await asyncio.sleep(retry_delay(attempt, retry_after, backoff=self.backoff))
            attempt += 1

    def _headers(self, *, require_key: bool) -> dict[str, str]:
        headers: dict[str, str] = {}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        elif require_key:
            raise MissingApiKeyError(
                f"no API key for {self.shown_url}: set {API_KEY_ENV} or pass api_key=; "
                "nothing was sent"
            )
        if self.referer:
            headers["HTTP-Referer"] = self.referer
        if self.title:
            headers["X-Title"] = self.title
        return headers

    def _redact(self, text: str) -> str:
        text = text.replace(self.base_url, self.shown_url)
        for secret in self._secrets:
            text = text.replace(secret, _REDACTED)
        return text

    def _detail(self, exc: httpx.TransportError) -> str:
        return self._redact(f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__)

    def _connect_error(
        self, exc: httpx.ConnectError | httpx.ConnectTimeout, method: str, url: str
    ) -> UpstreamConnectError:
        # Raised `from None` by callers: the httpx exception holds the request, and so the key.
        return UpstreamConnectError(
            self._redact(f"{method} {url} could not be connected to, nothing was sent")
            + f" ({self._detail(exc)})"
        )

    @contextmanager
    def _translating(self, method: str, url: str) -> Iterator[None]:
        """Turn httpx transport failures inside the block into staffstore's UpstreamErrors."""
        try:
            yield
        except httpx.TransportError as exc:
            raise self._transport_error(exc, method, url) from None

    def _transport_error(
        self, exc: httpx.TransportError, method: str, url: str
    ) -> UpstreamTimeoutError | UpstreamUnreachableError:
        # Raised `from None` by callers: the httpx exception holds the request, and so the key.
        detail = self._detail(exc)
        where = self._redact(f"{method} {url}")
        if isinstance(exc, httpx.TimeoutException):
            return UpstreamTimeoutError(f"{where} timed out after {self.timeout:g}s ({detail})")
        return UpstreamUnreachableError(f"{where} could not be reached ({detail})")

    def _status_error(self, response: httpx.Response) -> UpstreamStatusError:
        try:
            payload: Any = response.json()
        except (json.JSONDecodeError, UnicodeDecodeError):
            payload = None
        error = payload.get("error") if isinstance(payload, dict) else None
        if isinstance(error, dict):
            return self._error_from(error, response.status_code, "upstream answered")
        text = response.text.strip()[:_MAX_BODY_IN_MESSAGE] or response.reason_phrase
        return UpstreamStatusError(
            self._redact(f"upstream answered {response.status_code}: {text}"),
            response.status_code,
        )

    def _error_from(self, error: dict[str, Any], status: int, prefix: str) -> UpstreamStatusError:
        message = _str_or_none(error.get("message")) or "no message"
        code = error.get("code")
        return UpstreamStatusError(
            self._redact(f"{prefix} {status}: {message}"),
            status,
            error_type=_str_or_none(error.get("type")),
            code=code if isinstance(code, str | int) and not isinstance(code, bool) else None,
        )

    def _error_in(self, payload: dict[str, Any]) -> UpstreamStatusError | None:
        """Return the error an HTTP-200 answer or stream event carries, if it carries one."""
        error = payload.get("error")
        failed = any(
            isinstance(choice, dict) and choice.get("finish_reason") == "error"
            for choice in _list(payload.get("choices"))
        )
        if not isinstance(error, dict):
            if not failed:
                return None
            error = {"message": "the model stopped with finish_reason 'error'"}
        # OpenRouter puts the real status in error.code when the HTTP status was already 200.
        code = error.get("code")
        status = code if isinstance(code, int) and 400 <= code <= 599 else BAD_ANSWER_STATUS
        return self._error_from(error, status, "upstream failed with")

    def _json_object(self, response: httpx.Response) -> dict[str, Any]:
        try:
            payload: Any = response.json()
        except (json.JSONDecodeError, UnicodeDecodeError):
            payload = None
        if not isinstance(payload, dict):
            raise UpstreamStatusError(
                f"upstream answered {response.status_code} with a body that is not a JSON object",
                BAD_ANSWER_STATUS,
            )
        return payload

    def _reply_from(self, payload: dict[str, Any]) -> ChatReply:
        error = self._error_in(payload)
        if error is not None:
            raise error
        choices = _list(payload.get("choices"))
        first = choices[0] if choices else None
        if not isinstance(first, dict):
            raise UpstreamStatusError("upstream answer has no choices", BAD_ANSWER_STATUS)
        message = first.get("message")
        content = message.get("content") if isinstance(message, dict) else None
        prompt_tokens, completion_tokens, cost = usage_from(payload)
        return ChatReply(
            text=_text_of(content),
            model=_str_or_none(payload.get("model")),
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            cost_usd=cost,
            finish_reason=_str_or_none(first.get("finish_reason")),
            response_id=_str_or_none(payload.get("id")),
        )


class ChatStream:
    """One streamed chat call: enter it to send, iterate it for events, then read `reply`.

    Iterating without entering first also works; the response is then closed when the
    iteration ends, or when the iterator is garbage-collected if the loop breaks early.
    """

    def __init__(self, client: OpenRouter, body: dict[str, Any]) -> None:
        self._client = client
        self._body = body
        self._response: httpx.Response | None = None
        self._parts: list[str] = []
        self._model: str | None = None
        self._id: str | None = None
        self._finish_reason: str | None = None
        self._usage: Event = {}

    async def __aenter__(self) -> Self:
        await self._open()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the response; the events not yet read are dropped."""
        if self._response is not None:
            await self._response.aclose()

    def __aiter__(self) -> AsyncIterator[Event]:
        return self._events()

    @property
    def reply(self) -> ChatReply:
        """The reply assembled from the events read so far (text, model, usage, finish)."""
        prompt_tokens, completion_tokens, cost = usage_from(self._usage)
        return ChatReply(
            text="".join(self._parts),
            model=self._model,
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            cost_usd=cost,
            finish_reason=self._finish_reason,
            response_id=self._id,
        )

    async def _open(self) -> httpx.Response:
        if self._response is None:
            self._response = await self._client._send(
                "POST", "/chat/completions", self._body, stream=True
            )
        return self._response

    async def _events(self) -> AsyncIterator[Event]:
        opened_here = self._response is None
        response = await self._open()
        request = response.request
        try:
            kind = response.headers.get("content-type", "").split(";")[0].strip()
            if kind != "text/event-stream":
                raise UpstreamStatusError(
                    f"upstream answered a stream request with {kind or 'no content type'}, "
                    "not an event stream",
                    BAD_ANSWER_STATUS,
                )
            with self._client._translating(request.method, str(request.url)):
                async for data in _sse_data(response.aiter_lines()):
                    if data == "[DONE]":
                        return
                    event = self._parse(data)
                    self._absorb(event)
                    yield event
            # A stream cut off (a dropped connection, a provider that gave up) ends like a
            # finished one; only a finish reason says the answer is whole.
            if self._finish_reason is None:
                raise UpstreamStatusError(
                    "upstream stream ended before the answer finished "
                    "(no finish reason and no [DONE])",
                    BAD_ANSWER_STATUS,
                )
        finally:
            if opened_here:
                await self.aclose()

    def _parse(self, data: str) -> Event:
        try:
            event: Any = json.loads(data)
        except json.JSONDecodeError:
            event = None
        if not isinstance(event, dict):
            raise UpstreamStatusError(
                "upstream sent a stream event that is not a JSON object", BAD_ANSWER_STATUS
            )
        error = self._client._error_in(event)
        if error is not None:
            raise error
        return event

    def _absorb(self, event: Event) -> None:
        self._id = self._id or _str_or_none(event.get("id"))
        self._model = self._model or _str_or_none(event.get("model"))
        if isinstance(event.get("usage"), dict):
            self._usage = event
        for choice in _list(event.get("choices"))[:1]:
            if not isinstance(choice, dict):
                continue
            delta = choice.get("delta")
            if isinstance(delta, dict) and isinstance(delta.get("content"), str):
                self._parts.append(delta["content"])
            # A trailing usage chunk may repeat the choice with finish_reason null: keep the last.
            self._finish_reason = _str_or_none(choice.get("finish_reason")) or self._finish_reason


async def _sse_data(lines: AsyncIterator[str]) -> AsyncIterator[str]:
    """Yield the data of each server-sent event, skipping comments and the other fields."""
    data: list[str] = []
    async for line in lines:
        if not line:
            if data:
                yield "\n".join(data)
                data = []
            continue
        if line.startswith(":"):  # ": OPENROUTER PROCESSING" keeps the connection alive
            continue
        field, _, value = line.partition(":")
        if field == "data":
            data.append(value.removeprefix(" "))
    if data:
        yield "\n".join(data)


def url_password(url: str) -> str | None:
    """The password in a URL's userinfo (`https://user:PASSWORD@host/`), if it has one."""
    try:
        return httpx.URL(url).password or None
    except httpx.InvalidURL:
        return None


def shown_url(url: str) -> str:
    """The URL as it may be shown in a message: without its userinfo (user and password)."""
    try:
        parsed = httpx.URL(url)
    except httpx.InvalidURL:
        return "the upstream URL"
    if not parsed.userinfo:
        return url
    return str(parsed.copy_with(username=None, password=None))


def _retryable(status: int) -> bool:
    return status == 429 or status >= 500


def _retry_after_seconds(value: str | None, now: datetime) -> float | None:
    if value is None:
        return None
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        return (when - now).total_seconds()
    return seconds if math.isfinite(seconds) else None


def _text_of(content: Any) -> str:
    """Return a message's text: a string as is, text parts joined, anything else empty."""
    if isinstance(content, str):
        return content
    parts = [p.get("text") for p in _list(content) if isinstance(p, dict)]
    return "".join(p for p in parts if isinstance(p, str))


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _str_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _int_or_none(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _float_or_none(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)
