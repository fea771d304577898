"""The single-finding replay: one paid first look, then recalls of the finding a job stored.

Turn 1 is novel: the store is empty, the gate misses and the mouth is called once. Then a
job-sourced Kernel claim is stored, as a finished worker would store it. Turns 2-20 ask for
that finding in other words; each one that hits is a model call avoided.
"""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from functools import cache
from pathlib import Path

from ..models import NewClaim
from ..store import StaffStore
from .data import load
from .harness import (
    OWNER,
    STORE_DELAY,
    Clock,
    PlannedClaim,
    Player,
    ReplayMouth,
    ReplayOutput,
    ScriptedTurn,
    StoreFor,
    gold_misses,
    ledger_header,
    revision,
    spec_header,
    store_at,
    store_ledger,
    summarize,
)
from .pool import Finding, parse_finding

#: The finding, its first look and its paraphrases, written as people ask before the gate ever
#: saw them, and kept whatever the gate makes of them.
DATA_FILE = "single.json"

CLOCK = Clock(datetime(2025, 6, 2, 9, 0, tzinfo=UTC), timedelta(minutes=5))
QUICK_RECALLS = 5


@cache
def finding() -> Finding:
    """The one finding this replay asks about."""
    return parse_finding(load(DATA_FILE), DATA_FILE)


def finding_claim() -> PlannedClaim:
    """The job-sourced claim a finished Kernel worker stores after turn 1."""
    found = finding()
    claim = NewClaim(
        owner=OWNER,
        agent=found.agent,
        question=found.question,
        answer=found.answer,
        source="job",
        job_id="job-0001",
        repository=found.repository,
        revision=revision(found.key),
    )
    return PlannedClaim(claim, found.key, "live", CLOCK.at(1) + STORE_DELAY, after_turn=1)


def script(seed: int, quick: bool) -> list[ScriptedTurn]:
    """Turn 1 the first look, then the paraphrases in an order the seed picks."""
    found = finding()
    recalls = list(found.paraphrases)
    random.Random(f"single:{seed}").shuffle(recalls)
    if quick:
        recalls = recalls[:QUICK_RECALLS]
    expected = finding_claim().id
    turns = [ScriptedTurn(1, "first_look", "miss", found.first_look, finding=found.key)]
    turns += [
        ScriptedTurn(
            number, "paraphrase", "hit", text, expected_claim_id=expected, finding=found.key
        )
        for number, text in enumerate(recalls, start=2)
    ]
    return turns


async def play(
    workdir: Path, seed: int, quick: bool, store_for: StoreFor | None = None
) -> ReplayOutput:
    """Run the single-finding replay in `workdir` and return its spec and ledger."""
    turns = script(seed, quick)
    planned = finding_claim()
    mouth = ReplayMouth()
    async with StaffStore.open(store_at(workdir, "single.sqlite", store_for)) as store:
        player = Player(store, mouth, CLOCK, session="single")
        rows = [await player.play(turns[0])]
        await player.store_claims([planned])
        rows += [await player.play(turn) for turn in turns[1:]]
        receipts = await store_ledger(store)
    spec = {
        **spec_header("single", seed, quick, CLOCK),
        "mix": {"first_look": 1, "paraphrase": len(turns) - 1},
        "claims": [planned.spec()],
        "turns": [turn.spec() for turn in turns],
    }
    ledger = {
        **ledger_header("single", seed, quick),
        "summary": summarize(rows, mouth.calls),
        "gold_misses": gold_misses(rows, {planned.id: finding().question}),
        "store_ledger": receipts,
        "rows": rows,
    }
    return ReplayOutput(spec, ledger)
