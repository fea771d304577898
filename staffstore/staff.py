"""Staff: staffstore as plain calls, for scripts and notebooks.

The library is async; Staff owns a StaffStore and an upstream client on an event loop of its
own, in a background thread, and waits for each call there. So it works where `asyncio.run`
cannot: in a Jupyter cell, or any code already running inside an event loop. It makes the same
library calls as the command line (`query_first`, `ensure_mouth` with kept answers, the
store's claims, receipts and ledger), so a turn asked here and one asked with `staffstore ask`
serve each other's exact repeats.

    with Staff("staffstore.db", model="openai/gpt-4o-mini") as staff:
        staff.add_claim("acme", "What port does the api listen on?", "8080", source="job")
        print(staff.query("acme", "which port does the api listen on?").outcome)
        result = staff.ask("acme", "Is the ledger replay deterministic?")
        print(result.answer, result.source, staff.ledger("acme").avoidance)
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Coroutine, Iterable
from datetime import datetime
from pathlib import Path
from types import TracebackType
from typing import Any, Self, TypeVar

import httpx

from .gate import query_first
from .models import (
    Claim,
    ClaimSource,
    Decision,
    Ledger,
    NewClaim,
    Outcome,
    Receipt,
    Turn,
    TurnResult,
)
from .mouth import CachePolicy, ensure_mouth
from .settings import load_settings
from .store import StaffStore
from .store.receipt_queries import Period
from .upstream import OpenRouter
from .working_set import DEFAULT_BUDGET, Budgets

T = TypeVar("T")


class Staff:
    """A synchronous staffstore: query, ask, add claims, read receipts and the ledger.

    Open it as a context manager (or call `close()`): it holds a database connection, an
    HTTP client and a thread. Settings it is not given come from the same place as the
    command line's (`$STAFFSTORE_*`, then the config file): the model, the upstream URL and
    the environment variable holding the API key.

    Calls are taken one at a time, in the order they come, from any thread::

        with Staff("staffstore.db") as staff:
            decision = staff.query("acme", "what did kernel find about ledger replay?")
            if not decision.hit:
                print(staff.ask("acme", "what did kernel find about ledger replay?").answer)
    """

    def __init__(
        self,
        db: str | Path,
        *,
        model: str | None = None,
        upstream: str | None = None,
        api_key: str | None = None,
        timeout: float = 60.0,
        max_retries: int = 2,
        budget: int | Budgets = DEFAULT_BUDGET,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        """Open the store at `db` (created if missing) and the upstream client.

        `api_key` defaults to the settings' key variable ($OPENROUTER_API_KEY); without one,
        a miss is recorded as not attempted, as `staffstore ask` records it. `transport`
        replaces the network to the upstream (tests: `FakeOpenRouter().transport()`).
        `budget`: the prompt's tokens on a miss, or Budgets per part (`ROLE_BUDGETS["main"]`).
        """
        settings = load_settings()
        self.model = model or settings.model
        self.budget = budget
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="staffstore-staff", daemon=True
        )
        self._thread.start()
        # One call at a time: the store's one connection must not take in another turn's
        # statements in the middle of a transaction.
        self._lock = threading.Lock()
        self._closed = False
        try:
            self._store = self._run(StaffStore.connect(db))
        except BaseException:
            self._stop_loop()
            raise
        self._chat = OpenRouter(
            # "" rather than None: OpenRouter would read its own variable on None.
            api_key=api_key
            if api_key is not None
            else os.environ.get(settings.upstream_key_env, ""),
            base_url=upstream or settings.upstream,
            model=self.model,
            title="staffstore",
            timeout=timeout,
            max_retries=max_retries,
            transport=transport,
        )

    # -- the calls ---------------------------------------------------------------------------

    def query(
        self,
        owner: str,
        text: str,
        *,
        session: str | None = None,
        agent: str | None = None,
        repository: str | None = None,
        revision: str | None = None,
        gate_budget: float | None = None,
    ) -> Decision:
        """The gate's decision for a question, with no model call (`staffstore query`)."""
        turn = Turn(
            owner=owner, text=text, session=session, agent=agent, repository=repository,
            revision=revision, gate_budget=gate_budget,
        )  # fmt: skip
        return self._run(query_first(self._store, turn))

    def ask(
        self,
        owner: str,
        text: str,
        *,
        session: str | None = None,
        agent: str | None = None,
        repository: str | None = None,
        revision: str | None = None,
        gate_budget: float | None = None,
        refresh: bool = False,
        no_cache: bool = False,
        ttl: float | None = None,
        max_age: float | None = None,
        no_paraphrase: bool = False,
    ) -> TurnResult:
        """Answer a question as `staffstore ask` does: a kept answer to the same question,
        else a claim, else a kept answer to a reworded form of it (a context-free question
        only), else one model call, whose finished answer is kept; always a receipt.

        `refresh` asks the model whatever is stored and keeps the new answer; `no_cache`
        neither serves from the store nor keeps; `ttl` and `max_age` (seconds) bound how long
        a kept answer serves; `no_paraphrase` serves kept answers to exact repeats only.
        `result.source` says where the answer came from. A failed call is a result with
        `answer` None and the error in `result.receipt`, not an exception.
        """
        turn = Turn(
            owner=owner, text=text, session=session, agent=agent, repository=repository,
            revision=revision, gate_budget=gate_budget,
        )  # fmt: skip
        cache = CachePolicy.from_flags(
            refresh=refresh, no_cache=no_cache, ttl=ttl, max_age=max_age,
            no_paraphrase=no_paraphrase,
        )  # fmt: skip
        return self._run(
            ensure_mouth(
                self._store, turn, self._chat, model=self.model, budget=self.budget, cache=cache
            )
        )

    def add_claim(
        self,
        owner: str,
        question: str,
        answer: str,
        *,
        source: ClaimSource = "manual",
        agent: str | None = None,
        job_id: str | None = None,
        repository: str | None = None,
        profile: str | None = None,
        revision: str | None = None,
        expires_at: datetime | None = None,
    ) -> Claim:
        """Store one verified finding (`staffstore claims add`); storing it again returns the
        stored claim. A bad field is a pydantic ValidationError, and nothing is stored."""
        claim = NewClaim(
            owner=owner, question=question, answer=answer, source=source, agent=agent,
            job_id=job_id, repository=repository, profile=profile, revision=revision,
            expires_at=expires_at,
        )  # fmt: skip
        return self._run(self._store.ensure_claim(claim))

    def add_claims(self, claims: Iterable[NewClaim]) -> list[tuple[Claim, bool]]:
        """Store many claims in one transaction; each comes back with whether it was new."""
        return self._run(self._store.ensure_claims(list(claims)))

    def receipts(
        self,
        owner: str | None,
        *,
        limit: int = 20,
        since: datetime | None = None,
        until: datetime | None = None,
        session: str | None = None,
        outcome: Outcome | None = None,
        reason: str | None = None,
    ) -> list[Receipt]:
        """The most recent receipts, newest first, filtered as `staffstore receipts` does
        (owner None: every owner's)."""
        listed = self._store.list_receipts(
            owner, limit=limit, since=since, until=until, session=session, outcome=outcome,
            reason=reason,
        )  # fmt: skip
        return self._run(listed)

    def ledger(self, owner: str | None = None) -> Ledger:
        """The totals `staffstore ledger` prints: turns, hits, avoided and attempted calls,
        known tokens and cost, and what is unknown."""
        return self._run(self._store.ledger(owner))

    def ledger_by(
        self,
        period: Period,
        owner: str | None = None,
        *,
        since: datetime | None = None,
        until: datetime | None = None,
    ) -> list[tuple[str, Ledger]]:
        """The ledger day by day or hour by hour (`staffstore ledger --by`), oldest first,
        over the receipts started from `since` (inclusive) to `until` (exclusive)."""
        return self._run(self._store.ledger_by(period, owner, since=since, until=until))

    # -- lifetime ----------------------------------------------------------------------------

    def close(self) -> None:
        """Close the upstream client and the store, and stop the thread; a second call does
        nothing."""
        if self._closed:
            return
        try:
            self._run(self._chat.aclose())
            self._run(self._store.close())
        finally:
            self._closed = True
            self._stop_loop()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def _run(self, work: Coroutine[Any, Any, T]) -> T:
        """Run `work` on the background loop and wait for its result (or its exception)."""
        if self._closed:
            work.close()
            raise RuntimeError("this Staff is closed")
        if threading.current_thread() is self._thread:
            work.close()
            raise RuntimeError("Staff's calls cannot be made from its own loop's thread")
        with self._lock:
            return asyncio.run_coroutine_threadsafe(work, self._loop).result()

    def _stop_loop(self) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join()
        self._loop.close()


__all__ = ["Staff"]
