"""The workday replay: a day of turns from an empty store, most of them not first looks.

A fraction F of the turns are first looks at a new topic, weighted towards the morning; each
misses, is paid for once, and is followed by the job-sourced claim its worker stores. The rest
ask again, in people's words, for findings already stored, except a few follow-ups and
unrelated questions that must miss. The day runs at F = 5% (the workday), 10% and 20%.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from ..store import StaffStore
from ..store.location import StoreAddress
from . import pool
from .harness import (
    STORE_DELAY,
    Clock,
    PlannedClaim,
    Player,
    ReplayError,
    ReplayMouth,
    ReplayOutput,
    Row,
    ScriptedTurn,
    StoreFor,
    gold_misses,
    job_claim,
    ledger_header,
    spec_header,
    store_at,
    store_ledger,
    summarize,
    windows,
)
from .pool import Finding

FRACTIONS = (0.05, 0.10, 0.20)
WINDOW = 50
# A day of 400 turns from 08:30, one every 81 seconds: done by 17:30.
CLOCK = Clock(datetime(2025, 6, 2, 8, 30, tzinfo=UTC), timedelta(seconds=81))
# First looks are drawn with weight exp(-MORNING * t / turns): about a third in the first hour.
MORNING = 3.0


@dataclass(frozen=True)
class DayShape:
    turns: int
    follow_ups: int
    unrelated: int


FULL = DayShape(turns=400, follow_ups=2, unrelated=2)
QUICK = DayShape(turns=100, follow_ups=1, unrelated=1)


@dataclass(frozen=True)
class Day:
    """One scripted day: its turns and the claims stored after its first looks."""

    fraction: float
    turns: list[ScriptedTurn]
    claims: list[PlannedClaim]

    def mix(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for turn in self.turns:
            counts[turn.category] = counts.get(turn.category, 0) + 1
        return counts


def _first_look_claim(finding: Finding, job: int, after_turn: int) -> PlannedClaim:
    stored_at = CLOCK.at(after_turn) + STORE_DELAY
    return PlannedClaim(job_claim(finding, job), finding.key, "live", stored_at, after_turn)


def _morning_positions(rng: random.Random, turns: int, count: int) -> set[int]:
    """Turn 1 and count - 1 more turns, sampled without replacement, earlier ones likelier."""
    # Weighted sampling without replacement by Efraimidis and Spirakis: keep the largest keys.
    keyed = [
        (rng.random() ** (1.0 / math.exp(-MORNING * (number - 1) / turns)), number)
        for number in range(2, turns + 1)
    ]
    keyed.sort(reverse=True)
    return {1} | {number for _, number in keyed[: count - 1]}


def script_day(seed: int, fraction: float, shape: DayShape) -> Day:
    """Script one day at novel fraction `fraction`; topics come in one seeded order for all F."""
    topics = list(pool.findings())
    random.Random(f"workday-topics:{seed}").shuffle(topics)
    rng = random.Random(f"workday:{seed}:{fraction}")
    first_looks = round(shape.turns * fraction)
    if not 1 <= first_looks <= len(topics):
        raise ReplayError(f"{first_looks} first looks, but the pool has {len(topics)} topics")
    novel = _morning_positions(rng, shape.turns, first_looks)
    rest = [number for number in range(2, shape.turns + 1) if number not in novel]
    chatter = rng.sample(rest, shape.follow_ups + shape.unrelated)
    follow_ups = dict(
        zip(
            chatter[: shape.follow_ups],
            rng.sample(pool.follow_ups(), shape.follow_ups),
            strict=True,
        )
    )
    unrelated = dict(
        zip(chatter[shape.follow_ups :], rng.sample(pool.unrelated(), shape.unrelated), strict=True)
    )

    turns: list[ScriptedTurn] = []
    claims: list[PlannedClaim] = []
    known: list[tuple[Finding, str]] = []  # topics looked at so far, with their claim id
    for number in range(1, shape.turns + 1):
        if number in novel:
            finding = topics[len(claims)]
            planned = _first_look_claim(finding, len(claims) + 1, number)
            claims.append(planned)
            known.append((finding, planned.id))
            turns.append(
                ScriptedTurn(number, "first_look", "miss", finding.first_look, finding=finding.key)
            )
        elif number in follow_ups:
            turns.append(ScriptedTurn(number, "follow_up", "miss", follow_ups[number]))
        elif number in unrelated:
            turns.append(ScriptedTurn(number, "unrelated", "miss", unrelated[number]))
        else:
            finding, expected = rng.choice(known)
            text = rng.choice(finding.paraphrases)
            turns.append(
                ScriptedTurn(
                    number, "recall", "hit", text, expected_claim_id=expected, finding=finding.key
                )
            )
    return Day(fraction, turns, claims)


async def play_day(
    day: Day, db_path: StoreAddress
) -> tuple[list[Row], dict[str, Any], dict[str, Any]]:
    """Play one day on a fresh store: its rows, its summary and the store's receipt totals."""
    mouth = ReplayMouth()
    after: dict[int, list[PlannedClaim]] = {}
    for planned in day.claims:
        after.setdefault(planned.after_turn or 0, []).append(planned)
    async with StaffStore.open(db_path) as store:
        player = Player(store, mouth, CLOCK, session="workday")
        rows = []
        for turn in day.turns:
            rows.append(await player.play(turn))
            await player.store_claims(after.get(turn.number, []))
        receipts = await store_ledger(store)
    return rows, summarize(rows, mouth.calls), receipts


async def play(
    workdir: Path, seed: int, quick: bool, store_for: StoreFor | None = None
) -> ReplayOutput:
    """Run the workday at every novel fraction and return the spec and the ledger."""
    shape = QUICK if quick else FULL
    days = [script_day(seed, fraction, shape) for fraction in FRACTIONS]
    summaries: list[dict[str, Any]] = []
    receipts: list[dict[str, Any]] = []
    missed: list[dict[str, Any]] = []
    workday_rows: list[Row] = []
    for day in days:
        db_path = store_at(workdir, f"workday-{round(day.fraction * 100):02d}.sqlite", store_for)
        rows, summary, totals = await play_day(day, db_path)
        summaries.append({"novel_fraction": day.fraction, **summary})
        receipts.append({"novel_fraction": day.fraction, **totals})
        questions = {planned.id: planned.claim.question for planned in day.claims}
        missed += [
            {"novel_fraction": day.fraction, **miss} for miss in gold_misses(rows, questions)
        ]
        if day.fraction == FRACTIONS[0]:
            workday_rows = rows
    spec = {
        **spec_header("workday", seed, quick, CLOCK),
        "morning_weight": f"exp(-{MORNING} * (turn - 1) / turns)",
        "runs": [
            {
                "novel_fraction": day.fraction,
                "mix": day.mix(),
                "claims": [planned.spec() for planned in day.claims],
                "turns": [turn.spec() for turn in day.turns],
            }
            for day in days
        ],
    }
    ledger = {
        **ledger_header("workday", seed, quick),
        "summary": summaries[0],
        "summaries": summaries,
        "windows": windows(workday_rows, WINDOW),
        "window_size": WINDOW,
        "gold_misses": missed,
        "store_ledgers": receipts,
        "rows": workday_rows,
    }
    return ReplayOutput(spec, ledger)
