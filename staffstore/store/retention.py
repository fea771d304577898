"""Forgetting: an owner's receipts by age, kept answers by id or age, and the retention of
kept answers the operator sets for the whole store.

Mixed into SyncStore (SyncRetention) and StaffStore (AsyncRetention). Every call that names
rows takes their owner, and no owner's call touches another's. Deleting receipts leaves every
estimate already made as it was: a hit's receipt carries its own estimate of the cost it
avoided, and kept answers and promoted claims keep what their paid call cost (migration 7), so
the ledger counts what remains and nothing in it breaks.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, TypeVar

from .database import Database
from .rows import datetime_at, datetime_of, epoch_of, now_epoch

T = TypeVar("T")

_KEPT_COLUMNS = (
    "k.receipt_id, k.namespace, k.model, k.answer, k.created_at, k.expires_at, k.cost_usd, p.prompt"
)


def retention_cutoff(days: float, now: datetime) -> datetime:
    """The moment before which a kept answer is past a retention of `days` days."""
    return now - timedelta(days=days)


class SyncRetention:
    """The deletes, as plain calls on the store's connection (mixed into SyncStore)."""

    db: Database

    def fetchall(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        raise NotImplementedError  # SyncStore's

    def prune_receipts(self, owner: str, before: datetime) -> int:
        """Delete the owner's receipts started before `before`; return how many went."""
        return self.db.execute(
            "DELETE FROM receipts WHERE owner = ? AND started_at < ?", (owner, epoch_of(before))
        )

    def list_kept_answers(self, owner: str, *, limit: int = 20) -> list[KeptRow]:
        """The owner's kept answers, the most recently kept first."""
        # The prompt, where the request was context-free and kept one (kept_prompts.py).
        rows = self.fetchall(
            f"SELECT {_KEPT_COLUMNS} FROM kept_answers k LEFT JOIN kept_prompts p "
            "ON p.owner = k.owner AND p.namespace = k.namespace "
            "AND p.request_hash = k.request_hash "
            "WHERE k.owner = ? ORDER BY k.created_at DESC, k.receipt_id LIMIT ?",
            (owner, limit),
        )
        return [_kept_row(owner, row) for row in rows]

    def forget_kept_answers(
        self, owner: str, *, receipt_ids: Sequence[str] = (), before: datetime | None = None
    ) -> list[str]:
        """Delete the owner's kept answers named by their receipt ids, and those kept before
        `before`; return the receipt ids of the answers deleted."""
        clauses: list[str] = []
        params: list[Any] = [owner]
        if receipt_ids:
            clauses.append(f"receipt_id IN ({', '.join('?' for _ in receipt_ids)})")
            params += receipt_ids
        if before is not None:
            clauses.append("created_at < ?")
            params.append(epoch_of(before))
        if not clauses:
            return []
        rows = self.db.fetchall(
            f"DELETE FROM kept_answers WHERE owner = ? AND ({' OR '.join(clauses)}) "
            "RETURNING receipt_id",
            params,
        )
        return [str(row[0]) for row in rows]

    def prune_kept_answers(
        self,
        *,
        before: datetime | None = None,
        owner: str | None = None,
        now: datetime | None = None,
    ) -> int:
        """Delete kept answers that can no longer serve (expired by `now`) and, with `before`,
        those kept before it; of one owner, or of every owner when `owner` is None (the
        operator's retention). Return how many went."""
        sql = "DELETE FROM kept_answers WHERE (expires_at <= ?"
        params: list[Any] = [now_epoch(now)]
        if before is not None:
            sql += " OR created_at < ?"
            params.append(epoch_of(before))
        sql += ")"
        if owner is not None:
            sql += " AND owner = ?"
            params.append(owner)
        return self.db.execute(sql, params)


@dataclass(frozen=True)
class KeptRow:
    """A kept answer as `kept list` shows it: the receipt that paid for it (its id), its
    namespace and model, when it was kept and expires, what its call cost, and the prompt a
    reworded question is compared with (None: the request was not context-free, so only an
    exact repeat of it is served)."""

    owner: str
    receipt_id: str
    namespace: str
    model: str | None
    answer: str
    kept_at: datetime
    expires_at: datetime | None
    cost_usd: float | None
    prompt: str | None = None


def _kept_row(owner: str, row: Sequence[Any]) -> KeptRow:
    receipt_id, namespace, model, answer, created_at, expires_at, cost_usd, prompt = row
    return KeptRow(
        owner, receipt_id, namespace, model, answer, datetime_at(created_at),
        datetime_of(expires_at), cost_usd, prompt,
    )  # fmt: skip


class AsyncRetention:
    """The deletes of StaffStore (mixed into it): each is one trip to the database thread."""

    async def run_sync(self, work: Callable[[SyncRetention], T]) -> T:
        raise NotImplementedError  # StaffStore's, which hands `work` a SyncStore

    async def _writing(self, work: Callable[[SyncRetention], T]) -> T:
        return await self.run_sync(work)  # StoreBusyError past the lock timeout (database.py)

    async def prune_receipts(self, owner: str, before: datetime) -> int:
        """Delete the owner's receipts started before `before`; return how many went. The
        ledger then counts the receipts that remain."""
        return await self._writing(lambda sync: sync.prune_receipts(owner, before))

    async def list_kept_answers(self, owner: str, *, limit: int = 20) -> list[KeptRow]:
        """The owner's kept answers, the most recently kept first."""
        return await self.run_sync(lambda sync: sync.list_kept_answers(owner, limit=limit))

    async def forget_kept_answers(
        self, owner: str, *, receipt_ids: Sequence[str] = (), before: datetime | None = None
    ) -> list[str]:
        """Delete the owner's kept answers named by their receipt ids, and those kept before
        `before`; return the receipt ids of the answers deleted. The next exact repeat of a
        forgotten answer's request is a miss, paid for again."""
        return await self._writing(
            lambda sync: sync.forget_kept_answers(owner, receipt_ids=receipt_ids, before=before)
        )

    async def prune_kept_answers(
        self,
        *,
        before: datetime | None = None,
        owner: str | None = None,
        now: datetime | None = None,
    ) -> int:
        """Delete expired kept answers and those kept before `before` (see
        SyncRetention.prune_kept_answers); return how many went."""
        return await self._writing(
            lambda sync: sync.prune_kept_answers(before=before, owner=owner, now=now)
        )
