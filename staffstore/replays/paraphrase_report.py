"""The kept-paraphrase replay's ledger as the report, the gate card and the CLI read it.

One row for the replay at the gate's default budget (paid calls, calls avoided by reusing a
paid answer, recall on paraphrases, false hits on near misses and unrelated turns, conversation
turns served), and a table of recall and false hits per split at every calibrated budget.
"""

from __future__ import annotations

from pydantic import BaseModel

#: Replays whose ledgers measure reuse of paid answers (ParaphraseLedger).
PARAPHRASE_REPLAYS = frozenset({"kept-paraphrase"})
PARAPHRASE_FIELDS = [
    "REPLAY", "CLAIMS", "TURNS", "PAID_CALLS", "AVOIDED_CALLS", "PARAPHRASE_RECALL",
    "FALSE_HITS", "CONVERSATION_TURNS_SERVED",
]  # fmt: skip
#: The report's headings for paraphrase_row's cells.
PARAPHRASE_HEADINGS = [
    "replay", "claims asked and kept", "reworded and other turns", "paid calls",
    "calls avoided (kept answer reused)", "paraphrase recall",
    "false hits (near misses / unrelated / wrong answer)", "conversation turns served",
    "known cost (USD)", "estimated cost avoided (USD)",
]  # fmt: skip


class ParaphraseSummary(BaseModel):
    claims: int
    paid_calls: int
    turns: int
    paraphrase_turns: int
    near_miss_turns: int
    unrelated_turns: int
    avoided_calls: int
    avoidance: float
    correct_hits: int
    paraphrase_recall: float
    false_hits: int
    false_hits_on_near_misses: int
    false_hits_on_unrelated: int
    wrong_answer_hits: int
    false_hit_rate: float
    conversation_turns: int
    conversation_turns_served: int
    known_cost_usd: float
    avoided_cost_usd: float


class ParaphraseSplit(BaseModel):
    turns: int
    paraphrase_turns: int
    near_miss_turns: int
    unrelated_turns: int
    correct_hits: int
    paraphrase_recall: float
    false_hits: int
    false_hit_rate: float


class ParaphraseBudget(BaseModel):
    budget: float
    default: bool
    tune: ParaphraseSplit
    test: ParaphraseSplit


class ParaphraseLedger(BaseModel):
    name: str
    quick: bool
    file: str
    sha256: str
    default_budget: float
    summary: ParaphraseSummary
    budgets: list[ParaphraseBudget]


def paraphrase_row(ledger: ParaphraseLedger) -> list[str]:
    """The replay's line in the report (and, less its costs, in `staffstore replay`'s table)."""
    s = ledger.summary
    return [
        ledger.name + (" (quick)" if ledger.quick else ""), str(s.claims), str(s.turns),
        str(s.paid_calls), f"{s.avoided_calls} ({s.avoidance:.1%})",
        f"{s.correct_hits}/{s.paraphrase_turns} = {s.paraphrase_recall:.1%}",
        f"{s.false_hits} ({s.false_hits_on_near_misses} / {s.false_hits_on_unrelated} / "
        f"{s.wrong_answer_hits})",
        f"{s.conversation_turns_served} of {s.conversation_turns}",
        f"{s.known_cost_usd:.6f}", f"{s.avoided_cost_usd:.6f}",
    ]  # fmt: skip


def paraphrase_budget_table(ledger: ParaphraseLedger) -> tuple[list[str], list[list[str]]]:
    """Headings and rows: recall on paraphrases / false hits per split, at every budget."""
    headers = ["split"] + [
        f"{b.budget:.1%}" + (" (default)" if b.default else "") for b in ledger.budgets
    ]

    def cell(split: ParaphraseSplit) -> str:
        return (
            f"{split.correct_hits}/{split.paraphrase_turns} = {split.paraphrase_recall:.1%} / "
            f"{split.false_hits}/{split.turns} = {split.false_hit_rate:.2%}"
        )

    rows = [
        ["tune (fitted on)", *(cell(b.tune) for b in ledger.budgets)],
        ["TEST", *(cell(b.test) for b in ledger.budgets)],
    ]
    return headers, rows


def paraphrase_explanation(ledger: ParaphraseLedger) -> str:
    """What the replay measured, read from the ledger."""
    s = ledger.summary
    return (
        f"Each of {s.claims} claims' questions of `{ledger.file}` ({ledger.sha256[:12]}) is "
        "asked first, paid for and kept, as `staffstore ask` keeps it; then each of its "
        f"{s.turns} turns is asked as a new context-free question that keeps nothing "
        f"({s.paraphrase_turns} paraphrases that must be served their own claim's kept answer, "
        f"{s.near_miss_turns} near misses and {s.unrelated_turns} unrelated turns that must be "
        f"served none), and {s.conversation_turns} turns (each claim's question and a "
        "paraphrase) inside a conversation with an earlier turn, which must never be served a "
        "kept answer. The row is at the gate's default budget; the budget table has recall / "
        "false hits at each."
    )


__all__ = [
    "PARAPHRASE_FIELDS",
    "PARAPHRASE_HEADINGS",
    "PARAPHRASE_REPLAYS",
    "ParaphraseLedger",
    "paraphrase_budget_table",
    "paraphrase_explanation",
    "paraphrase_row",
]
