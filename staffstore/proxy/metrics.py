"""The proxy's Prometheus metrics (prometheus_client), in the text exposition format.

Counters follow the receipts the proxy writes since it started (the store's ledger keeps the
totals across restarts); cost counts only what providers reported, and the turns whose cost is
unknown are counted apart rather than added as zero. The cost avoided is the ledger's estimate
(each hit's receipt carries what the paid call whose answer it served cost); avoided calls
without one are counted apart, never priced at zero. The totals have no labels; the same turns
are counted again by owner, outcome and reason (`staffstore_owner_turns_total`), and cost paid,
calls avoided and cost avoided by owner. A request refused before the gate (status `rejected`)
is not a turn: it is counted in `staffstore_rejected_total` only. GET /metrics needs the
metrics key (see app.py).
"""

from __future__ import annotations

import gc
import time
from collections.abc import Awaitable, Callable, Collection, Iterator, MutableMapping
from typing import TYPE_CHECKING, Any

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    disable_created_metrics,
    generate_latest,
)
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from ..gate.pair_model import loaded_pair_model
from ..models import Receipt
from .heap import CollectionPauses, heap_walks

if TYPE_CHECKING:
    from .writer import BacklogCounts

# The `_created` series (a start time per counter and label set) would double what a scrape
# carries and tell nothing a restart counter does not.
disable_created_metrics()  # type: ignore[no-untyped-call]

#: Upper bounds of the garbage collector's pause histogram, in seconds: a young collection
#: takes microseconds, a full one over a large cache hundreds of milliseconds.
GC_PAUSE_BUCKETS: tuple[float, ...] = (0.0001, 0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0)

#: Upper bounds of the request latency histogram, in seconds: hits live in the first few,
#: model calls in the last.
LATENCY_BUCKETS: tuple[float, ...] = (
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
)  # fmt: skip
#: Owners counted under their own label; later ones share OTHER_OWNER, so a trusted-mode
#: server (owner from a header) cannot grow the label set without bound.
MAX_OWNER_LABELS = 1000
OTHER_OWNER = "_other"

# The classic text format's type: the library's newest (1.0.0) needs a recent Prometheus, and
# with our plain metric names its body is the same.
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
    (
        "unknown_avoided_cost_calls",
        "Avoided calls whose cost avoided is unknown: the answer served came from no paid call "
        "with a known cost (a job's or a person's claim, or a provider that did not say).",
    ),
    ("rejected", "Requests refused before the gate (bad input); not counted as turns."),
)


class _ReadWhenScraped(Collector):
    """What other parts count for themselves, read at each scrape: the writer's backlog and
    the access log's dropped lines, each absent while its part is not running; how many
    objects the garbage collector was told to leave alone, and its walks of them."""

    def __init__(self, metrics: Metrics) -> None:
        self._metrics = metrics

    def collect(self) -> Iterator[Metric]:
        yield GaugeMetricFamily(
            "staffstore_gc_frozen_objects",
            "Objects loaded at startup that the garbage collector no longer walks (gc.freeze).",
            value=gc.get_freeze_count(),
        )
        walks, freed = heap_walks()
        by_trigger = CounterMetricFamily(
            "staffstore_gc_heap_walks",
            "Full collections that walked the frozen heap, in this process, by what made them: "
            "'idle' while no request was in flight, 'growth' on the request path once the "
            "process had grown by the forced margin without a quiet second (proxy/heap.py).",
            labels=["trigger"],
        )
        for trigger, count in sorted(walks.items()):
            by_trigger.add_metric([trigger], count)
        yield by_trigger
        yield CounterMetricFamily(
            "staffstore_gc_heap_walk_freed_objects",
            "Unreachable objects those walks found: cycles that frozen objects had left, and "
            "any garbage younger collections had not reached yet.",
            value=freed,
        )
        # The model is the process's, shared by every proxy in it; zero until it is loaded.
        model = loaded_pair_model()
        yield CounterMetricFamily(
            "staffstore_gate_pair_model_pairs",
            "(turn, stored question) pairs the gate's pair model scored, in this process: a "
            "turn reaches it when the strict test has not served it and the slots agree.",
            value=model.calls if model else 0,
        )
        yield CounterMetricFamily(
            "staffstore_gate_pair_model_seconds",
            "Seconds the gate's pair model spent scoring those pairs, in this process: on the "
            "request path of the turns that reached it.",
            value=model.seconds if model else 0.0,
        )
        if self._metrics.access_log_dropped is not None:
            yield CounterMetricFamily(
                "staffstore_access_log_dropped_lines",
                "Access-log lines dropped because too many were waiting for the log's writer.",
                value=self._metrics.access_log_dropped(),
            )
        if self._metrics.backlog is None:
            return
        counts: BacklogCounts = self._metrics.backlog()
        yield GaugeMetricFamily(
            "staffstore_receipts_pending",
            "Turns kept in memory because another process holds the store's write lock.",
            value=counts.pending,
        )
        for name, value, help_text in (
            ("deferred", counts.deferred, "Turns that waited in memory for the store's lock."),
            ("landed_late", counts.landed, "Turns from that backlog written since."),
            ("lost", counts.lost, "Turns the store refused even as a bare receipt."),
        ):
            yield CounterMetricFamily(f"staffstore_receipts_{name}", help_text, value=value)


class Metrics:
    """Counters and a latency histogram for one proxy process, in a registry of its own (two
    proxies in one process count apart); safe to use from any thread."""

    def __init__(self, buckets: tuple[float, ...] = LATENCY_BUCKETS) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self._totals = {
            name: Counter(f"staffstore_{name}", help_text, registry=self.registry)
            for name, help_text in _COUNTERS
        }
        self._cost = Counter(
            "staffstore_known_cost_usd",
            "Cost reported by providers for attempted calls, in US dollars.",
            registry=self.registry,
        )
        self._owner_turns = Counter(
            "staffstore_owner_turns",
            "Turns by owner, outcome (hit, miss, rejected) and reason.",
            ["owner", "outcome", "reason"],
            registry=self.registry,
        )
        self._owner_cost = Counter(
            "staffstore_owner_known_cost_usd",
            "Cost reported by providers, by owner, in US dollars.",
            ["owner"],
            registry=self.registry,
        )
        self._avoided_cost = Counter(
            "staffstore_estimated_avoided_cost_usd",
            "Cost avoided, an estimate in US dollars: for each avoided call with a known "
            "estimate, what the paid call whose answer was served cost.",
            registry=self.registry,
        )
        self._owner_avoided = Counter(
            "staffstore_owner_avoided_calls",
            "Model calls avoided by answering from the store, by owner.",
            ["owner"],
            registry=self.registry,
        )
        self._owner_avoided_cost = Counter(
            "staffstore_owner_estimated_avoided_cost_usd",
            "Cost avoided, an estimate in US dollars, by owner (see "
            "staffstore_estimated_avoided_cost_usd).",
            ["owner"],
            registry=self.registry,
        )
        self._owner_unknown_avoided = Counter(
            "staffstore_owner_unknown_avoided_cost_calls",
            "Avoided calls whose cost avoided is unknown, by owner.",
            ["owner"],
            registry=self.registry,
        )
        self._requests = Counter(
            "staffstore_http_requests",
            "HTTP requests by route and status.",
            ["route", "status"],
            registry=self.registry,
        )
        self._latency = Histogram(
            "staffstore_request_duration_seconds",
            "Chat requests' time from arrival to last byte, by outcome (hit, miss, error).",
            ["outcome"],
            buckets=buckets,
            registry=self.registry,
        )
        self._warm_up = Gauge(
            "staffstore_gate_warm_up_seconds",
            "Time the proxy spent at startup loading the gate's tables and embeddings (0 "
            "until done), which the first request would otherwise have waited for.",
            registry=self.registry,
        )
        self._gc_pause = Histogram(
            "staffstore_gc_pause_seconds",
            "Time the garbage collector stopped every request, by generation: 2 is a full "
            "collection, which walks every object the gate's caches hold.",
            ["generation"],
            buckets=GC_PAUSE_BUCKETS,
            registry=self.registry,
        )
        self.collection_pauses = CollectionPauses(
            lambda generation, seconds: self._gc_pause.labels(str(generation)).observe(seconds)
        )
        self._owners: set[str] = set()
        self._in_flight = 0
        self._quiet_since = time.monotonic()
        #: The writer's backlog of turns waiting for the store's lock, when a writer runs.
        self.backlog: Callable[[], BacklogCounts] | None = None
        #: How many access-log lines were dropped, when the access log is on.
        self.access_log_dropped: Callable[[], int] | None = None
        self.registry.register(_ReadWhenScraped(self))

    def _owner(self, owner: str) -> str:
        if owner in self._owners or len(self._owners) < MAX_OWNER_LABELS:
            self._owners.add(owner)
            return owner
        return OTHER_OWNER

    def count_receipt(self, receipt: Receipt) -> None:
        """Count one receipt: its outcome, whether a call was avoided or made, its known cost,
        and for an avoided call the estimate of what it saved (or that it is unknown)."""
        owner = self._owner(receipt.owner)
        if receipt.status == "rejected":
            # Refused before the gate (bad JSON, no messages): not a turn, not a miss.
            self._totals["rejected"].inc()
            self._owner_turns.labels(owner, "rejected", receipt.reason).inc()
            return
        self._totals["turns"].inc()
        self._totals["hits" if receipt.outcome == "hit" else "misses"].inc()
        self._owner_turns.labels(owner, receipt.outcome, receipt.reason).inc()
        if receipt.inference_avoided:
            self._totals["avoided_calls"].inc()
            self._owner_avoided.labels(owner).inc()
            if receipt.avoided_cost_usd is None:
                self._totals["unknown_avoided_cost_calls"].inc()
                self._owner_unknown_avoided.labels(owner).inc()
            else:
                saved = max(0.0, receipt.avoided_cost_usd)  # a counter never goes down
                self._avoided_cost.inc(saved)
                self._owner_avoided_cost.labels(owner).inc(saved)
        if receipt.inference_attempted:
            self._totals["attempted_calls"].inc()
            if receipt.status != "ok":
                self._totals["failed_calls"].inc()
            if receipt.cost_usd is None:
                self._totals["unknown_cost_turns"].inc()
            else:
                # A counter refuses to go down; no provider bills a negative amount.
                cost = max(0.0, receipt.cost_usd)
                self._cost.inc(cost)
                self._owner_cost.labels(owner).inc(cost)

    def request_began(self) -> None:
        """One more HTTP request in flight (from the event loop, as request_ended)."""
        self._in_flight += 1

    def request_ended(self) -> None:
        self._in_flight -= 1
        self._quiet_since = time.monotonic()

    def idle_seconds(self) -> float:
        """How long no HTTP request has been in flight: 0 while one is."""
        return 0.0 if self._in_flight else time.monotonic() - self._quiet_since

    def count_request(self, route: str, status: int) -> None:
        """Count one finished HTTP request, by route and status."""
        self._requests.labels(route, str(status)).inc()

    def observe_turn(self, outcome: str, seconds: float) -> None:
        """Add one chat request's time, from arrival to last byte, to the latency histogram."""
        self._latency.labels(outcome).observe(seconds)

    def warmed_up(self, seconds: float) -> None:
        self._warm_up.set(seconds)

    def render(self) -> str:
        """The metrics in Prometheus' text exposition format."""
        return generate_latest(self.registry).decode("utf-8")


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
        self.metrics.request_began()
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
            self.metrics.request_ended()
            path = scope.get("path", "")
            route = path if path in self.routes else "other"
            self.metrics.count_request(route, status)
            if route == self.chat_route:
                label = "error" if status >= 400 else outcome or "other"
                self.metrics.observe_turn(label, time.perf_counter() - clock)
