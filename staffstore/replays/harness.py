"""What every replay shares: a local mouth, a pinned clock, and rows and summaries from turns.

Scripted turns are played through the real ensure_mouth (and so the real query_first) against a
real StaffStore on a temporary SQLite file; the model is a deterministic local ChatFn that
reports usage and cost. Each outcome is judged against the turn's gold label, which the gate
never sees. Nothing written here depends on the wall clock, so one seed gives one set of bytes.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Literal

from ..errors import StaffstoreError
from ..identity import content_hash
from ..models import ChatReply, Claim, Message, NewClaim, Turn
from ..mouth import ensure_mouth
from ..store import StaffStore
from ..store.location import StoreAddress
from ..store.rows import claim_id
from ..working_set import approximate_tokens
from .pool import Finding

Gold = Literal["hit", "miss"]
Row = dict[str, Any]

OWNER = "acme"
MODEL = "replay/deterministic-mouth"
# Per-token prices of the local mouth: $3 per million prompt tokens, $15 per million completion
# tokens, so the cost side of the ledger moves with the size of each working set.
PROMPT_USD_PER_TOKEN = 3.0 / 1_000_000
COMPLETION_USD_PER_TOKEN = 15.0 / 1_000_000
# A job stores its finding this long after the first look that started it.
STORE_DELAY = timedelta(seconds=30)

SUMMARY_FIELDS = (
    "turns", "hits", "misses", "avoidance", "gold_hits", "gold_hit_recall", "false_hits",
    "false_hit_rate", "stale_hits", "stale_hit_rate", "conflict_picks", "inference_calls",
    "known_cost_usd",
)  # fmt: skip

DEFINITIONS = {
    "avoidance": "hits / turns: the share of turns answered without a model call",
    "gold_hits": "turns whose gold label is hit",
    "gold_hit_recall": "gold-hit turns served from their expected claim / gold_hits",
    "false_hits": "hits on a turn whose gold label is miss, or hits on a claim other than the "
    "expected one",
    "false_hit_rate": "false_hits / turns",
    "stale_hits": "hits serving a claim that was superseded, retracted, past its expiry, or made "
    "at another revision than the one the turn names",
    "stale_hit_rate": "stale_hits / turns",
    "conflict_picks": "hits serving one of two live claims that answer the same question "
    "differently",
    "inference_calls": "calls of the local mouth; each miss makes exactly one",
    "known_cost_usd": "sum of the cost the mouth reported, over the calls that reported one",
}

MOUTH_SPEC = {
    "model": MODEL,
    "tokens": "four characters a token, rounded up (working_set.approximate_tokens)",
    "prompt_usd_per_token": PROMPT_USD_PER_TOKEN,
    "completion_usd_per_token": COMPLETION_USD_PER_TOKEN,
}


#: Where a replay keeps a store it names ("single.sqlite"): a file in its work directory
#: unless the caller gives another place, such as a fresh PostgreSQL database per name (the
#: test that plays every replay on both backends and compares their ledgers).
StoreFor = Callable[[str], StoreAddress]


def store_at(workdir: Path, name: str, store_for: StoreFor | None) -> StoreAddress:
    """The store a replay names `name`: `store_for`'s, else the file in `workdir`."""
    return store_for(name) if store_for is not None else workdir / name


class ReplayError(StaffstoreError):
    """A replay script contradicts itself or the store (a bug in the replay, not the gate)."""


def revision(key: str, generation: int = 1) -> str:
    """A stable stand-in for a commit hash: generation 2 is a newer commit than generation 1."""
    return content_hash({"finding": key, "generation": generation}, length=12)


def job_claim(
    finding: Finding, job: int, *, answer: str | None = None, generation: int = 1, **extra: Any
) -> NewClaim:
    """The claim a finished worker stores for `finding`: job-sourced, at a known revision."""
    return NewClaim(
        owner=OWNER,
        agent=finding.agent.lower(),
        question=finding.question,
        answer=answer or finding.answer,
        source="job",
        job_id=f"job-{job:04d}",
        repository=finding.repository,
        revision=revision(finding.key, generation),
        **extra,
    )


def write_json(path: Path, data: Any) -> None:
    """Write `data` as sorted, indented JSON, so equal data makes equal bytes."""
    text = json.dumps(data, sort_keys=True, indent=2, ensure_ascii=False) + "\n"
    path.write_text(text, encoding="utf-8")


@dataclass(frozen=True)
class Clock:
    """Turn n happens at start + (n - 1) * step: a pinned clock instead of the wall clock."""

    start: datetime
    step: timedelta

    def at(self, turn: int) -> datetime:
        return self.start + (turn - 1) * self.step

    def spec(self) -> dict[str, Any]:
        return {"start": self.start.isoformat(), "step_seconds": self.step.total_seconds()}


class ReplayMouth:
    """A deterministic local ChatFn: no network, usage by four characters a token, known cost."""

    def __init__(self) -> None:
        self.calls = 0

    async def __call__(self, messages: list[Message]) -> ChatReply:
        self.calls += 1
        prompt_tokens = sum(approximate_tokens(message.content) for message in messages)
        asked = messages[-1].content
        text = f"[replay mouth] A first look at {asked!r}; no stored finding answered it."
        completion_tokens = approximate_tokens(text)
        cost = prompt_tokens * PROMPT_USD_PER_TOKEN + completion_tokens * COMPLETION_USD_PER_TOKEN
        return ChatReply(
            text=text,
            model=MODEL,
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            cost_usd=round(cost, 10),
            finish_reason="stop",
            response_id=f"replay-{self.calls:05d}",
        )


@dataclass(frozen=True)
class ScriptedTurn:
    """One turn of a replay with its gold label; the gate sees only text, repository, revision."""

    number: int
    category: str
    gold: Gold
    text: str
    expected_claim_id: str | None = None
    finding: str | None = None
    detail: str | None = None
    repository: str | None = None
    revision: str | None = None

    def spec(self) -> dict[str, Any]:
        return {
            "turn": self.number,
            "category": self.category,
            "detail": self.detail,
            "gold": self.gold,
            "expected_claim_id": self.expected_claim_id,
            "finding": self.finding,
            "text": self.text,
            "repository": self.repository,
            "revision": self.revision,
        }


@dataclass(frozen=True)
class PlannedClaim:
    """A claim a replay stores, when, and what part it plays."""

    claim: NewClaim
    finding: str
    role: str
    stored_at: datetime
    after_turn: int | None = None  # None: stored before the first turn

    @property
    def id(self) -> str:
        return claim_id(self.claim)

    def spec(self) -> dict[str, Any]:
        data = self.claim.model_dump(mode="json")
        data.update(
            id=self.id,
            finding=self.finding,
            role=self.role,
            stored_at=self.stored_at.isoformat(),
            stored_after_turn=self.after_turn,
        )
        return data


def spec_header(name: str, seed: int, quick: bool, clock: Clock) -> dict[str, Any]:
    """What every spec file opens with: which replay, which seed, whose store, which clock."""
    return {
        "name": name,
        "seed": seed,
        "quick": quick,
        "owner": OWNER,
        "clock": clock.spec(),
        "mouth": MOUTH_SPEC,
    }


def ledger_header(name: str, seed: int, quick: bool) -> dict[str, Any]:
    """What every ledger file opens with: which replay, and what its summary's names mean."""
    return {"name": name, "seed": seed, "quick": quick, "definitions": DEFINITIONS}


@dataclass(frozen=True)
class ReplayOutput:
    """The two documents a replay writes: what was asked (spec) and what happened (ledger)."""

    spec: dict[str, Any]
    ledger: dict[str, Any]


def served_stale(claim: Claim, turn: ScriptedTurn, now: datetime) -> bool:
    """Whether serving `claim` for `turn` serves stale work, judged from the stored record.

    Deliberately written apart from the gate's own freshness rule, so the ledger checks the
    gate instead of repeating it.
    """
    if claim.status != "live":
        return True
    if claim.expires_at is not None and claim.expires_at <= now:
        return True
    pinned = turn.revision is not None and claim.repository is not None
    return pinned and claim.revision != turn.revision


@dataclass
class Player:
    """Plays scripted turns through ensure_mouth and turns each outcome into a ledger row."""

    store: StaffStore
    mouth: ReplayMouth
    clock: Clock
    session: str
    conflicted: frozenset[str] = field(default_factory=frozenset)

    async def store_claims(self, planned: Iterable[PlannedClaim]) -> None:
        for item in planned:
            stored = await self.store.ensure_claim(item.claim, now=item.stored_at)
            if stored.id != item.id:  # the spec names claims by id; they must agree
                raise ReplayError(f"claim {item.finding} stored as {stored.id}, not {item.id}")

    async def play(self, turn: ScriptedTurn) -> Row:
        now = self.clock.at(turn.number)
        calls_before = self.mouth.calls
        result = await ensure_mouth(
            self.store,
            Turn(
                owner=OWNER,
                text=turn.text,
                session=self.session,
                repository=turn.repository,
                revision=turn.revision,
                now=now,
            ),
            self.mouth,
        )
        decision, receipt = result.decision, result.receipt
        hit = decision.outcome == "hit"
        served = decision.claim_id if hit else None
        stale = False
        if served is not None:
            stale = served_stale(await self.store.get_claim(OWNER, served), turn, now)
        return {
            **turn.spec(),
            "outcome": decision.outcome,
            "reason": decision.reason,
            "claim_id": served,
            "nearest_claim_id": None if hit else decision.claim_id,
            "calls": self.mouth.calls - calls_before,
            "prompt_tokens": receipt.prompt_tokens,
            "completion_tokens": receipt.completion_tokens,
            "cost_usd": receipt.cost_usd,
            "false_hit": hit and (turn.gold == "miss" or served != turn.expected_claim_id),
            "stale_hit": stale,
            "conflict_pick": served is not None and served in self.conflicted,
        }


def _rate(count: int, turns: int) -> float:
    return count / turns if turns else 0.0


def summarize(rows: Sequence[Row], inference_calls: int) -> dict[str, Any]:
    """The summary of a replay (the names in SUMMARY_FIELDS; see DEFINITIONS)."""
    turns = len(rows)
    hits = sum(row["outcome"] == "hit" for row in rows)
    gold_hits = [row for row in rows if row["gold"] == "hit"]
    served_right = sum(
        row["outcome"] == "hit" and row["claim_id"] == row["expected_claim_id"] for row in gold_hits
    )
    false_hits = sum(row["false_hit"] for row in rows)
    stale_hits = sum(row["stale_hit"] for row in rows)
    cost = sum(row["cost_usd"] for row in rows if row["cost_usd"] is not None)
    return {
        "turns": turns,
        "hits": hits,
        "misses": turns - hits,
        "avoidance": _rate(hits, turns),
        "gold_hits": len(gold_hits),
        "gold_hit_recall": _rate(served_right, len(gold_hits)),
        "false_hits": false_hits,
        "false_hit_rate": _rate(false_hits, turns),
        "stale_hits": stale_hits,
        "stale_hit_rate": _rate(stale_hits, turns),
        "conflict_picks": sum(row["conflict_pick"] for row in rows),
        "inference_calls": inference_calls,
        "known_cost_usd": round(cost, 8),
    }


def breakdown(rows: Sequence[Row], key: str) -> dict[str, dict[str, Any]]:
    """Outcomes per value of `key` (a category): turns, hits, misses, false, stale, reasons."""
    groups: dict[str, list[Row]] = {}
    for row in rows:
        if row[key] is not None:
            groups.setdefault(str(row[key]), []).append(row)
    return {
        name: {
            "turns": len(group),
            "gold": sorted({row["gold"] for row in group}),
            "hits": sum(row["outcome"] == "hit" for row in group),
            "misses": sum(row["outcome"] == "miss" for row in group),
            "false_hits": sum(row["false_hit"] for row in group),
            "stale_hits": sum(row["stale_hit"] for row in group),
            "conflict_picks": sum(row["conflict_pick"] for row in group),
            "reasons": dict(Counter(row["reason"] for row in group)),
        }
        for name, group in groups.items()
    }


def windows(rows: Sequence[Row], size: int) -> list[dict[str, Any]]:
    """Avoidance over consecutive windows of `size` turns."""
    result = []
    for start in range(0, len(rows), size):
        window = rows[start : start + size]
        hits = sum(row["outcome"] == "hit" for row in window)
        result.append(
            {
                "first_turn": window[0]["turn"],
                "last_turn": window[-1]["turn"],
                "turns": len(window),
                "hits": hits,
                "misses": len(window) - hits,
                "avoidance": _rate(hits, len(window)),
            }
        )
    return result


def gold_misses(rows: Sequence[Row], questions: Mapping[str, str]) -> list[dict[str, Any]]:
    """Gold-hit turns that were not served their expected claim, with the stored question."""
    return [
        {
            "turn": row["turn"],
            "text": row["text"],
            "expected_claim_id": row["expected_claim_id"],
            "stored_question": questions.get(row["expected_claim_id"] or ""),
            "outcome": row["outcome"],
            "reason": row["reason"],
        }
        for row in rows
        if row["gold"] == "hit"
        and (row["outcome"] != "hit" or row["claim_id"] != row["expected_claim_id"])
    ]


async def store_ledger(store: StaffStore) -> dict[str, Any]:
    """The store's own totals over the receipts the turns wrote, to check the rows against."""
    ledger = await store.ledger(OWNER)
    data = ledger.model_dump()
    data["cost_usd"] = round(ledger.cost_usd, 8)
    return data
