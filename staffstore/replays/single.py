"""The single-finding replay: one paid first look, then recalls of the finding a job stored.

Turn 1 is novel: the store is empty, the gate misses and the mouth is called once. Then a
job-sourced Kernel claim is stored, as a finished worker would store it. Turns 2-20 ask for
that finding in other words; each one that hits is a model call avoided.
"""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from pathlib import Path

from ..models import NewClaim
from ..store import StaffStore
from .harness import (
    OWNER,
    STORE_DELAY,
    Clock,
    PlannedClaim,
    Player,
    ReplayMouth,
    ReplayOutput,
    ScriptedTurn,
    gold_misses,
    ledger_header,
    revision,
    spec_header,
    store_ledger,
    summarize,
)

FINDING = "ledger-replay"
QUESTION = "What did Kernel find about ledger replay?"
ANSWER = "The ledger replay is deterministic."
FIRST_LOOK = "Can Kernel check whether the ledger replay is deterministic?"

# Written as people ask, before the gate ever saw them; kept whatever the gate makes of them.
PARAPHRASES = (
    "What did Kernel find about the ledger replay?",
    "what did kernel find about ledger replay",
    "Hey, what did Kernel find about ledger replay?",
    "About ledger replay: what did Kernel find?",
    "What did Kernel discover about ledger replay?",
    "what did kernal find about ledger replay?",
    "Can you tell me what Kernel found about ledger replay?",
    "What has Kernel found about ledger replay?",
    "What were Kernel's findings about the ledger replay?",
    "Did Kernel find anything about ledger replay?",
    "What did Kernel find regarding ledger replay?",
    "What did Kernel figure out about the ledger replay?",
    "Remind me what Kernel found about ledger replay, please.",
    "WHAT DID KERNEL FIND ABOUT LEDGER REPLAY?",
    "What did the Kernel agent find about ledger replay?",
    "any idea what Kernel found about ledger replay?",
    "What did Kernel conclude about ledger replay?",
    "What did Kernel find about ledger replays?",
    "quick question - what did Kernel find out about ledger replay?",
)

CLOCK = Clock(datetime(2025, 6, 2, 9, 0, tzinfo=UTC), timedelta(minutes=5))
QUICK_RECALLS = 5


def finding_claim() -> PlannedClaim:
    """The job-sourced claim a finished Kernel worker stores after turn 1."""
    claim = NewClaim(
        owner=OWNER,
        agent="kernel",
        question=QUESTION,
        answer=ANSWER,
        source="job",
        job_id="job-0001",
        repository="acme/staffstore",
        revision=revision(FINDING),
    )
    return PlannedClaim(claim, FINDING, "live", CLOCK.at(1) + STORE_DELAY, after_turn=1)


def script(seed: int, quick: bool) -> list[ScriptedTurn]:
    """Turn 1 the first look, then the paraphrases in an order the seed picks."""
    recalls = list(PARAPHRASES)
    random.Random(f"single:{seed}").shuffle(recalls)
    if quick:
        recalls = recalls[:QUICK_RECALLS]
    expected = finding_claim().id
    turns = [ScriptedTurn(1, "first_look", "miss", FIRST_LOOK, finding=FINDING)]
    turns += [
        ScriptedTurn(number, "paraphrase", "hit", text, expected_claim_id=expected, finding=FINDING)
        for number, text in enumerate(recalls, start=2)
    ]
    return turns


async def play(workdir: Path, seed: int, quick: bool) -> ReplayOutput:
    """Run the single-finding replay in `workdir` and return its spec and ledger."""
    turns = script(seed, quick)
    planned = finding_claim()
    mouth = ReplayMouth()
    async with StaffStore.open(workdir / "single.sqlite") as store:
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
        "gold_misses": gold_misses(rows, {planned.id: QUESTION}),
        "store_ledger": receipts,
        "rows": rows,
    }
    return ReplayOutput(spec, ledger)
