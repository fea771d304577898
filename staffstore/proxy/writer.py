"""The proxy's one writer: every database write goes through it, turns in group commits.

The store has one writing SQLite connection, shared by every request in flight (the lookups
have read connections of their own); a transaction opened by one request would take in
another's statements, and a second BEGIN would fail. So one task writes. Turn records that queue
up while a commit runs are written together in the next one (one statement per table), and each
request waits until its own turn is committed before it answers, so a receipt named in a
response header is already on disk. A turn answered without a model call (a hit, a request
refused before it paid) goes ahead of the paid turns queued beside it, in a commit of its own:
its client waits for nothing else, while a paid turn's client has already waited out a model
call, which a few more milliseconds hardly change. The rest go in arrival order. A batch that
fails is retried record by record, so one bad record does not take others with it; a record the
store cannot hold as it is (text SQLite cannot encode) is written with its text made storable,
else as a bare receipt: a paid call never goes without one.

When another process holds the write lock past the store's lock timeout (a manual session, a
VACUUM, a long import), the turns are not lost and the client is not kept waiting: they go to
a backlog in memory, the request answers at once, and the writer retries the backlog with a
short lock wait until it lands. The backlog is bounded: `saturated` tells the proxy to refuse
new requests (before they pay for anything) while it is full.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Awaitable, Callable
from contextlib import suppress
from dataclasses import dataclass, replace
from itertools import islice
from typing import Any

from ..errors import StoreBusyError
from ..store import StaffStore
from ..store.sync_store import KeptAnswer, TurnRecord

#: The most turns one commit takes; the rest wait for the next.
MAX_BATCH = 256
#: The most turns the backlog holds while the store is locked.
MAX_BACKLOG = 10_000
#: Seconds between two tries at writing the backlog, and how long each waits for the lock:
#: short, because every other call on the store's writer (leases, sessions, state) waits
#: behind a write that waits.
RETRY_EVERY = 0.25
RETRY_LOCK_WAIT = 0.05


@dataclass
class _Job:
    """One queued write: a turn record (batched with its neighbours) or work run alone."""

    done: asyncio.Future[Any]
    record: TurnRecord | None = None
    work: Callable[[], Awaitable[Any]] | None = None


@dataclass(frozen=True)
class BacklogCounts:
    """The backlog of turns waiting for the store's write lock, for /metrics."""

    pending: int
    deferred: int  # turns that went to the backlog since start
    landed: int  # backlog turns written since
    lost: int  # turns that could not be written at all (the store refused even a bare receipt)


class Writer:
    """Serializes the writes to one store. `start` it in the event loop; `close` drains it."""

    def __init__(
        self,
        store: StaffStore,
        on_commit: Callable[[TurnRecord], None] | None = None,
        *,
        max_backlog: int = MAX_BACKLOG,
        retry_every: float = RETRY_EVERY,
    ) -> None:
        self._store = store
        self._on_commit = on_commit
        self._jobs: deque[_Job] = deque()
        # Turns that made no model call: committed before everything in `_jobs`.
        self._quick: deque[_Job] = deque()
        self._wake = asyncio.Event()
        self._closing = False
        self._task: asyncio.Task[None] | None = None
        self._backlog: deque[TurnRecord] = deque()
        self._max_backlog = max_backlog
        self._retry_every = retry_every
        self._deferred = self._landed = self._lost = 0
        self._next_try = 0.0

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run(), name="staffstore-writer")

    async def close(self) -> None:
        """Write everything queued so far (the backlog too, if the lock is free), then stop."""
        self._closing = True
        self._wake.set()
        if self._task is not None:
            await self._task
        if self._backlog:  # a last try, with the store's full lock timeout
            await self._flush(lock_wait=None)

    @property
    def saturated(self) -> bool:
        """Whether the backlog is full: a new request should be refused before it pays."""
        return len(self._backlog) >= self._max_backlog

    def backlog(self) -> BacklogCounts:
        return BacklogCounts(len(self._backlog), self._deferred, self._landed, self._lost)

    async def record(self, record: TurnRecord) -> str | None:
        """Write one turn; return its session id once it is committed (None if it went to the
        backlog: it is written as soon as the store's lock is free).

        The write goes on even if the caller is cancelled meanwhile.
        """
        session_id: str | None = await self._submit(record=record)
        return session_id

    async def run(self, work: Callable[[], Awaitable[Any]]) -> Any:
        """Run other writing work (a session, a claim) alone, in its turn; return its result."""
        return await self._submit(work=work)

    async def _submit(
        self, record: TurnRecord | None = None, work: Callable[[], Awaitable[Any]] | None = None
    ) -> Any:
        if self._closing or self._task is None:
            raise RuntimeError("the writer is not running")
        job = _Job(asyncio.get_running_loop().create_future(), record, work)
        # Jumping the queue breaks no order a client can see: a request's own writes (its
        # session, its claim) were awaited before its turn is recorded, and the requests it
        # overtakes were in flight beside it. Behind a locked store it joins the same backlog.
        if record is not None and not record.receipt.inference_attempted:
            self._quick.append(job)
        else:
            self._jobs.append(job)
        self._wake.set()
        # Shielded: a client that leaves must not take its receipt with it.
        return await asyncio.shield(job.done)

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        quick_last = False
        while True:
            if self._backlog and loop.time() >= self._next_try:
                await self._flush(lock_wait=RETRY_LOCK_WAIT)
                self._next_try = loop.time() + self._retry_every
            # Quick turns first, but never two of their commits in a row while other work
            # waits: a steady stream of hits must not starve the paid turns.
            if self._quick and not (quick_last and self._jobs):
                await self._write(_take(self._quick))
                quick_last = True
                continue
            quick_last = False
            if not self._jobs:
                if self._closing:
                    return
                self._wake.clear()
                if self._backlog:
                    with suppress(TimeoutError):
                        await asyncio.wait_for(self._wake.wait(), self._next_try - loop.time())
                else:
                    await self._wake.wait()
                continue
            job = self._jobs.popleft()
            if job.work is not None:
                try:
                    job.done.set_result(await job.work())
                except Exception as error:
                    job.done.set_exception(error)
                continue
            batch = [job]
            while self._jobs and self._jobs[0].record is not None and len(batch) < MAX_BATCH:
                batch.append(self._jobs.popleft())
            await self._write(batch)

    async def _write(self, batch: list[_Job]) -> None:
        if self._backlog:  # the lock was taken a moment ago: keep the order, do not wait
            self._defer(batch)
        else:
            await self._commit(batch)

    def _defer(self, batch: list[_Job]) -> None:
        if not self._backlog:
            self._next_try = asyncio.get_running_loop().time() + self._retry_every
        for job in batch:
            assert job.record is not None
            self._backlog.append(job.record)
            self._deferred += 1
            job.done.set_result(None)

    async def _commit(self, batch: list[_Job]) -> None:
        records = [job.record for job in batch if job.record is not None]
        try:
            session_ids = await self._store.record_turns(records)
        except StoreBusyError:
            self._defer(batch)
            return
        except Exception as error:
            if len(batch) > 1:  # one bad record must not sink the others
                for job in batch:
                    await self._commit([job])
                return
            try:
                session_ids = [await self._salvage(records[0], error)]
            except StoreBusyError:
                self._defer(batch)
                return
            except Exception as still:
                self._lost += 1
                batch[0].done.set_exception(still)
                return
        for job, session_id in zip(batch, session_ids, strict=True):
            if self._on_commit is not None and job.record is not None:
                self._on_commit(job.record)
            job.done.set_result(session_id)

    async def _salvage(
        self, record: TurnRecord, error: Exception, *, lock_wait: float | None = None
    ) -> str | None:
        """Write a record the store refused: its text made storable, else a bare receipt."""
        storable = _storable_record(record)
        try:
            (session_id,) = await self._store.record_turns([storable], lock_wait=lock_wait)
            return session_id
        except StoreBusyError:
            raise
        except Exception:
            problem = f"the turn's text could not be stored ({type(error).__name__})"
            given = storable.receipt.error
            receipt = storable.receipt.model_copy(
                update={
                    "question": None,
                    "answer": None,
                    "error": f"{given}; {problem}" if given else problem,
                }
            )
            (session_id,) = await self._store.record_turns(
                [TurnRecord(receipt)], lock_wait=lock_wait
            )
            return session_id

    async def _flush(self, *, lock_wait: float | None) -> None:
        """Write the backlog, oldest first, until it is empty or the lock is still taken."""
        while self._backlog:
            batch = list(islice(self._backlog, MAX_BATCH))
            try:
                await self._store.record_turns(batch, lock_wait=lock_wait)
            except StoreBusyError:
                return
            except Exception:
                for record in batch:  # one at a time, each salvaged if it must be
                    try:
                        await self._store.record_turns([record], lock_wait=lock_wait)
                    except StoreBusyError:
                        return
                    except Exception as error:
                        try:
                            await self._salvage(record, error, lock_wait=lock_wait)
                        except StoreBusyError:
                            return
                        except Exception:
                            self._backlog.popleft()
                            self._lost += 1
                            continue
                    self._landed_one()
                continue
            for _ in batch:
                self._landed_one()

    def _landed_one(self) -> None:
        record = self._backlog.popleft()
        self._landed += 1
        if self._on_commit is not None:
            self._on_commit(record)


def _take(queue: deque[_Job]) -> list[_Job]:
    """The next batch of a queue that holds turn records only."""
    return [queue.popleft() for _ in range(min(len(queue), MAX_BATCH))]


def _storable(text: str | None) -> str | None:
    """Text SQLite can store: lone surrogates (valid in a Python str and in JSON's \\u escapes,
    not in UTF-8) become U+FFFD."""
    if text is None:
        return None
    return text.encode("utf-8", "surrogatepass").decode("utf-8", "replace")


def _storable_record(record: TurnRecord) -> TurnRecord:
    receipt = record.receipt.model_copy(
        update={name: _storable(getattr(record.receipt, name))
                for name in ("question", "answer", "error", "model", "reason")}
    )  # fmt: skip
    kept: KeptAnswer | None = None
    if record.kept is not None:
        kept = replace(record.kept, answer=_storable(record.kept.answer) or "")
    return TurnRecord(
        receipt,
        record.session_id,
        [(role, _storable(content) or "") for role, content in record.messages],
        kept,
        session_name=_storable(record.session_name),
        recalled=record.recalled,
    )
