"""The proxy's access log: one line per HTTP request, for operators; off unless asked for.

A line holds what the app knows cheaply once a request is answered: when it arrived, the
client's address, the method, the path, the status, the time to the last byte in ms, the owner
the key resolved to, and for a chat turn the gate's outcome, reason and receipt id. It never
holds the query string, a header (so never an Authorization value), a body or a key.

    2026-03-02T09:14:07.120Z 127.0.0.1:51234 POST /v1/chat/completions 200 3.1ms owner=acme
        outcome=hit reason=paraphrase receipt=RECEIPT_ID      (one line, folded here)

`json` writes the same fields as one JSON object a line, which log shippers read as they are.
Records are handed in batches, a few times a second, to a thread of their own (logging's
QueueListener and handlers), which renders and writes them: a slow disk or a full stderr pipe
holds up that thread, not the event loop serving requests. At most `max_waiting_lines` lines
wait for it; past that, newer lines are dropped and counted (in /metrics as
`staffstore_access_log_dropped_lines_total`), and the next line written says how many went:

    2026-03-02T09:15:00.370Z access-log dropped_lines=5120
"""

from __future__ import annotations

import asyncio
import json
import logging
import logging.handlers
import queue
import sys
import threading
import time
from collections.abc import Awaitable, Callable, MutableMapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote

from ..errors import InputError
from .config import AccessLogFormat

#: Where the app leaves the owner a request's key resolved to, in the request's ASGI scope.
OWNER_SCOPE_KEY = "staffstore.owner"

_Message = MutableMapping[str, Any]
_ASGIApp = Callable[
    [_Message, Callable[[], Awaitable[_Message]], Callable[[_Message], Awaitable[None]]],
    Awaitable[None],
]
#: Response headers the chat endpoint already sets; the log copies them, reading nothing else.
_TURN_HEADERS = {
    b"x-staffstore-outcome": "outcome",
    b"x-staffstore-reason": "reason",
    b"x-staffstore-receipt": "receipt",
}
# Path and owner are written percent-encoded in a text line: a client chooses both (a trusted
# server takes the owner from a header), and a space or a newline must not forge a field or a line.
_SAFE = "/:@!$&'()*+,;=-._~"


def text_line(fields: dict[str, Any]) -> str:
    """One access-log record as a plain text line (fields as in the module docstring)."""
    if "dropped_lines" in fields:
        return f"{fields['time']} access-log dropped_lines={fields['dropped_lines']}"
    head = (
        f"{fields['time']} {fields['client']} {fields['method']} "
        f"{quote(fields['path'], safe=_SAFE)} {fields['status']} {fields['duration_ms']}ms"
    )
    tail = [
        f"{name}={quote(str(fields[name]), safe=_SAFE)}"
        for name in ("owner", "outcome", "reason", "receipt")
        if fields.get(name) is not None
    ]
    return " ".join([head, *tail])


def json_line(fields: dict[str, Any]) -> str:
    """One access-log record as a JSON object on one line (json.dumps escapes control bytes)."""
    return json.dumps(fields, separators=(",", ":"), ensure_ascii=False)


def _utc_text(seconds: float) -> str:
    """A Unix time as ISO 8601 in UTC to the millisecond, `2026-03-02T09:14:07.120Z`."""
    stamp = datetime.fromtimestamp(seconds, UTC).isoformat(timespec="milliseconds")
    return stamp.replace("+00:00", "Z")


class _Renderer(logging.handlers.QueueListener):
    """logging's queue listener, fed batches of records' fields rather than LogRecords: the
    lines are rendered on the writer's thread and written with one write a batch."""

    def __init__(
        self,
        batches: queue.SimpleQueue[Any],
        target: logging.Handler,
        render: Callable[[dict[str, Any]], str],
        written: Callable[[int], None],
    ) -> None:
        super().__init__(batches, target)
        self._render = render
        self._written = written

    def prepare(self, record: Any) -> logging.LogRecord:
        lines = "\n".join(self._render(fields) for fields in record)
        return logging.makeLogRecord({"msg": lines, "levelno": logging.INFO, "levelname": "INFO"})

    def handle(self, record: Any) -> None:
        # `record` is a batch here; prepare() turns it into one LogRecord for the handler.
        try:
            super().handle(record)
        finally:
            self._written(len(record))


class AccessLogWriter:
    """Writes access-log records from a thread of its own, to stderr or a file.

    Records are gathered on the event loop and handed over every BATCH_SECONDS: waking the
    writer's thread once a request cost a claim hit about a third of a millisecond on a busy
    two-core machine, a batch costs it a list append. Nothing goes through a named logger, so
    two servers in one process (tests, an embedding app) never write each other's lines.
    `start` and `stop` bracket the server's life (the app's lifespan).
    """

    #: How long a line may wait before it is written.
    BATCH_SECONDS = 0.25
    #: How many lines may wait for the writer's thread (about 80 MB of records at most,
    #: measured with tracemalloc): a log reader that stopped reading must not grow the server's
    #: memory without bound.
    MAX_WAITING_LINES = 100_000

    def __init__(
        self,
        *,
        log_format: AccessLogFormat = "text",
        path: Path | None = None,
        max_waiting_lines: int = MAX_WAITING_LINES,
    ) -> None:
        # WatchedFileHandler reopens a file that logrotate moved away; stderr is never closed.
        # The file is opened now, so a path that cannot be written stops the server at startup
        # rather than losing every line later.
        try:
            target: logging.Handler = (
                logging.handlers.WatchedFileHandler(path, encoding="utf-8")
                if path is not None
                else logging.StreamHandler(sys.stderr)
            )
        except OSError as error:
            raise InputError(f"cannot open the access log {path}: {error.strerror}") from None
        target.setFormatter(logging.Formatter("%(message)s"))
        self._target = target
        self._batches: queue.SimpleQueue[Any] = queue.SimpleQueue()
        render = json_line if log_format == "json" else text_line
        self._listener = _Renderer(self._batches, target, render, self._written)
        self._pending: list[dict[str, Any]] = []
        self._max_waiting = max_waiting_lines
        self._lock = threading.Lock()
        self._waiting = 0  # lines handed to the writer's thread and not yet written
        self._unreported = 0  # lines dropped that no written line has told of yet
        #: Lines dropped since the writer was made, because too many were waiting.
        self.dropped = 0

    def start(self) -> None:
        self._listener.start()

    def stop(self) -> None:
        """Write every record, then close the file."""
        self._hand_over()
        self._listener.stop()
        self._target.close()

    def write(self, fields: dict[str, Any]) -> None:
        """Keep one record's fields for the next batch (called on the event loop)."""
        if not self._pending:
            asyncio.get_running_loop().call_later(self.BATCH_SECONDS, self._hand_over)
        self._pending.append(fields)

    def _hand_over(self) -> None:
        if not self._pending:
            return
        batch, self._pending = self._pending, []
        with self._lock:
            if self._waiting + len(batch) > self._max_waiting:
                self.dropped += len(batch)
                self._unreported += len(batch)
                return
            if self._unreported:
                notice = {"time": _utc_text(time.time()), "dropped_lines": self._unreported}
                batch.insert(0, notice)
                self._unreported = 0
            self._waiting += len(batch)
        self._batches.put(batch)

    def _written(self, lines: int) -> None:
        """Called on the writer's thread once a batch is written (or failed to be)."""
        with self._lock:
            self._waiting -= lines


class AccessLog:
    """ASGI middleware: one record per HTTP request, handed to an AccessLogWriter."""

    def __init__(self, app: _ASGIApp, writer: AccessLogWriter) -> None:
        self.app = app
        self.writer = writer

    async def __call__(
        self,
        scope: _Message,
        receive: Callable[[], Awaitable[_Message]],
        send: Callable[[_Message], Awaitable[None]],
    ) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        arrived = time.time()
        clock = time.perf_counter()
        status = 500  # what the client gets if the app fails before it answers
        turn: dict[str, str] = {}

        async def watched_send(message: _Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                for name, value in message.get("headers", []):
                    if name in _TURN_HEADERS:
                        turn[_TURN_HEADERS[name]] = value.decode("latin-1")
            await send(message)

        try:
            await self.app(scope, receive, watched_send)
        finally:
            client = scope.get("client")
            fields: dict[str, Any] = {
                "time": _utc_text(arrived),
                "client": f"{client[0]}:{client[1]}" if client else "-",
                "method": scope.get("method", "-"),
                # The path alone: a query string may carry a token a client put there.
                "path": scope.get("path", ""),
                "status": status,
                "duration_ms": round((time.perf_counter() - clock) * 1000.0, 1),
                "owner": scope.get(OWNER_SCOPE_KEY),
                **turn,
            }
            self.writer.write(fields)
