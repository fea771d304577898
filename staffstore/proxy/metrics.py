"""The proxy's Prometheus metrics, counted in memory and written in the text exposition format.

Counters follow the receipts the proxy writes since it started (the store's ledger keeps the
totals across restarts); cost counts only what providers reported, and the turns whose cost is
unknown are counted apart rather than added as zero. Written by hand: no client library.
"""

from __future__ import annotations

import math
import threading
import time
from bisect import bisect_left
from collections.abc import Awaitable, Callable, Collection, Iterable, MutableMapping
from typing import TYPE_CHECKING, Any

from ..models import Receipt

if TYPE_CHECKING:
    from .writer import BacklogCounts

#: Upper bounds of the request latency histogram, in seconds: hits live in the first few,
#: model calls in the last.
LATENCY_BUCKETS: tuple[float, ...] = (
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
)  # fmt: skip

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
OUTCOME_HEADER = b"x-staffstore-outcome"

_Message = MutableMapping[str, Any]
_ASGIApp = Callable[
    [_Message, Callable[[], Awaitable[_Message]], Callable[[_Message], Awaitable[None]]],
    Awaitable[None],
]

_COUNTERS: tuple[tuple[str, str], ...] = (
    ("turns", "Chat turns that reached the gate and got a receipt."),
    ("hits", "Turns answered from a claim or a kept answer."),
    ("misses", "Turns that were not answered from the store."),
    ("avoided_calls", "Model calls avoided by answering from the store."),
    ("attempted_calls", "Model calls sent upstream (they may have been billed)."),
    ("failed_calls", "Model calls sent upstream that did not end with an answer."),
    ("unknown_cost_turns", "Attempted calls whose cost the provider did not report."),
    ("rejected", "Requests refused before the gate (bad input); not counted as turns."),
)


class _Histogram:
    def __init__(self, bounds: tuple[float, ...]) -> None:
        self.bounds = bounds
        self.counts = [0] * (len(bounds) + 1)  # the last one is +Inf
        self.total = 0.0

    def observe(self, seconds: float) -> None:
        self.counts[bisect_left(self.bounds, seconds)] += 1
        self.total += seconds


class Metrics:
    """Counters and a latency histogram for one proxy process; safe to use from any thread."""

    def __init__(self, buckets: tuple[float, ...] = LATENCY_BUCKETS) -> None:
        self._lock = threading.Lock()
        self._buckets = buckets
        self._counts = {name: 0 for name, _ in _COUNTERS}
        self._cost_usd = 0.0
        self._latency: dict[str, _Histogram] = {}
        self._requests: dict[tuple[str, int], int] = {}
        #: The writer's backlog of turns waiting for the store's lock, when a writer runs.
        self.backlog: Callable[[], BacklogCounts] | None = None

    def count_receipt(self, receipt: Receipt) -> None:
        """Count one receipt: its outcome, whether a call was avoided or made, its known cost."""
        with self._lock:
            if receipt.status == "rejected":
                # Refused before the gate (bad JSON, no messages): not a turn, not a miss.
                self._counts["rejected"] += 1
                return
            self._counts["turns"] += 1
            self._counts["hits" if receipt.outcome == "hit" else "misses"] += 1
            self._counts["avoided_calls"] += receipt.inference_avoided
            if receipt.inference_attempted:
                self._counts["attempted_calls"] += 1
                self._counts["failed_calls"] += receipt.status != "ok"
                if receipt.cost_usd is None:
                    self._counts["unknown_cost_turns"] += 1
                else:
                    self._cost_usd += receipt.cost_usd

    def count_request(self, route: str, status: int) -> None:
        """Count one finished HTTP request, by route and status."""
        with self._lock:
            self._requests[(route, status)] = self._requests.get((route, status), 0) + 1

    def observe_turn(self, outcome: str, seconds: float) -> None:
        """Add one chat request's time, from arrival to last byte, to the latency histogram."""
        with self._lock:
            histogram = self._latency.get(outcome)
            if histogram is None:
                histogram = self._latency[outcome] = _Histogram(self._buckets)
            histogram.observe(seconds)

    def render(self) -> str:
        """The metrics in Prometheus' text exposition format (version 0.0.4)."""
        with self._lock:
            lines: list[str] = []
            for name, help_text in _COUNTERS:
                lines += _family(f"staffstore_{name}_total", "counter", help_text)
                lines.append(f"staffstore_{name}_total {self._counts[name]}")
            lines += _family(
                "staffstore_known_cost_usd_total",
                "counter",
                "Cost reported by providers for attempted calls, in US dollars.",
            )
            lines.append(f"staffstore_known_cost_usd_total {_number(self._cost_usd)}")
            lines += _family(
                "staffstore_http_requests_total", "counter", "HTTP requests by route and status."
            )
            for (route, status), count in sorted(self._requests.items()):
                labels = _labels(route=route, status=str(status))
                lines.append(f"staffstore_http_requests_total{labels} {count}")
            lines += _family(
                "staffstore_request_duration_seconds",
                "histogram",
                "Chat requests' time from arrival to last byte, by outcome (hit, miss, error).",
            )
            for outcome, histogram in sorted(self._latency.items()):
                lines += _histogram_lines(outcome, histogram)
        if self.backlog is not None:
            lines += _backlog_lines(self.backlog())
        return "\n".join(lines) + "\n"


def _backlog_lines(counts: BacklogCounts) -> list[str]:
    lines = _family(
        "staffstore_receipts_pending",
        "gauge",
        "Turns kept in memory because another process holds the store's write lock.",
    )
    lines.append(f"staffstore_receipts_pending {counts.pending}")
    for name, value, help_text in (
        ("deferred", counts.deferred, "Turns that waited in memory for the store's lock."),
        ("landed_late", counts.landed, "Turns from that backlog written since."),
        ("lost", counts.lost, "Turns the store refused even as a bare receipt."),
    ):
        lines += _family(f"staffstore_receipts_{name}_total", "counter", help_text)
        lines.append(f"staffstore_receipts_{name}_total {value}")
    return lines


def _family(name: str, kind: str, help_text: str) -> list[str]:
    return [f"# HELP {name} {help_text}", f"# TYPE {name} {kind}"]


def _histogram_lines(outcome: str, histogram: _Histogram) -> Iterable[str]:
    name = "staffstore_request_duration_seconds"
    running = 0
    bounds = [*(_number(b) for b in histogram.bounds), "+Inf"]
    for bound, count in zip(bounds, histogram.counts, strict=True):
        running += count
        yield f"{name}_bucket{_labels(outcome=outcome, le=bound)} {running}"
    yield f"{name}_sum{_labels(outcome=outcome)} {_number(histogram.total)}"
    yield f"{name}_count{_labels(outcome=outcome)} {running}"


def _labels(**labels: str) -> str:
    # The exposition format escapes backslash, double quote and newline in label values.
    def escape(value: str) -> str:
        return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")

    return "{" + ",".join(f'{key}="{escape(value)}"' for key, value in labels.items()) + "}"


def _number(value: float) -> str:
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return repr(float(value)) if not float(value).is_integer() else f"{value:.1f}"


class RequestTiming:
    """ASGI middleware: count every request by route and status, and time each chat request
    from its arrival to its last byte, by the outcome its `X-Staffstore-Outcome` header names.

    Routes outside `routes` are counted as "other", so a scanner cannot grow the label set.
    """

    def __init__(
        self, app: _ASGIApp, metrics: Metrics, chat_route: str, routes: Collection[str]
    ) -> None:
        self.app = app
        self.metrics = metrics
        self.chat_route = chat_route
        self.routes = routes

    async def __call__(
        self,
        scope: _Message,
        receive: Callable[[], Awaitable[_Message]],
        send: Callable[[_Message], Awaitable[None]],
    ) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        clock = time.perf_counter()
        status = 500  # what the client gets if the app fails before it answers
        outcome: str | None = None

        async def timed_send(message: _Message) -> None:
            nonlocal status, outcome
            if message["type"] == "http.response.start":
                status = message["status"]
                for name, value in message.get("headers", []):
                    if name == OUTCOME_HEADER:
                        outcome = value.decode("latin-1")
            await send(message)

        try:
            await self.app(scope, receive, timed_send)
        finally:
            path = scope.get("path", "")
            route = path if path in self.routes else "other"
            self.metrics.count_request(route, status)
            if route == self.chat_route:
                label = "error" if status >= 400 else outcome or "other"
                self.metrics.observe_turn(label, time.perf_counter() - clock)
