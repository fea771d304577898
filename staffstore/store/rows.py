"""How the store's rows read and write: claims and receipts as SQL rows, times as epochs.

Shared by the async StaffStore (async_store.py) and its synchronous lookups (sync_store.py).
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..errors import CorruptStoreError, StoreBusyError, StoreError
from ..identity import content_hash
from ..models import Claim, NewClaim, Receipt

# Fields that make up a claim's identity: the finding and where it came from. Status, expiry
# and timestamps are lifecycle, not identity, so storing the same finding twice is a no-op.
IDENTITY_FIELDS = (
    "owner", "agent", "question", "answer", "source",
    "job_id", "repository", "profile", "revision", "inputs_fingerprint",
)  # fmt: skip

CLAIM_COLUMNS = (
    "id, owner, agent, question, answer, source, job_id, repository, profile, revision, "
    "inputs_fingerprint, status, expires_at, created_at, superseded_by"
)
QUALIFIED_CLAIM_COLUMNS = ", ".join("c." + name.strip() for name in CLAIM_COLUMNS.split(","))


def claim_id(claim: NewClaim) -> str:
    """The claim's identity: a hash over the canonical JSON of its identity fields."""
    return content_hash({name: getattr(claim, name) for name in IDENTITY_FIELDS})


def epoch_of(moment: datetime | None) -> float | None:
    return None if moment is None else moment.timestamp()


def datetime_of(epoch: float | None) -> datetime | None:
    return None if epoch is None else datetime_at(epoch)


def datetime_at(epoch: float) -> datetime:
    return datetime.fromtimestamp(epoch, UTC)


def now_epoch(now: datetime | None) -> float:
    return now.timestamp() if now is not None else time.time()


def as_of(claim: Claim, epoch: float) -> Claim:
    """The claim with its status as the clock has it: a live claim past expiry is expired."""
    if claim.status == "live" and claim.expires_at and claim.expires_at.timestamp() <= epoch:
        return claim.model_copy(update={"status": "expired"})
    return claim


def count_where(condition: str) -> str:
    """An SQL aggregate: how many rows meet `condition` (0 over none). A CASE, not a summed
    comparison: PostgreSQL has no sum() of booleans."""
    return f"coalesce(sum(CASE WHEN {condition} THEN 1 ELSE 0 END), 0)"


def upsert(table: str, columns: Sequence[str], key: Sequence[str]) -> str:
    """INSERT of one row that replaces the row with the same `key` (an upsert both SQLite and
    PostgreSQL run; SQLite's INSERT OR REPLACE is its own)."""
    marks = ", ".join("?" for _ in columns)
    updates = ", ".join(f"{name} = excluded.{name}" for name in columns if name not in key)
    return (
        f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({marks}) "
        f"ON CONFLICT ({', '.join(key)}) DO UPDATE SET {updates}"
    )


def fts_all(words: Sequence[str]) -> str:
    """A MATCH expression: every word, in the question's content column."""
    return "search_key : (" + " AND ".join(fts_phrase(w) for w in words) + ")"


def kept_fresh(table: str, moment: float, max_age: float | None) -> tuple[str, list[float]]:
    """The SQL condition (with its parameters) that a kept answer in `table` (an alias) is
    unexpired at `moment` and, with `max_age`, no older than that many seconds."""
    sql = f" AND ({table}.expires_at IS NULL OR {table}.expires_at > ?)"
    params = [moment]
    if max_age is not None:
        # Added only when given: PostgreSQL cannot type a bare `? IS NULL` parameter.
        sql += f" AND {table}.created_at >= ?"
        params.append(moment - max_age)
    return sql, params


def fts_phrase(word: str) -> str:
    """Quote one word for MATCH, so operators in user text (OR, NOT, *, :) lose their power."""
    return '"' + word.replace('"', '""') + '"'


def row_to_claim(row: Sequence[Any]) -> Claim:
    (id_, owner, agent, question, answer, source, job_id, repository, profile, revision,
     fingerprint, status, expires_at, created_at, superseded_by) = row  # fmt: skip
    return Claim(
        id=id_, owner=owner, agent=agent, question=question, answer=answer, source=source,
        job_id=job_id, repository=repository, profile=profile, revision=revision,
        inputs_fingerprint=fingerprint, status=status, expires_at=datetime_of(expires_at),
        created_at=datetime_at(created_at), superseded_by=superseded_by,
    )  # fmt: skip


RECEIPT_COLUMNS = (
    "id", "owner", "outcome", "reason", "status", "model", "prompt_tokens", "completion_tokens",
    "cost_usd", "inference_avoided", "inference_attempted", "latency_ms", "started_at",
    "finished_at", "session_id", "claim_id", "question", "answer", "error", "served_from",
    "avoided_cost_usd", "prompt_parts", "source",
)  # fmt: skip


def receipt_row(receipt: Receipt) -> tuple[Any, ...]:
    values = receipt.model_dump()
    values["started_at"] = receipt.started_at.timestamp()
    values["finished_at"] = receipt.finished_at.timestamp()
    values["inference_avoided"] = int(receipt.inference_avoided)
    values["inference_attempted"] = int(receipt.inference_attempted)
    parts = receipt.prompt_parts
    values["prompt_parts"] = None if parts is None else json.dumps(parts)  # in prompt order
    return tuple(values[name] for name in RECEIPT_COLUMNS)


def row_to_receipt(row: Sequence[Any]) -> Receipt:
    values = dict(zip(RECEIPT_COLUMNS, row, strict=True))
    values["started_at"] = datetime_of(values["started_at"])
    values["finished_at"] = datetime_of(values["finished_at"])
    values["inference_avoided"] = bool(values["inference_avoided"])
    values["inference_attempted"] = bool(values["inference_attempted"])
    parts = values["prompt_parts"]
    values["prompt_parts"] = None if parts is None else json.loads(parts)
    return Receipt(**values)


_SQLITE_BUSY, _SQLITE_LOCKED, _SQLITE_NOTADB = 5, 6, 26


def _primary_code(error: sqlite3.Error) -> int | None:
    code = getattr(error, "sqlite_errorcode", None)
    return code & 0xFF if isinstance(code, int) else None


def damaged(path: Path, error: sqlite3.DatabaseError) -> StoreError:
    message = str(error)
    if _primary_code(error) == _SQLITE_NOTADB or "not a database" in message:
        # SQLite's verdict on the header, which it read through its own descriptor:
        # staffstore never opens the file itself (see StaffStore.connect), so it cannot tell
        # a file that was never SQLite's from one whose header was overwritten.
        return CorruptStoreError(
            f"{path} is not a staffstore database (not a SQLite file, or its header is "
            f"damaged): {message}"
        )
    if "malformed" in message:
        # A file with a valid header can still have damaged pages; say so plainly.
        return CorruptStoreError(f"{path} is damaged: {message}")
    return StoreError(f"{path}: {message}")


def busy_or(error: sqlite3.OperationalError, path: Path) -> Exception:
    """StoreBusyError for a write that met another connection's lock, else the error itself."""
    if _primary_code(error) in (_SQLITE_BUSY, _SQLITE_LOCKED):
        return StoreBusyError(f"{path} is locked by another writer ({error})")
    return error
