"""The proxy's one writer: every database write goes through it, turns in group commits.

The store has one SQLite connection, shared by every request in flight; a transaction opened
by one request would take in another's statements, and a second BEGIN would fail. So one task
writes, in arrival order. Turn records that queue up while a commit runs are written together
in the next one (one statement per table), and each request waits until its own turn is
committed before it answers, so a receipt named in a response header is already on disk.
A batch that fails is retried record by record, so one bad record does not take others with it.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from ..store import StaffStore
from ..store.sync_store import TurnRecord

#: The most turns one commit takes; the rest wait for the next.
MAX_BATCH = 256


@dataclass
class _Job:
    """One queued write: a turn record (batched with its neighbours) or work run alone."""

    done: asyncio.Future[Any]
    record: TurnRecord | None = None
    work: Callable[[], Awaitable[Any]] | None = None


class Writer:
    """Serializes the writes to one store. `start` it in the event loop; `close` drains it."""

    def __init__(
        self, store: StaffStore, on_commit: Callable[[TurnRecord], None] | None = None
    ) -> None:
        self._store = store
        self._on_commit = on_commit
        self._jobs: deque[_Job] = deque()
        self._wake = asyncio.Event()
        self._closing = False
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run(), name="staffstore-writer")

    async def close(self) -> None:
        """Write everything queued so far, then stop."""
        self._closing = True
        self._wake.set()
        if self._task is not None:
            await self._task

    async def record(self, record: TurnRecord) -> str | None:
        """Write one turn; return its session id once it is committed.

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
        self._jobs.append(job)
        self._wake.set()
        # Shielded: a client that leaves must not take its receipt with it.
        return await asyncio.shield(job.done)

    async def _run(self) -> None:
        while True:
            while not self._jobs:
                if self._closing:
                    return
                self._wake.clear()
                await self._wake.wait()
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
            await self._commit(batch)

    async def _commit(self, batch: list[_Job]) -> None:
        try:
            session_ids = await self._store.record_turns(
                [job.record for job in batch if job.record is not None]
            )
        except Exception as error:
            if len(batch) == 1:
                batch[0].done.set_exception(error)
            else:  # one bad record must not sink the others
                for job in batch:
                    await self._commit([job])
            return
        for job, session_id in zip(batch, session_ids, strict=True):
            if self._on_commit is not None and job.record is not None:
                self._on_commit(job.record)
            job.done.set_result(session_id)
