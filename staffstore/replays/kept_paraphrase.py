"""The kept-paraphrase replay: paid answers reused for reworded questions, and never for others.

Built from workday_dev.jsonl (replays/pairs/, laid out as its README says): every claim's
question is first asked through the real ensure_mouth with a cache policy, as `staffstore ask`
asks it, so the deterministic local mouth is paid and its answer kept, prompt and all. Then,
against that store of kept answers (no claims), every turn of the file is asked as a new
context-free request that keeps nothing: the paraphrases (label hit) must be served their own
claim's kept answer, the near misses and the unrelated turns (label miss) must not be served
any. Last, each claim's question and one paraphrase are asked again inside a conversation with
an earlier turn: a turn that leans on a conversation must never be served a kept answer.

Every turn of the file is asked at the gate's default budget through ensure_mouth (receipts,
paid calls and all); the same kept-answer lookup is then asked at every other calibrated budget
(gate/kept_reuse.py, which ensure_mouth calls), for the recall and false hits at each. Figures
are kept apart by split: the tuning split (D001-D100), which the gate was fitted on, lists its
false hits; the TEST split (D101-D150) is counted only.
"""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Any

from ..gate import reuse_kept_sync
from ..gate.scoring import DEFAULT_BUDGET, default_model
from ..models import Decision, Turn, TurnResult
from ..mouth import ASK_NAMESPACE, CachePolicy, context_key, ensure_mouth
from ..store import StaffStore, SyncStore
from ..store.sync_store import KeptAnswer
from ..working_set import DEFAULT_BUDGET as PROMPT_BUDGET
from .data import DATA_DIR
from .harness import (
    MODEL,
    OWNER,
    Clock,
    ReplayError,
    ReplayMouth,
    ReplayOutput,
    StoreFor,
    ledger_header,
    spec_header,
    store_at,
)
from .pairs import file_sha256
from .splits import WORKDAY_SPLITS, workday_split
from .workday_dev import LISTED, DevClaim, DevSet, DevTurn, read_dev_set

NAME = "kept-paraphrase"
DATA_FILE = DATA_DIR / "pairs" / "workday_dev.jsonl"
CLOCK = Clock(datetime(2026, 3, 2, 9, 0, tzinfo=UTC), timedelta(seconds=30))
#: Quick mode plays this many claims of each split, with their turns and as many unrelated.
QUICK_CLAIMS = 6
SPLITS = ("tune", "test")

FIELDS = (
    "claims", "paid_calls", "turns", "paraphrase_turns", "near_miss_turns", "unrelated_turns",
    "avoided_calls", "avoidance", "correct_hits", "paraphrase_recall", "false_hits",
    "false_hits_on_near_misses", "false_hits_on_unrelated", "wrong_answer_hits",
    "false_hit_rate", "conversation_turns", "conversation_turns_served", "known_cost_usd",
    "avoided_cost_usd",
)  # fmt: skip

DEFINITIONS = {
    "paid_calls": "calls of the local mouth: each claim's question, then every turn that was "
    "not served (conversation turns and their openers included)",
    "turns": "the file's turns, each asked once as a new context-free request",
    "avoided_calls": "turns served a kept answer (a call avoided by reusing a paid answer)",
    "avoidance": "avoided_calls / turns",
    "paraphrase_recall": "paraphrase turns (label hit) served their own claim's kept answer / "
    "paraphrase turns",
    "false_hits": "turns served a kept answer whose question is not theirs: a near miss or an "
    "unrelated turn served any, a paraphrase served another claim's",
    "false_hit_rate": "false_hits / turns",
    "conversation_turns": "a claim's question and one of its paraphrases, each asked inside "
    "a conversation after an earlier turn",
    "conversation_turns_served": "conversation turns served a kept answer (must be 0)",
    "known_cost_usd": "what the paid calls cost, as the mouth reported it",
    "avoided_cost_usd": "the estimate of what the served turns avoided: the cost of the paid "
    "call whose answer each reused (Receipt.avoided_cost_usd)",
}


def _chosen(data: DevSet, quick: bool) -> DevSet:
    """The whole file, or in quick mode the first QUICK_CLAIMS claims of each split with their
    turns and as many unrelated turns of each."""
    if not quick:
        return data
    by_split: dict[str, list[DevClaim]] = {split: [] for split in SPLITS}
    for claim in data.claims:
        by_split[_split(claim.id, None)].append(claim)
    claims = [c for split in SPLITS for c in by_split[split][:QUICK_CLAIMS]]
    kept = {c.id for c in claims}
    unrelated: dict[str, list[DevTurn]] = {split: [] for split in SPLITS}
    for turn in data.turns:
        if turn.claim is None:
            unrelated[_split(None, turn.id)].append(turn)
    chosen_unrelated = {t.id for split in SPLITS for t in unrelated[split][:QUICK_CLAIMS]}
    turns = [t for t in data.turns if t.claim in kept or t.id in chosen_unrelated]
    return DevSet(claims, turns)


def _split(claim: str | None, turn: str | None) -> str:
    return workday_split(claim, turn)


def _kind(turn: DevTurn) -> str:
    if turn.claim is None:
        return "unrelated"
    return "paraphrase" if turn.label == "hit" else "near_miss"


def _verdict(turn: DevTurn, served: str | None) -> str:
    if served is None:
        return "miss"
    return "correct_hit" if turn.label == "hit" and served == turn.claim else "false_hit"


def _summary(rows: list[dict[str, Any]], *, listing: bool) -> dict[str, Any]:
    """The figures of one split at one budget (recall and false hits by kind and style)."""
    kinds = Counter(row["kind"] for row in rows)
    false = [row for row in rows if row["verdict"] == "false_hit"]
    correct = sum(row["verdict"] == "correct_hit" for row in rows)
    summary: dict[str, Any] = {
        "turns": len(rows),
        "paraphrase_turns": kinds["paraphrase"],
        "near_miss_turns": kinds["near_miss"],
        "unrelated_turns": kinds["unrelated"],
        "served": sum(row["served"] is not None for row in rows),
        "correct_hits": correct,
        "paraphrase_recall": correct / kinds["paraphrase"] if kinds["paraphrase"] else 0.0,
        "false_hits": len(false),
        "false_hits_on_near_misses": sum(row["kind"] == "near_miss" for row in false),
        "false_hits_on_unrelated": sum(row["kind"] == "unrelated" for row in false),
        "wrong_answer_hits": sum(row["kind"] == "paraphrase" for row in false),
        "false_hit_rate": len(false) / len(rows) if rows else 0.0,
        "served_by_style": dict(
            sorted(Counter(row["style"] for row in rows if row["served"] is not None).items())
        ),
    }
    if listing:
        summary["false_hit_turns"] = [
            {key: row[key] for key in ("turn", "claim", "style", "text", "served", "reason")}
            for row in false
        ]
    return summary


async def _ask(
    store: StaffStore, mouth: ReplayMouth, text: str, number: int, *, keep: bool,
    session: str | None = None,
) -> TurnResult:  # fmt: skip
    return await ensure_mouth(
        store,
        Turn(owner=OWNER, text=text, session=session, now=CLOCK.at(number)),
        mouth,
        model=MODEL,
        cache=CachePolicy(keep=keep),
    )


def _reuse(turn: Turn, context: str, sync: SyncStore) -> tuple[Decision, KeptAnswer | None]:
    """The kept-answer lookup ensure_mouth makes, alone (at another budget)."""
    return reuse_kept_sync(sync, turn, ASK_NAMESPACE, context)


async def play(
    workdir: Path, seed: int, quick: bool, store_for: StoreFor | None = None
) -> ReplayOutput:
    """Run the kept-paraphrase replay in `workdir` and return its spec and ledger."""
    data = _chosen(read_dev_set(DATA_FILE), quick)
    model = default_model()
    budgets = sorted(set(model.budgets) | {DEFAULT_BUDGET})
    mouth = ReplayMouth()
    number = 0
    claim_of: dict[str, str] = {}  # a kept answer's receipt id -> its claim
    rows: list[dict[str, Any]] = []
    conversations: list[dict[str, Any]] = []
    originals_served = 0
    async with StaffStore.open(store_at(workdir, "kept-paraphrase.sqlite", store_for)) as store:
        context: str | None = None
        for claim in data.claims:
            number += 1
            result = await _ask(store, mouth, claim.question, number, keep=True)
            if result.kept_from is not None:
                originals_served += 1  # another claim's question reworded: nothing kept
                continue
            if result.working_set is None or result.answer is None:
                raise ReplayError(f"claim {claim.id}'s question was neither served nor paid")
            claim_of[result.receipt.id] = claim.id
            found = context_key(
                Turn(owner=OWNER, text=claim.question), MODEL, PROMPT_BUDGET, result.working_set
            )
            if found is None or (context is not None and found != context):
                raise ReplayError(f"claim {claim.id}'s question was not asked context-free")
            context = found
        if context is None:
            raise ReplayError("no claim's answer was kept")
        paid_for_claims = mouth.calls
        cost_avoided = 0.0
        for turn in data.turns:
            number += 1
            result = await _ask(store, mouth, turn.text, number, keep=False)
            served = claim_of.get(result.kept_from.receipt_id) if result.kept_from else None
            if result.kept_from is not None and served is None:
                raise ReplayError(f"turn {turn.id} was served an answer no claim kept")
            cost_avoided += result.receipt.avoided_cost_usd or 0.0
            rows.append(
                {
                    "turn": turn.id, "claim": turn.claim, "label": turn.label, "kind": _kind(turn),
                    "style": turn.style, "text": turn.text, "split": _split(turn.claim, turn.id),
                    "number": number, "served": served, "reason": result.decision.reason,
                    "verdict": _verdict(turn, served),
                }
            )  # fmt: skip
        for claim in data.claims:
            # An earlier turn, then the claim's own words and a rewording of them: the prompt
            # carries the conversation, so no kept answer may serve either.
            session = f"conversation-{claim.id}"
            number += 1
            opener = f"I am looking into {claim.repository or 'our systems'} today."
            await _ask(store, mouth, opener, number, keep=False, session=session)
            reworded = next(
                (t.text for t in data.turns if t.claim == claim.id and t.label == "hit"), None
            )
            for text in [claim.question] + ([reworded] if reworded else []):
                number += 1
                result = await _ask(store, mouth, text, number, keep=False, session=session)
                conversations.append(
                    {
                        "claim": claim.id, "text": text, "outcome": result.decision.outcome,
                        "reason": result.decision.reason, "served": result.kept_from is not None,
                    }
                )  # fmt: skip
        paid = mouth.calls
        cost = (await store.ledger(OWNER)).cost_usd
        # Every other calibrated budget: the same lookup ensure_mouth made, at that budget.
        by_budget: dict[float, list[dict[str, Any]]] = {DEFAULT_BUDGET: rows}
        for budget in budgets:
            if budget == DEFAULT_BUDGET:
                continue
            by_budget[budget] = []
            for row in rows:
                asked = Turn(
                    owner=OWNER, text=row["text"], now=CLOCK.at(row["number"]), gate_budget=budget
                )
                _decision, kept = await store.run_sync(partial(_reuse, asked, context))
                served = claim_of.get(kept.receipt_id) if kept is not None else None
                turn = DevTurn(
                    id=row["turn"], claim=row["claim"], label=row["label"], style=row["style"],
                    text=row["text"],
                )  # fmt: skip
                by_budget[budget].append(
                    {**row, "served": served, "verdict": _verdict(turn, served)}
                )
    served_rows = [row for row in rows if row["served"] is not None]
    whole = _summary(rows, listing=False)
    summary = {
        "claims": len(data.claims),
        "paid_calls": paid,
        "paid_for_claims": paid_for_claims,
        "originals_served": originals_served,
        **{k: whole[k] for k in whole if k not in ("served", "served_by_style")},
        "avoided_calls": len(served_rows),
        "avoidance": len(served_rows) / len(rows) if rows else 0.0,
        "conversation_turns": len(conversations),
        "conversation_turns_served": sum(c["served"] for c in conversations),
        "known_cost_usd": round(cost, 8),
        "avoided_cost_usd": round(cost_avoided, 8),
    }
    spec = {
        **spec_header(NAME, seed, quick, CLOCK),
        "data": {"file": DATA_FILE.name, "sha256": file_sha256(DATA_FILE)},
        "claims": [{"id": c.id, "question": c.question} for c in data.claims],
        "turns": [
            {"id": t.id, "claim": t.claim, "label": t.label, "style": t.style, "text": t.text}
            for t in data.turns
        ],
        "conversation_opener": "I am looking into {repository} today.",
        "budgets": budgets,
    }
    ledger = {
        **ledger_header(NAME, seed, quick),
        "definitions": DEFINITIONS,
        "file": DATA_FILE.name,
        "sha256": file_sha256(DATA_FILE),
        "splits": {split: WORKDAY_SPLITS[split] for split in SPLITS},  # type: ignore[index]
        "default_budget": DEFAULT_BUDGET,
        "summary": summary,
        "budgets": [
            {
                "budget": budget,
                "default": budget == DEFAULT_BUDGET,
                **{
                    split: _summary(
                        [r for r in by_budget[budget] if r["split"] == split],
                        listing=split in LISTED,
                    )
                    for split in SPLITS
                },
            }
            for budget in budgets
        ],
        "conversations": conversations,
    }
    return ReplayOutput(spec, ledger)
