"""Reading receipts back: filtered lists, a paged walk for exports, and the ledger's totals,
over everything or period by period (a day or an hour, in UTC).

Mixed into StaffStore (async_store.py). A request refused before the gate (status `rejected`)
is not a turn: the ledger counts it in `rejected` only. The cost avoided is an estimate each
hit's receipt carries (`avoided_cost_usd`: what the paid call whose answer it served cost), so
the ledger sums what the receipts that remain say, and a deleted receipt changes nothing else.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal, TypeVar

from ..models import Ledger, Outcome, Receipt
from .rows import RECEIPT_COLUMNS, count_where, epoch_of, row_to_receipt

T = TypeVar("T")

#: Ledger periods and the strftime format that names each one (UTC).
Period = Literal["day", "hour"]
PERIOD_FORMATS: dict[Period, str] = {"day": "%Y-%m-%d", "hour": "%Y-%m-%dT%H:00Z"}

_TURN = "status != 'rejected'"


_ATTEMPTED, _AVOIDED = "inference_attempted = 1", "inference_avoided = 1"
_LEDGER_SELECT = ", ".join(
    [
        count_where(_TURN),
        count_where("outcome = 'hit'"),
        count_where(f"outcome = 'miss' AND {_TURN}"),
        "coalesce(sum(inference_avoided), 0)",
        "coalesce(sum(inference_attempted), 0)",
        count_where(f"{_ATTEMPTED} AND status != 'ok'"),
        count_where(f"inference_avoided = 0 AND inference_attempted = 0 AND {_TURN}"),
        "coalesce(sum(prompt_tokens), 0)",
        "coalesce(sum(completion_tokens), 0)",
        "coalesce(sum(cost_usd), 0.0)",
        count_where(f"{_ATTEMPTED} AND (prompt_tokens IS NULL OR completion_tokens IS NULL)"),
        count_where(f"{_ATTEMPTED} AND cost_usd IS NULL"),
        count_where("status = 'rejected'"),
        f"sum(CASE WHEN {_AVOIDED} THEN avoided_cost_usd END)",
        count_where(f"{_AVOIDED} AND avoided_cost_usd IS NULL"),
    ]
)
_LEDGER_NAMES = (
    "turns", "hits", "misses", "avoided_calls", "attempted_calls", "failed_calls",
    "not_attempted", "prompt_tokens", "completion_tokens", "cost_usd",
    "unknown_usage_turns", "unknown_cost_turns", "rejected", "estimated_avoided_cost_usd",
    "unknown_avoided_cost_calls",
)  # fmt: skip
#: Receipts read per query by `iter_receipts`.
_PAGE = 1000


@dataclass(frozen=True)
class ReceiptFilter:
    """Which receipts to read; every field left None matches everything."""

    owner: str | None = None
    since: datetime | None = None  # started at or after
    until: datetime | None = None  # started before
    session: str | None = None  # the session's name
    outcome: Outcome | None = None
    reason: str | None = None

    def where(self) -> tuple[str, list[Any]]:
        """The SQL WHERE clause (or "") and its parameters."""
        clauses: list[str] = []
        params: list[Any] = []
        if self.owner is not None:
            clauses.append("owner = ?")
            params.append(self.owner)
        if self.since is not None:
            clauses.append("started_at >= ?")
            params.append(epoch_of(self.since))
        if self.until is not None:
            clauses.append("started_at < ?")
            params.append(epoch_of(self.until))
        if self.session is not None:
            inner = "SELECT id FROM sessions WHERE name = ?"
            params.append(self.session)
            if self.owner is not None:
                inner += " AND owner = ?"
                params.append(self.owner)
            clauses.append(f"session_id IN ({inner})")
        if self.outcome is not None:
            clauses.append("outcome = ?")
            params.append(self.outcome)
        if self.reason is not None:
            clauses.append("reason = ?")
            params.append(self.reason)
        return ("WHERE " + " AND ".join(clauses) if clauses else ""), params


def _ledger(row: Sequence[Any]) -> Ledger:
    totals = dict(zip(_LEDGER_NAMES, row, strict=True))
    # A sum of floats carries binary noise (0.30000000000000004): no provider bills below a
    # billionth of a dollar.
    totals["cost_usd"] = round(totals["cost_usd"], 9)
    avoided = totals["estimated_avoided_cost_usd"]
    if avoided is not None:
        totals["estimated_avoided_cost_usd"] = round(avoided, 9)
    elif not totals["avoided_calls"]:
        totals["estimated_avoided_cost_usd"] = 0.0  # nothing avoided, so nothing saved
    return Ledger(**totals)


class AsyncReceiptQueries:
    """The receipt reads of StaffStore (mixed into it)."""

    async def _fetchall(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        raise NotImplementedError  # StaffStore's

    async def run_sync(self, work: Callable[[Any], T]) -> T:
        raise NotImplementedError  # StaffStore's

    async def list_receipts(
        self,
        owner: str | None,
        *,
        limit: int = 20,
        offset: int = 0,
        since: datetime | None = None,
        until: datetime | None = None,
        session: str | None = None,
        outcome: Outcome | None = None,
        reason: str | None = None,
    ) -> list[Receipt]:
        """The most recent receipts, newest first; of one owner, or of all when owner is None,
        narrowed by start time (`since` inclusive, `until` exclusive), session name, outcome
        and reason."""
        where, params = ReceiptFilter(owner, since, until, session, outcome, reason).where()
        rows = await self._fetchall(
            f"SELECT {', '.join(RECEIPT_COLUMNS)} FROM receipts {where} "
            "ORDER BY started_at DESC, rowid DESC LIMIT ? OFFSET ?",
            [*params, limit, offset],
        )
        return [row_to_receipt(row) for row in rows]

    async def iter_receipts(self, chosen: ReceiptFilter) -> AsyncIterator[Receipt]:
        """Every receipt `chosen` matches, newest first, read a page at a time."""
        offset = 0
        while True:
            page = await self.list_receipts(
                chosen.owner, limit=_PAGE, offset=offset, since=chosen.since,
                until=chosen.until, session=chosen.session, outcome=chosen.outcome,
                reason=chosen.reason,
            )  # fmt: skip
            for receipt in page:
                yield receipt
            if len(page) < _PAGE:
                return
            offset += len(page)

    async def ledger(self, owner: str | None = None) -> Ledger:
        """Totals over the receipts that remain: avoided and attempted calls apart, known usage
        and cost, the estimated cost avoided, unknown counts."""
        where, params = ReceiptFilter(owner).where()
        rows = await self._fetchall(f"SELECT {_LEDGER_SELECT} FROM receipts {where}", params)
        return _ledger(rows[0])

    async def ledger_by(
        self,
        period: Period,
        owner: str | None = None,
        *,
        since: datetime | None = None,
        until: datetime | None = None,
    ) -> list[tuple[str, Ledger]]:
        """The ledger period by period (UTC days or hours), oldest first, over the receipts
        started from `since` (inclusive) to `until` (exclusive); periods without a receipt are
        left out."""
        where, params = ReceiptFilter(owner, since, until).where()

        def read(sync: Any) -> list[Any]:
            label = sync.db.utc_period(PERIOD_FORMATS[period], "started_at")
            return list(
                sync.fetchall(
                    f"SELECT {label} AS period, {_LEDGER_SELECT} FROM receipts {where} "
                    "GROUP BY period ORDER BY period",
                    params,
                )
            )

        rows = await self.run_sync(read)
        return [(str(row[0]), _ledger(row[1:])) for row in rows]
