"""The OpenAI-compatible HTTP front: answer chat completions from the store before paying upstream.

A chat request asks the store first: an exact repeat of a request the owner already paid for,
then the owner's verified claims (query_first), then, for a context-free request (one user
message under the same model, system prompt and parameters), the answers the owner paid for
to reworded forms of it, judged by the same gate (gate/kept_reuse.py). A hit answers at once
with zero usage and says where its answer came from (X-Staffstore-Source); a miss
goes upstream, as sent or as the bounded working set, and streams back as it arrives. Every
chat request from a known owner leaves a receipt, hit or miss, success or failure.

    POST /v1/chat/completions   the cache in front of the model (OpenAI's wire format)
    GET  /v1/models             the upstream's model list, kept for `models_ttl` seconds
    GET  /v1/staffstore/ledger  the caller's totals
    POST /v1/staffstore/claims  (admin) promote a paid answer by receipt id, or store a claim
    POST /v1/staffstore/jobs/dispatch, GET /v1/staffstore/jobs/{id}  jobs (see jobs.py)
    GET  /healthz               liveness
    GET  /metrics               Prometheus text format (needs the metrics key)
    GET  /openapi.json          the OpenAPI 3.1 document of these routes (openapi.py), no key
    .../v1/staffstore/state/... and /v1/staffstore/agent-state...: see state_routes.py
    .../v1/staffstore/scoped-state..., workflows/{name}/..., runs/..., memory/...: memory_routes.py

With `access_log` on, access_log.py writes one line per request (owner, never key).

A bounded working set carries the agent's working state (`staffstore.agent` in the body or
X-Staffstore-Agent; the default agent otherwise), so its kept answers are kept per working
state: a repeat asked after a value changed is not served the answer to the old value.

Identical requests in flight at once are paid for once (pending.py): a miss whose answer would
be kept claims its call in the store first, and the identical requests that arrive meanwhile,
here or at another replica sharing the store, wait for that kept answer instead of paying.

Every write goes through one writer task (writer.py): the store's one writing SQLite
connection is shared by every request, and a transaction must not take in another request's
statements. (The leases on calls do not: each is one statement that opens no transaction, run
on the writer's thread right after the lookup.) The lookups themselves only read, and run on
the store's read connections (StaffStore.run_read), which no write holds up; a miss's second
look, which reads nothing more, is scored on the gate's own thread once they are given back.
Once the upstream has been paid, nothing stops its receipt: a store locked by another process
delays it (the writer keeps it and retries), text the store cannot hold is made storable.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import time
from collections.abc import AsyncIterator, Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractAsyncContextManager, asynccontextmanager, suppress
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any, TypeVar, cast

import httpx
from pydantic import ValidationError
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from .. import __version__
from ..errors import (
    InputError,
    MissingApiKeyError,
    NotFoundError,
    StoreBusyError,
    UpstreamConnectError,
    UpstreamError,
    UpstreamTimeoutError,
    UpstreamUnreachableError,
)
from ..gate import Candidates, KeptCandidates, kept_candidates, look_up, warm_up
from ..gate.kept_reuse import prompt_to_keep
from ..identity import content_hash
from ..models import Decision, NewClaim, Receipt, ReceiptStatus, Role, Turn, utcnow
from ..mouth import new_receipt_id
from ..state.config import DEFAULT_AGENT, StateConfig
from ..state.secrets import Scrubber
from ..state.working import working_state_section
from ..store import StaffStore
from ..store.checkpointer import FALLBACK_PAGES, Checkpointer
from ..store.promote import promote_receipt
from ..store.retention import retention_cutoff
from ..store.sync_store import KeptAnswer, PaidOrigin, SyncStore, TurnRecord
from ..upstream import OpenRouter, shown_url, url_password
from ..working_set import DEFAULT_SYSTEM, Budgets, build_working_set, token_counter
from ..working_set.story import refresh_story, write_story
from ..working_set.warmup import warm_up_session
from .access_log import OWNER_SCOPE_KEY, AccessLog, AccessLogWriter
from .bodies import PromoteBody
from .config import ServeConfig, WorkingSetMode, hash_key
from .heap import (
    IDLE_BEFORE_WALK,
    freeze_startup_heap,
    heap_walk_due,
    thaw_startup_heap,
    walk_frozen_heap,
)
from .jobs import JobEndpoints
from .memory_routes import MemoryRoutes
from .metrics import CONTENT_TYPE, Metrics, RequestTiming
from .openapi import openapi_document
from .pending import (
    LEASE_MARGIN,
    CallLease,
    Standing,
    claim,
    kept_answer_for,
    release,
    takes_part,
    wait_for_answer,
)
from .state_routes import StateRoutes
from .stream import RelayedEvents, RelayResponse, StreamResult
from .wire import (
    STATUS_TYPES,
    ChatRequest,
    WireError,
    completion_body,
    completion_events,
    error_body,
    json_bytes,
    read_chat_request,
    read_json,
    sse_event,
    status_code_name,
    upstream_failure,
)
from .writer import Writer

T = TypeVar("T")

H_OUTCOME = "x-staffstore-outcome"
H_REASON = "x-staffstore-reason"
H_RECEIPT = "x-staffstore-receipt"
H_CLAIM = "x-staffstore-claim"
H_KEPT_FROM = "x-staffstore-kept-from"
#: On a hit, where its answer came from: "claim" or "kept_answer" (Receipt.source).
H_SOURCE = "x-staffstore-source"
H_SESSION = "x-staffstore-session"
H_OWNER = "x-staffstore-owner"
H_WORKING_SET = "x-staffstore-working-set"
H_AGENT = "x-staffstore-agent"
#: The OpenAI SDKs obey this header: "false" where a retry could pay for the same call twice.
H_SHOULD_RETRY = "x-should-retry"

_REDACTED = "[redacted]"
#: How many misses' second looks are scored at once. One: the alignment's Python holds the
#: GIL, and two scorings at once kept hits waiting for it. With hits and misses at once (100
#: and 12.5 a second, 100,000 claims, three 45-s runs each on a 2-core machine), one thread
#: served hits at p99 27 / 20 / 20 ms against 47 / 35 / 39 ms with two, and misses no slower
#: (p99 133 / 124 / 123 ms against 142 / 126 / 145 ms).
GATE_THREADS = 1
_SESSIONS_REMEMBERED = 100_000
#: A turn's text longer than this is kept in its session's messages only, not in its receipt
#: as well: a pasted 8 MiB log is stored once. (Such a receipt cannot be promoted to a claim,
#: which is a question, not a document.)
RECEIPT_TEXT_LIMIT = 64 * 1024
_CHAT_ROUTE = "/v1/chat/completions"
_ROUTES = (
    _CHAT_ROUTE, "/v1/models", "/v1/staffstore/ledger", "/v1/staffstore/claims",
    "/v1/staffstore/jobs/dispatch", "/healthz", "/metrics", "/openapi.json",
)  # fmt: skip


@dataclass(frozen=True)
class Caller:
    """Who sent a request: the owner its key speaks for, and whether it is an admin."""

    owner: str
    admin: bool


@dataclass
class _Turn:
    """One chat request on its way: who, what, since when, and its receipt's id (known early,
    so a streamed answer can name its receipt in the headers it sends first)."""

    caller: Caller
    started: datetime = field(default_factory=utcnow)
    clock: float = field(default_factory=time.perf_counter)
    receipt_id: str = field(default_factory=new_receipt_id)
    chat: ChatRequest | None = None
    session_id: str | None = None
    #: The claim on paying for this turn's call, while it holds one (pending.py).
    lease: CallLease | None = None
    #: In bounded mode, once its working set is built: the prompt's tokens per part, and the
    #: older session messages it recalled (both go into what the turn records).
    prompt_parts: dict[str, int] | None = None
    recalled: list[int] = field(default_factory=list)

    @property
    def keeps_text(self) -> bool:
        return self.chat is not None and not self.chat.controls.no_store

    def receipt(self, *, answer: str | None = None, **fields: Any) -> Receipt:
        elapsed_ms = (time.perf_counter() - self.clock) * 1000.0
        return Receipt(
            id=self.receipt_id,
            owner=self.caller.owner,
            latency_ms=round(elapsed_ms, 3),
            started_at=self.started,
            finished_at=self.started + timedelta(milliseconds=elapsed_ms),
            session_id=self.session_id,
            question=self._question(),
            answer=answer if self.keeps_text else None,
            prompt_parts=self.prompt_parts,
            **fields,
        )

    def _question(self) -> str | None:
        if self.chat is None or self.chat.turn is None or not self.keeps_text:
            return None
        return self.chat.turn if len(self.chat.turn) <= RECEIPT_TEXT_LIMIT else None

    def exchange(self, answer: str) -> list[tuple[Role, str]]:
        """The messages this turn adds to its session (none when the client said no-store)."""
        if self.chat is None or self.chat.turn is None or not self.keeps_text:
            return []
        return [("user", self.chat.turn), ("assistant", answer)]


class Proxy:
    """The proxy's state and handlers. `create_app` wraps one in a Starlette application."""

    def __init__(
        self,
        config: ServeConfig,
        *,
        transport: httpx.AsyncBaseTransport | None = None,
        metrics: Metrics | None = None,
    ) -> None:
        self.config = config
        self.metrics = metrics or Metrics()
        self._transport = transport
        self._store: StaffStore | None = None
        self._upstream: OpenRouter | None = None
        self._writer: Writer | None = None
        self._gate: ThreadPoolExecutor | None = None
        # Session ids by (owner, name): sessions are never renamed or deleted, and this saves
        # a database round trip on every request of a known conversation.
        self._sessions: dict[tuple[str, str], str] = {}
        self._models: tuple[float, dict[str, Any]] | None = None
        # Bytes of text stored per owner, read once per owner and counted on as turns land.
        self._stored: dict[str, int] = {}
        self._secrets = [s for s in (config.upstream_key, url_password(config.upstream_url)) if s]
        # Tenants are not told where the upstream is: its URL is the operator's business.
        self._upstream_urls = sorted(
            {config.upstream_url.rstrip("/"), shown_url(config.upstream_url.rstrip("/"))},
            key=len,
            reverse=True,
        )

    @property
    def store(self) -> StaffStore:
        return _running(self._store)

    @property
    def upstream(self) -> OpenRouter:
        return _running(self._upstream)

    @property
    def writer(self) -> Writer:
        return _running(self._writer)

    @asynccontextmanager
    async def lifespan(self, app: Starlette) -> AsyncIterator[None]:
        """Open the store and the upstream client; on the way out, finish every write first."""
        self._store = await StaffStore.connect(
            self.config.db_path, lock_timeout=self.config.lock_timeout
        )
        if self.config.kept_retention_days is not None:
            await self._apply_kept_retention(self.config.kept_retention_days)
        self._writer = Writer(
            self._store, on_commit=self._count, max_backlog=self.config.max_backlog
        )
        self._writer.start()
        self.metrics.backlog = self._writer.backlog
        # One connection per request in flight: a slow model must not queue the next call.
        http = httpx.AsyncClient(
            transport=self._transport,
            limits=httpx.Limits(max_connections=None, max_keepalive_connections=100),
        )
        self._upstream = OpenRouter(
            # "" rather than None: OpenRouter would read the environment again on None.
            api_key=self.config.upstream_key or "",
            base_url=self.config.upstream_url,
            timeout=self.config.timeout,
            max_retries=self.config.upstream_retries,
            client=http,
        )
        # The second look's tables and embeddings load once per process: now, not during the
        # first request that needs them.
        started = time.perf_counter()
        await asyncio.to_thread(warm_up)
        self.metrics.warmed_up(time.perf_counter() - started)
        # The second look's scoring, tens of milliseconds a miss, on a thread of its own: on
        # the read connections it kept a lookup waiting behind it whenever every one of them
        # held a miss.
        self._gate = ThreadPoolExecutor(GATE_THREADS, thread_name_prefix="staffstore-gate")
        # SQLite's checkpoints copy the WAL back with an fsync: a thread of their own, not a
        # request. (PostgreSQL checkpoints in its own server.)
        checkpointer = None
        if self._store.path is not None:
            await self._store.defer_checkpoints(FALLBACK_PAGES)
            checkpointer = Checkpointer(self._store.path)
            checkpointer.start()
        freeze_startup_heap()
        self.metrics.collection_pauses.start()
        walker = asyncio.create_task(self._walk_heap_when_idle(), name="staffstore-heap-walk")
        try:
            yield
        finally:
            walker.cancel()
            with suppress(asyncio.CancelledError):
                await walker
            self.metrics.collection_pauses.stop()
            thaw_startup_heap()
            await self._writer.close()
            await asyncio.to_thread(self._gate.shutdown)
            await http.aclose()
            if checkpointer is not None:
                await asyncio.to_thread(checkpointer.stop)
            await self._store.close()
            self._store = self._upstream = self._writer = self._gate = None

    async def _walk_heap_when_idle(self) -> None:
        """Walk the frozen heap when it is due and no request has been in flight for
        IDLE_BEFORE_WALK (proxy/heap.py): a walk over full caches takes hundreds of
        milliseconds, and on this event loop no request is taken in meanwhile."""
        while True:
            await asyncio.sleep(IDLE_BEFORE_WALK / 4)
            if heap_walk_due() and self.metrics.idle_seconds() >= IDLE_BEFORE_WALK:
                walk_frozen_heap()

    async def _apply_kept_retention(self, days: float) -> None:
        """Delete the kept answers past the retention (and expired ones), as the server starts."""
        now = utcnow()
        # Another process holding the lock must not stop the server: they go at the next
        # start, or at the next `staffstore kept prune`.
        with suppress(StoreBusyError):
            await self.store.prune_kept_answers(before=retention_cutoff(days, now), now=now)

    # -- writes ------------------------------------------------------------------------------

    async def _record(
        self,
        turn: _Turn,
        receipt: Receipt,
        messages: Sequence[tuple[Role, str]] = (),
        kept: KeptAnswer | None = None,
    ) -> None:
        """Write a turn's receipt; a session met for the first time is created on the way."""
        name = turn.chat.session if turn.chat is not None else None
        record = TurnRecord(
            receipt, turn.session_id, messages, kept, session_name=name, recalled=turn.recalled
        )
        try:
            session_id = await self.writer.record(record)
        finally:
            # Committed, kept answer and all (or the call failed): the requests waiting for
            # this call can find its answer now, or pay for it themselves.
            await self._let_go(turn)
        if name is not None and session_id is not None:
            self._remember_session(receipt.owner, name, session_id)

    async def _let_go(self, turn: _Turn) -> None:
        """Release the turn's claim on its call, if it holds one."""
        if turn.lease is not None:
            lease, turn.lease = turn.lease, None
            await release(self.store, lease)

    def _count(self, record: TurnRecord) -> None:
        self.metrics.count_receipt(record.receipt)
        owner = record.receipt.owner
        if owner in self._stored:
            self._stored[owner] += _text_bytes(record)

    async def _check_quota(self, owner: str, chat: ChatRequest) -> None:
        """WireError 429 when this turn would take its owner past its storage quota."""
        quota = self.config.quota_of(owner)
        if quota is None or chat.controls.no_store:
            return  # a no-store turn keeps no text: it costs its owner no space
        if owner not in self._stored:
            self._stored[owner] = await self.store.owner_text_bytes(owner)
        if self._stored[owner] + _utf8_size(chat.turn) > quota:
            raise WireError(
                429,
                f"the storage quota of {quota} bytes for this owner is used up; ask the "
                'operator for more, or send "cache": {"no-store": true}',
                error_type="insufficient_quota",
                code="storage_quota_exceeded",
            )

    def _remember_session(self, owner: str, name: str, session_id: str) -> None:
        if len(self._sessions) >= _SESSIONS_REMEMBERED:
            self._sessions.clear()
        self._sessions[(owner, name)] = session_id

    async def _ensure_session(self, owner: str, name: str) -> str | None:
        """The session's id now, creating the session if needed (the bounded working set
        reads the session's tail before the turn is recorded); None while the store is locked
        by another process."""
        known = self._sessions.get((owner, name))
        if known is None:
            try:
                known = await self.writer.run(lambda: self.store.ensure_session_id(owner, name))
                # First sight since this server started: a session compacted before comes
                # back with its story and an up-to-date vault (warmup.py).
                await self.writer.run(lambda: warm_up_session(self.store, owner, name))
            except StoreBusyError:
                return None
            self._remember_session(owner, name, known)
        return known

    # -- who is asking -----------------------------------------------------------------------

    def authenticate(self, request: Request) -> Caller:
        """The caller a request's key (or, in trusted mode, its owner header) names; else 401."""
        key = _bearer(request.headers.get("authorization"))
        entry = self.config.keys.get(hash_key(key)) if key else None
        if self.config.trusted:
            named = (request.headers.get(H_OWNER) or "").strip()
            owner = named or (entry.owner if entry else self.config.default_owner)
            caller = Caller(owner, admin=True)
        elif entry is None:
            # Never echo the key: name what is wrong, not what was sent.
            message = "unknown API key" if key else "no API key (send Authorization: Bearer KEY)"
            raise WireError(401, message, error_type="authentication_error", code="invalid_api_key")
        else:
            caller = Caller(entry.owner, entry.admin)
        # For the access log, which names the owner, never the key.
        request.scope[OWNER_SCOPE_KEY] = caller.owner
        return caller

    async def read_body(self, request: Request) -> bytes:
        """The request body, or WireError 413 as soon as it passes `max_body_bytes`, or 408
        when it has not all arrived within `body_timeout` seconds."""
        limit = self.config.max_body_bytes
        declared = request.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > limit:
            raise _too_large(limit)
        chunks: list[bytes] = []
        size = 0
        try:
            # A body that never ends would hold its connection and its buffer forever.
            async with asyncio.timeout(self.config.body_timeout):
                async for chunk in request.stream():
                    size += len(chunk)
                    if size > limit:
                        raise _too_large(limit)
                    chunks.append(chunk)
        except TimeoutError:
            raise WireError(
                408,
                f"the request body did not arrive within {self.config.body_timeout:g}s",
                code="body_timeout",
            ) from None
        return b"".join(chunks)

    # -- POST /v1/chat/completions -------------------------------------------------------------

    async def chat_completions(self, request: Request) -> Response:
        turn = _Turn(self.authenticate(request))
        owner = turn.caller.owner
        if self.writer.saturated:
            # The store has been locked so long that the backlog of receipts is full: take
            # no new call that would have no place for its receipt.
            problem = "the store is busy (locked by another process); try again shortly"
            return self.error_response(
                WireError(503, problem, error_type="server_error", code="store_busy"),
                {"retry-after": "5"},
            )
        try:
            chat = read_chat_request(
                await self.read_body(request),
                default_working_set=self.config.working_set,
                working_set_header=request.headers.get(H_WORKING_SET),
                session_header=request.headers.get(H_SESSION),
                agent_header=request.headers.get(H_AGENT),
                default_model=self.config.default_model,
            )
            self._prompt_budget(chat)  # a bad role or part is the request's fault: a 400 now
            await self._check_quota(owner, chat)
        except WireError as problem:
            receipt = turn.receipt(
                outcome="miss", reason=problem.code or "invalid_request", status="rejected",
                inference_avoided=False, inference_attempted=False, error=problem.message,
            )  # fmt: skip
            await self._record(turn, receipt)
            headers = {H_OUTCOME: "miss", H_RECEIPT: receipt.id}
            if problem.status == 429:
                headers[H_SHOULD_RETRY] = "false"  # a quota does not free itself in a second
            return self.error_response(problem, headers)
        if chat.working_set == "bounded" and chat.turn is not None:
            chat = await self._keyed_by_working_state(owner, chat)
        turn.chat = chat
        # A session seen before is known; a new one is created when the turn is recorded,
        # in the same transaction, unless the bounded working set needs its tail first.
        turn.session_id = self._sessions.get((owner, chat.session))
        if turn.session_id is None and chat.working_set == "bounded":
            turn.session_id = await self._ensure_session(owner, chat.session)
        if chat.story is not None:
            # The client's new story, before the turn: a hit or a miss, the session now has it,
            # and a miss's working set already carries it.
            await write_story(self.store, owner, chat.session, chat.story)
        lease = self._lease_for(turn, chat)
        decision, kept, origin, standing = await self._look_up(owner, chat, lease)
        if standing == "waiting":
            # An identical request is paying for this very call: its answer, once kept,
            # serves this one too, unless its call ends without one.
            assert lease is not None
            found = await self._wait_for_answer(turn, chat, decision, lease)
            if isinstance(found, KeptAnswer):
                return await self._serve_hit(turn, chat, _exact_repeat(found), found, found.origin)
            standing = found
        if decision.hit:
            return await self._serve_hit(turn, chat, decision, kept, origin)
        if standing == "holding":
            turn.lease = lease
        if turn.session_id is None and chat.working_set == "bounded":
            # The store is locked, so the session's tail cannot be read: send the messages
            # as the client sent them rather than fail a request the client can still get.
            mode: WorkingSetMode = "forward"
            body = chat.body
        else:
            try:
                body, mode = await self._upstream_body(turn, chat)
            except BaseException:
                await self._let_go(turn)  # nothing was paid: the waiters need not wait on
                raise
        if chat.stream:
            return await self._relay_miss(turn, chat, decision, body, mode)
        return await self._forward_miss(turn, chat, decision, body, mode)

    async def _keyed_by_working_state(self, owner: str, chat: ChatRequest) -> ChatRequest:
        """The request with its working state in its exact-repeat key: its prompt carries the
        state, so an answer kept under other values must not serve it."""
        agent = chat.agent or DEFAULT_AGENT
        section = await working_state_section(self.store, owner, agent)
        if not section:
            return chat
        keyed = content_hash({"request": chat.request_hash, "working_state": section})
        return replace(chat, request_hash=keyed)

    def _lease_for(self, turn: _Turn, chat: ChatRequest) -> CallLease | None:
        """The claim this request makes on its call if the store cannot answer it, or None
        when it takes no part (pending.py)."""
        if not takes_part(chat) or self.writer.backlog().pending:
            # With turns waiting for the store's lock, the answer would not be kept in time
            # for anyone waiting on it, and the claim would wait for that lock too.
            return None
        return CallLease(
            owner=turn.caller.owner,
            namespace=chat.controls.namespace,
            request_hash=chat.request_hash,
            holder=turn.receipt_id,
            ttl=self.config.timeout + LEASE_MARGIN,
        )

    async def _look_up(
        self, owner: str, chat: ChatRequest, lease: CallLease | None
    ) -> tuple[Decision, KeptAnswer | None, PaidOrigin | None, Standing | None]:
        """An exact repeat of a paid request first, then the owner's claims, else a miss; on
        a hit, the paid call whose answer it serves when one is known. On a miss, with a
        `lease`, where the request stands on its call once it has claimed it."""
        if chat.controls.no_cache:
            return Decision(outcome="miss", reason="no_cache"), None, None, None
        # The lookups in one trip to the store's read thread, which no write holds up: this
        # is on every request's path. Only a miss that takes part in leases makes a second
        # trip, to the writer's thread, to claim its call.
        budget, lock_timeout = self.config.gate_budget, self.store.lock_timeout
        reuse = self.config.paraphrase_reuse
        found = await self.store.run_read(
            lambda store: _answer_from_store(store, owner, chat, budget, reuse)
        )
        decision, kept, origin = (
            await self._scored(owner, found) if isinstance(found, _ToScore) else found
        )
        if decision.hit or lease is None:
            return decision, kept, origin, None
        # The claim looks for the kept answer again once it has won: an identical call that
        # finished between the lookup and the claim is served, not paid for again.
        standing = await self.store.run_sync(lambda store: claim(store, lease, chat, lock_timeout))
        if isinstance(standing, KeptAnswer):
            return _exact_repeat(standing), standing, standing.origin, None
        return decision, None, None, standing

    async def _scored(self, owner: str, work: _ToScore) -> Answer:
        """The second look, scored on a gate thread, so that no lookup waits for a read
        connection while it runs; for a claim it serves, the paid call it was promoted from."""
        loop = asyncio.get_running_loop()
        decision, kept = await loop.run_in_executor(_running(self._gate), work.decide)
        if kept is not None:
            return decision, kept, kept.origin
        claim_id = decision.claim_id
        if decision.hit and claim_id is not None:
            origin = await self.store.run_read(lambda store: store.claim_origin(owner, claim_id))
            return decision, None, origin
        return decision, None, None

    async def _wait_for_answer(
        self, turn: _Turn, chat: ChatRequest, decision: Decision, lease: CallLease
    ) -> KeptAnswer | Standing:
        """Wait for the answer of the identical call another request is paying for (see
        pending.wait_for_answer); a request cancelled while it waits still leaves a receipt."""
        try:
            return await wait_for_answer(self.store, lease, chat)
        except asyncio.CancelledError:
            receipt = turn.receipt(
                outcome="miss", reason=decision.reason, model=chat.model, status="cancelled",
                inference_avoided=False, inference_attempted=False,
            )  # fmt: skip
            await asyncio.shield(self._record(turn, receipt))
            raise

    async def _serve_hit(
        self,
        turn: _Turn,
        chat: ChatRequest,
        decision: Decision,
        kept: KeptAnswer | None,
        origin: PaidOrigin | None,
    ) -> Response:
        answer = decision.answer or ""
        source = "kept_answer" if kept is not None else "claim"
        receipt = turn.receipt(
            outcome="hit", reason=decision.reason, status="hit", inference_avoided=True,
            inference_attempted=False, claim_id=decision.claim_id, answer=answer,
            served_from=origin.receipt_id if origin else None,
            avoided_cost_usd=origin.cost_usd if origin else None, source=source,
        )  # fmt: skip
        await self._record(turn, receipt, turn.exchange(answer))
        headers = self._turn_headers(turn, "hit", decision.reason)
        headers[H_SOURCE] = source
        if decision.claim_id is not None:
            headers[H_CLAIM] = decision.claim_id
        if kept is not None:
            headers[H_KEPT_FROM] = kept.receipt_id
        model = (kept.model if kept is not None else None) or chat.model or "staffstore"
        if chat.stream:
            events = completion_events(answer, model, include_usage=chat.include_usage)
            return Response(events, media_type="text/event-stream", headers=headers)
        return JSONResponse(completion_body(answer, model), headers=headers)

    def _with_prompt(self, chat: ChatRequest, kept: KeptAnswer | None) -> KeptAnswer | None:
        """The kept answer with its prompt, when a reworded question may reuse it: paraphrase
        reuse is on and the request keeps one (kept_reuse.prompt_to_keep)."""
        prompt = prompt_to_keep(chat.turn, chat.context_key)
        if kept is None or not self.config.paraphrase_reuse or prompt is None:
            return kept
        return replace(kept, prompt=prompt)

    def _prompt_budget(self, chat: ChatRequest) -> int | Budgets:
        """The bounded working set's budget for this request, or WireError (400)."""
        try:
            return self.config.prompt_budget(chat.role, chat.part_budgets)
        except InputError as error:
            raise WireError(400, str(error), param="staffstore.budgets") from None

    async def _upstream_body(
        self, turn: _Turn, chat: ChatRequest
    ) -> tuple[dict[str, Any], WorkingSetMode]:
        """What goes upstream: the client's body, or in bounded mode its working set."""
        if chat.working_set != "bounded" or chat.turn is None:
            return chat.body, "forward"
        owner = turn.caller.owner
        # The session's extractive story kept current, as `ask` keeps it (mouth.py); with the
        # store locked, the story as it was: the turn need not wait for it.
        with contextlib.suppress(StoreBusyError):
            await self.writer.run(lambda: refresh_story(self.store, owner, chat.session))
        working_set = await build_working_set(
            self.store,
            Turn(owner=turn.caller.owner, text=chat.turn, session=chat.session, agent=chat.agent),
            self._prompt_budget(chat),
            system=chat.system or DEFAULT_SYSTEM,
            count=token_counter(chat.model),
        )
        messages = [message.model_dump() for message in working_set.messages]
        turn.prompt_parts, turn.recalled = working_set.part_tokens, working_set.vault_message_ids
        return {**chat.body, "messages": messages}, "bounded"

    async def _forward_miss(
        self,
        turn: _Turn,
        chat: ChatRequest,
        decision: Decision,
        body: dict[str, Any],
        mode: WorkingSetMode,
    ) -> Response:
        try:
            payload, reply = await self.upstream.complete(body)
        except UpstreamError as error:
            return await self._failed(turn, chat, decision, error, mode)
        except BaseException as failure:
            await self._broken(turn, chat, decision, failure)
            raise
        receipt = turn.receipt(
            outcome="miss", reason=decision.reason, status="ok", model=reply.model or chat.model,
            prompt_tokens=reply.prompt_tokens, completion_tokens=reply.completion_tokens,
            cost_usd=reply.cost_usd, inference_avoided=False, inference_attempted=True,
            answer=reply.text,
        )  # fmt: skip
        choices = payload.get("choices")
        single = isinstance(choices, list) and len(choices) == 1
        kept = _keepable(turn, chat, receipt, reply.text, reply.finish_reason, single)
        kept = self._with_prompt(chat, kept)
        await self._record(turn, receipt, turn.exchange(reply.text), kept)
        headers = self._turn_headers(turn, "miss", decision.reason, mode)
        # The payload is the provider's: rendered so that what it holds cannot fail it.
        return Response(json_bytes(payload), media_type="application/json", headers=headers)

    async def _relay_miss(
        self,
        turn: _Turn,
        chat: ChatRequest,
        decision: Decision,
        body: dict[str, Any],
        mode: WorkingSetMode,
    ) -> Response:
        # Usage is asked for whatever the client asked, for the receipt; the relay takes the
        # usage chunk out again for a client that did not ask for it.
        options = body.get("stream_options")
        options = {**(options if isinstance(options, dict) else {}), "include_usage": True}
        stream = self.upstream.stream({**body, "stream_options": options})
        try:
            await stream.__aenter__()
        except UpstreamError as error:
            return await self._failed(turn, chat, decision, error, mode)
        except BaseException as failure:
            await self._broken(turn, chat, decision, failure)
            raise
        n = body.get("n")
        single = not isinstance(n, int) or n <= 1

        async def on_end(result: StreamResult) -> bytes | None:
            reply = result.reply
            fields: dict[str, Any] = {
                "outcome": "miss", "reason": decision.reason, "model": reply.model or chat.model,
                "prompt_tokens": reply.prompt_tokens, "completion_tokens": reply.completion_tokens,
                "cost_usd": reply.cost_usd, "inference_avoided": False,
                "inference_attempted": True,
            }  # fmt: skip
            if result.end == "done":
                receipt = turn.receipt(status="ok", answer=reply.text, **fields)
                kept = _keepable(turn, chat, receipt, reply.text, reply.finish_reason, single)
                kept = self._with_prompt(chat, kept)
                await self._record(turn, receipt, turn.exchange(reply.text), kept)
                return None
            error = result.error
            status = "cancelled" if result.end == "cancelled" else _status_of(error)
            message = self._scrub(str(error)) if error is not None else "the client disconnected"
            await self._record(turn, turn.receipt(status=status, error=message, **fields))
            if error is None:
                return None
            status_code, error_type, code, _ = upstream_failure(error)
            shown = self.tenant_message(error)
            return sse_event(
                error_body(shown, error_type, code=code or status_code_name(status_code))
            )

        headers = self._turn_headers(turn, "miss", decision.reason, mode)
        relayed = RelayedEvents(aiter(stream), lambda: stream.reply, stream.aclose)
        return RelayResponse(
            relayed, on_end=on_end, include_usage=chat.include_usage, headers=headers
        )

    async def _failed(
        self,
        turn: _Turn,
        chat: ChatRequest,
        decision: Decision,
        error: UpstreamError,
        mode: WorkingSetMode,
    ) -> Response:
        """Record a failed upstream call and answer with its error in OpenAI's shape."""
        receipt = turn.receipt(
            outcome="miss", reason=decision.reason, status=_status_of(error), model=chat.model,
            inference_avoided=False, inference_attempted=error.attempted,
            error=self._scrub(str(error)),
        )  # fmt: skip
        await self._record(turn, receipt)
        headers = self._turn_headers(turn, "miss", decision.reason, mode)
        return self.upstream_error_response(error, headers)

    async def _broken(
        self, turn: _Turn, chat: ChatRequest, decision: Decision, failure: BaseException
    ) -> None:
        """Record a call that ended in neither an answer nor an upstream error: a client that
        left (cancelled) or a bug. It may have been sent, so it counts as an attempt."""
        cancelled = isinstance(failure, asyncio.CancelledError)
        receipt = turn.receipt(
            outcome="miss", reason=decision.reason, model=chat.model,
            status="cancelled" if cancelled else "error",
            inference_avoided=False, inference_attempted=True,
            error=None if cancelled else f"the upstream call failed ({type(failure).__name__})",
        )  # fmt: skip
        await asyncio.shield(self._record(turn, receipt))

    def _turn_headers(
        self, turn: _Turn, outcome: str, reason: str, mode: WorkingSetMode | None = None
    ) -> dict[str, str]:
        headers = {H_OUTCOME: outcome, H_REASON: reason, H_RECEIPT: turn.receipt_id}
        if turn.chat is not None:
            headers[H_SESSION] = turn.chat.session
        if mode is not None:
            headers[H_WORKING_SET] = mode
        return headers

    # -- the other endpoints -------------------------------------------------------------------

    async def list_models(self, request: Request) -> Response:
        self.authenticate(request)
        cached = self._models
        if cached is None or time.monotonic() - cached[0] >= self.config.models_ttl:
            try:
                payload = await self.upstream.models()
            except UpstreamError as error:
                return self.upstream_error_response(error)
            cached = self._models = (time.monotonic(), payload)
        return JSONResponse(cached[1])

    async def ledger(self, request: Request) -> Response:
        owner = self.authenticate(request).owner
        totals = await self.store.ledger(owner)
        jobs = await self.store.job_ledger(owner)
        return JSONResponse(
            {
                "object": "staffstore.ledger",
                "owner": owner,
                **totals.model_dump(),
                "avoidance": totals.avoidance,
                "jobs": {**jobs.model_dump(), "jobs_avoided": jobs.jobs_avoided},
            }
        )

    async def add_claim(self, request: Request) -> Response:
        caller = self.authenticate(request)
        if not caller.admin:
            raise WireError(
                403, "storing claims needs an admin key", error_type="permission_error",
                code="admin_required",
            )  # fmt: skip
        given = read_json(await self.read_body(request))
        if not isinstance(given, dict):
            raise WireError(400, "the request body must be a JSON object", code="invalid_json")
        named = given.get("owner", caller.owner)
        if named != caller.owner:
            # An admin key is its owner's: it never writes, promotes or reads another's data.
            raise WireError(
                400, "an admin key stores claims for its own owner only: leave out owner",
                param="owner", code="another_owner",
            )  # fmt: skip
        owner = caller.owner
        try:
            if "receipt_id" in given:
                body = PromoteBody.model_validate(given)
                fields = body.model_dump(exclude={"receipt_id", "owner"})
                claim = await self.writer.run(
                    lambda: promote_receipt(self.store, owner, body.receipt_id, **fields)
                )
            else:
                new = NewClaim.model_validate({**given, "owner": owner})
                claim = await self.writer.run(lambda: self.store.ensure_claim(new))
        except ValidationError as error:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in error.errors()
            )
            raise WireError(400, f"invalid claim: {problems}") from None
        except NotFoundError as error:
            raise WireError(404, str(error), error_type="not_found_error") from None
        except InputError as error:
            raise WireError(400, str(error)) from None
        except StoreBusyError:
            problem = "the store is busy (locked by another process); try again shortly"
            raise WireError(503, problem, error_type="server_error", code="store_busy") from None
        return JSONResponse(
            {"object": "staffstore.claim", **claim.model_dump(mode="json")}, status_code=201
        )

    async def healthz(self, request: Request) -> Response:
        return JSONResponse({"status": "ok", "upstream_key": bool(self.config.upstream_key)})

    async def metrics_text(self, request: Request) -> Response:
        """Every owner's totals: only for the metrics key, never for a tenant's."""
        digest = self.config.metrics_key_sha256
        if digest is None:
            raise WireError(
                404, "metrics are off: configure a metrics key (metrics_key_sha256)",
                error_type="not_found_error", code="metrics_off",
            )  # fmt: skip
        key = _bearer(request.headers.get("authorization"))
        if key is None or not hmac.compare_digest(hash_key(key), digest):
            raise WireError(
                401, "GET /metrics needs the metrics key (Authorization: Bearer KEY)",
                error_type="authentication_error", code="invalid_api_key",
            )  # fmt: skip
        return Response(self.metrics.render(), media_type=CONTENT_TYPE)

    # -- errors --------------------------------------------------------------------------------

    def _scrub(self, text: str, *more: str) -> str:
        """Remove every key this process knows from a message (the upstream client does too)."""
        for secret in [*self._secrets, *more]:
            if secret:
                text = text.replace(secret, _REDACTED)
        return text

    def tenant_message(self, error: UpstreamError) -> str:
        """An upstream failure as a tenant may read it: what went wrong, not where the
        upstream is (its URL, host and port are the operator's business) nor any secret."""
        if isinstance(error, MissingApiKeyError):
            return "the proxy has no upstream API key configured; nothing was sent"
        if isinstance(error, UpstreamConnectError):
            return "the upstream model endpoint could not be connected to; nothing was sent"
        if isinstance(error, UpstreamTimeoutError):
            return f"the upstream model endpoint did not answer within {self.config.timeout:g}s"
        if isinstance(error, UpstreamUnreachableError):
            return "the connection to the upstream model endpoint failed"
        text = self._scrub(str(error))
        for url in self._upstream_urls:
            text = text.replace(url, "upstream")
        return text

    def error_response(
        self, problem: WireError, headers: dict[str, str] | None = None
    ) -> JSONResponse:
        body = error_body(
            self._scrub(problem.message), problem.error_type, param=problem.param, code=problem.code
        )
        return JSONResponse(body, status_code=problem.status, headers=headers)

    def upstream_error_response(
        self, error: UpstreamError, headers: dict[str, str] | None = None
    ) -> JSONResponse:
        status, error_type, code, retry = upstream_failure(error)
        all_headers = dict(headers or {})
        if retry is not None:
            all_headers[H_SHOULD_RETRY] = retry
        body = error_body(self.tenant_message(error), error_type, code=code)
        return JSONResponse(body, status_code=status, headers=all_headers)

    async def on_wire_error(self, request: Request, exc: Exception) -> Response:
        return self.error_response(cast(WireError, exc))

    async def on_http_error(self, request: Request, exc: Exception) -> Response:
        error = cast(HTTPException, exc)
        error_type = STATUS_TYPES.get(error.status_code, "invalid_request_error")
        body = error_body(str(error.detail), error_type, code=status_code_name(error.status_code))
        return JSONResponse(body, status_code=error.status_code, headers=error.headers)

    async def on_crash(self, request: Request, exc: Exception) -> Response:
        # The exception may hold a request and so a key: say nothing about it here.
        body = error_body("internal error in staffstore", "server_error", code="internal_error")
        return JSONResponse(body, status_code=500)


def _running(part: T | None) -> T:
    """A part the lifespan opens (store, upstream client, writer), or an error outside it."""
    if part is None:
        raise RuntimeError("the proxy is not running (its lifespan has not started)")
    return part


def _bearer(value: str | None) -> str | None:
    scheme, _, key = (value or "").partition(" ")
    return (key.strip() or None) if scheme.lower() == "bearer" else None


def _too_large(limit: int) -> WireError:
    return WireError(413, f"the request body is larger than {limit} bytes", code="body_too_large")


def _status_of(error: UpstreamError | None) -> ReceiptStatus:
    return cast(ReceiptStatus, error.status if error is not None else "error")


def _exact_repeat(kept: KeptAnswer) -> Decision:
    return Decision(outcome="hit", reason="exact_repeat", answer=kept.answer)


#: Misses of the claims' gate after which the kept answers are not read: the same turn would
#: miss among them for the same reason.
_NO_REUSE_AFTER = frozenset({"empty", "too_long", "follow_up"})


#: What the store answers a request with: the decision, the kept answer it serves (if one) and
#: the paid call whose answer it serves (if known).
Answer = tuple[Decision, KeptAnswer | None, PaidOrigin | None]


@dataclass(frozen=True)
class _ToScore:
    """A request's lookups, read, with the second look still to score, which reads nothing
    more: the claims' candidates (or their miss) and, for a context-free request, the kept
    prompts a reworded question may reuse."""

    claims: Candidates | Decision
    kept: KeptCandidates | None

    def decide(self) -> tuple[Decision, KeptAnswer | None]:
        """The decision over the claims, else over the kept prompts; a miss keeps the claims'
        reason."""
        decision = self.claims if isinstance(self.claims, Decision) else self.claims.decide()
        if decision.hit or self.kept is None or decision.reason in _NO_REUSE_AFTER:
            return decision, None
        reused, found = self.kept.decide()
        return (reused, found) if found is not None else (decision, None)


def _answer_from_store(
    store: SyncStore,
    owner: str,
    chat: ChatRequest,
    gate_budget: float | None = None,
    paraphrase_reuse: bool = True,
) -> Answer | _ToScore:
    """A kept answer, else the gate's decision over the claims, else (a context-free request)
    over the kept answers asked under its context; on a hit, the paid call whose answer it
    serves (its cost prices what the hit saved). Where the strict test does not settle it,
    what the second look scores (_ToScore). It only reads (StaffStore.run_read)."""
    kept = kept_answer_for(store, owner, chat)
    if kept is not None:
        return _exact_repeat(kept), kept, kept.origin
    if chat.claims_refused is not None or chat.turn is None:
        return Decision(outcome="miss", reason=chat.claims_refused or "not_text"), None, None
    turn = Turn(owner=owner, text=chat.turn, gate_budget=gate_budget)
    claims = look_up(store, turn)
    if isinstance(claims, Decision) and claims.hit and claims.claim_id is not None:
        return claims, None, store.claim_origin(owner, claims.claim_id)
    settled = isinstance(claims, Decision) and claims.reason in _NO_REUSE_AFTER
    reusable = chat.context_key is not None and not chat.controls.no_paraphrase
    prompts = None
    if paraphrase_reuse and reusable and not settled:
        assert chat.context_key is not None
        controls = chat.controls
        found = kept_candidates(
            store, turn, controls.namespace, chat.context_key, max_age=controls.max_age
        )
        prompts = found if isinstance(found, KeptCandidates) else None
    if isinstance(claims, Decision) and prompts is None:
        return claims, None, None
    return _ToScore(claims, prompts)


def _utf8_size(text: str | None) -> int:
    return len(text.encode("utf-8", "replace")) if text else 0


def _text_bytes(record: TurnRecord) -> int:
    """The bytes of text a turn record adds to its owner's store."""
    receipt = record.receipt
    size = sum(_utf8_size(t) for t in (receipt.question, receipt.answer, receipt.error))
    size += sum(_utf8_size(content) for _, content in record.messages)
    kept = record.kept
    if kept is not None:
        size += _utf8_size(kept.answer) + (_utf8_size(kept.prompt.text) if kept.prompt else 0)
    return size


def _keepable(
    turn: _Turn,
    chat: ChatRequest,
    receipt: Receipt,
    text: str,
    finish_reason: str | None,
    single_choice: bool,
) -> KeptAnswer | None:
    """The answer to keep for exact repeats: a whole text answer, unless the client said no."""
    if chat.controls.no_store or finish_reason != "stop" or not text or not single_choice:
        return None
    now = utcnow()
    ttl = chat.controls.ttl  # bounded by read_cache_controls, so the date cannot overflow
    return KeptAnswer(
        owner=turn.caller.owner,
        namespace=chat.controls.namespace,
        request_hash=chat.request_hash,
        receipt_id=receipt.id,
        model=receipt.model,
        answer=text,
        created_at=now,
        expires_at=now + timedelta(seconds=ttl) if ttl is not None else None,
    )


def create_app(
    config: ServeConfig,
    *,
    transport: httpx.AsyncBaseTransport | None = None,
    metrics: Metrics | None = None,
) -> Starlette:
    """The proxy as an ASGI application; `transport` replaces the network to the upstream."""
    proxy = Proxy(config, transport=transport, metrics=metrics)
    access_log = (
        AccessLogWriter(log_format=config.access_log_format, path=config.access_log_file)
        if config.access_log
        else None
    )
    jobs = JobEndpoints(config, lambda request: proxy.authenticate(request).owner, proxy.read_body)
    app = Starlette(
        routes=[
            Route("/v1/chat/completions", proxy.chat_completions, methods=["POST"]),
            Route("/v1/models", proxy.list_models, methods=["GET"]),
            Route("/v1/staffstore/ledger", proxy.ledger, methods=["GET"]),
            Route("/v1/staffstore/claims", proxy.add_claim, methods=["POST"]),
            Route("/v1/staffstore/jobs/dispatch", jobs.dispatch, methods=["POST"]),
            Route("/v1/staffstore/jobs/{job_id}", jobs.show, methods=["GET"]),
            Route("/healthz", proxy.healthz, methods=["GET"]),
            Route("/metrics", proxy.metrics_text, methods=["GET"]),
            # No key: the document describes shapes only, and holds no tenant's data.
            Route("/openapi.json", _openapi, methods=["GET"]),
            *StateRoutes(
                proxy,
                scope_key=config.state_key,
                config=StateConfig(handoff_max_bytes=config.handoff_max_bytes),
            ).routes(),
            *MemoryRoutes(proxy, scrubber=Scrubber.from_env(config.secret_env)).routes(),
        ],
        exception_handlers={
            WireError: proxy.on_wire_error,
            HTTPException: proxy.on_http_error,
            Exception: proxy.on_crash,
        },
        lifespan=proxy.lifespan if access_log is None else _logged(proxy, access_log),
    )
    app.state.proxy = proxy
    app.add_middleware(RequestTiming, metrics=proxy.metrics, chat_route=_CHAT_ROUTE, routes=_ROUTES)
    if access_log is not None:
        # Added last, so outermost: its duration is the client's, middleware included.
        app.add_middleware(AccessLog, writer=access_log)
        proxy.metrics.access_log_dropped = lambda: access_log.dropped
    return app


async def _openapi(request: Request) -> Response:
    return JSONResponse(openapi_document(__version__))


def _logged(
    proxy: Proxy, writer: AccessLogWriter
) -> Callable[[Starlette], AbstractAsyncContextManager[None]]:
    """The proxy's lifespan with the access log's writer thread started first, stopped last."""

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        writer.start()
        try:
            async with proxy.lifespan(app):
                yield
        finally:
            writer.stop()

    return lifespan
