"""A streamed miss: upstream SSE events relayed to the client as they arrive, then a receipt.

The response watches two things at once: the upstream events, and the client's connection.
Each event goes out as soon as it is read. When the upstream ends, the turn is recorded (with
the usage of the last chunk) before the client gets `[DONE]`, so a client that has read the
whole stream can find its receipt. A mid-stream error event reaches the client as an `error`
object the OpenAI SDK raises. A client that leaves closes the upstream call, and the turn is
recorded as cancelled: a receipt is written whichever way the stream ends.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from ..errors import UpstreamError
from ..models import ChatReply
from .wire import DONE_EVENT, sse_event

StreamEnd = Literal["done", "error", "cancelled"]


@dataclass(frozen=True)
class StreamResult:
    """How a relayed stream ended: what was read of the answer, and the failure if any."""

    end: StreamEnd
    reply: ChatReply
    error: UpstreamError | None = None


class RelayedEvents:
    """What the relay reads from: the upstream's events, the reply so far, and a way to close."""

    def __init__(
        self,
        events: AsyncIterator[dict[str, Any]],
        reply: Callable[[], ChatReply],
        close: Callable[[], Awaitable[None]],
    ) -> None:
        self.events = events
        self.reply = reply
        self.close = close


#: Called once when the stream ends, however it ends; returns the error event to send, if any.
OnEnd = Callable[[StreamResult], Awaitable[bytes | None]]


class RelayResponse(Response):
    """An ASGI response relaying upstream SSE events; `on_end` records the turn."""

    media_type = "text/event-stream"

    def __init__(
        self,
        upstream: RelayedEvents,
        *,
        on_end: OnEnd,
        include_usage: bool,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        self.upstream = upstream
        self.on_end = on_end
        self.include_usage = include_usage
        self.status_code = 200
        self.background = None
        # x-accel-buffering: a reverse proxy (nginx) in front must not hold events back.
        self.init_headers(
            {"cache-control": "no-cache", "x-accel-buffering": "no", **(headers or {})}
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": self.raw_headers})
        relay = asyncio.ensure_future(self._relay(send))
        gone = asyncio.ensure_future(_disconnected(receive))
        try:
            await asyncio.wait({relay, gone}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            # The client left, or this task is being cancelled: stop relaying. The relay's own
            # handler closes the upstream call and records the turn as cancelled.
            if not relay.done():
                relay.cancel()
            gone.cancel()
            await asyncio.gather(relay, gone, return_exceptions=True)
        failure = None if relay.cancelled() else relay.exception()
        if failure is not None:
            raise failure  # a bug in the relay (its receipt is written): let it show

    async def _relay(self, send: Send) -> None:
        error: UpstreamError | None = None
        try:
            try:
                async for event in self.upstream.events:
                    data = self._shape(event)
                    if data is not None:
                        await send({"type": "http.response.body", "body": data, "more_body": True})
            except UpstreamError as failure:
                error = failure
        except asyncio.CancelledError:
            await _shielded(self._finish(StreamResult("cancelled", self.upstream.reply())))
            raise
        except Exception as failure:  # a bug here must still leave a receipt behind
            problem = UpstreamError(f"the relay failed: {type(failure).__name__}")
            await _shielded(self._finish(StreamResult("error", self.upstream.reply(), problem)))
            raise
        result = StreamResult("done" if error is None else "error", self.upstream.reply(), error)
        error_event = await _shielded(self._finish(result))
        tail = error_event if error_event is not None else DONE_EVENT
        await send({"type": "http.response.body", "body": tail, "more_body": True})
        await send({"type": "http.response.body", "body": b"", "more_body": False})

    async def _finish(self, result: StreamResult) -> bytes | None:
        try:
            await self.upstream.close()
        finally:
            error_event = await self.on_end(result)
        return error_event

    def _shape(self, event: dict[str, Any]) -> bytes | None:
        """The event as the client asked for it: without the usage it did not ask for."""
        if not self.include_usage and "usage" in event:
            # The proxy asks upstream for usage, for the receipt; a client that did not ask
            # gets no usage-only chunk, so `chunk.choices[0]` holds for every chunk it reads.
            event = {k: v for k, v in event.items() if k != "usage"}
            if not event.get("choices"):
                return None
        return sse_event(event)


async def _shielded(work: Awaitable[bytes | None]) -> bytes | None:
    """Run `work` to its end even if the caller is cancelled meanwhile (a receipt must land)."""
    return await asyncio.shield(asyncio.ensure_future(work))


async def _disconnected(receive: Receive) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass
