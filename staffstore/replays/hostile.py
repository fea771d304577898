"""The hostile replay: turns built to tempt the gate into a wrong, stale or one-sided answer.

The store is filled before the first turn: live findings, findings past their expiry, findings
superseded by a newer revision, and pairs of live claims that answer one question differently.
Then 330 turns in seeded order: 90 paraphrases of live findings that must hit, and 240 that
must miss (follow-ups, changed requirements, a repository at a newer revision, stale findings,
conflicting claims, unrelated questions). The outcome of each is judged per category.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from ..models import NewClaim
from ..store import StaffStore
from .harness import (
    Clock,
    PlannedClaim,
    Player,
    ReplayError,
    ReplayMouth,
    ReplayOutput,
    ScriptedTurn,
    StoreFor,
    breakdown,
    gold_misses,
    job_claim,
    ledger_header,
    revision,
    spec_header,
    store_at,
    store_ledger,
    summarize,
)
from .pool import Finding, findings, follow_ups, unrelated

# A Saturday: the claims the turns are served from were made earlier that week (the live ones
# five days before), so a finding about "last week" or "last month" names the same week and month
# for the claim as for the turn. Made in another week, it would rightly miss as stale.
CLOCK = Clock(datetime(2025, 6, 14, 9, 0, tzinfo=UTC), timedelta(seconds=60))
GOLD_PER_FINDING = 3
# Every PIN_EVERY-th gold turn names the repository and the revision its claim was made at.
PIN_EVERY = 4


@dataclass(frozen=True)
class Mix:
    """How many turns of each category, and how many findings play each stale or split part."""

    paraphrase: int
    follow_up: int
    changed_requirement: int
    evolving_repository: int
    stale: int
    conflict: int
    unrelated: int
    superseded_findings: int
    conflict_findings: int
    ambiguous_findings: int  # of the conflict findings, those split by profile, not by job
    expired_findings: int

    def turns(self) -> dict[str, int]:
        return {
            "paraphrase": self.paraphrase,
            "follow_up": self.follow_up,
            "changed_requirement": self.changed_requirement,
            "evolving_repository": self.evolving_repository,
            "stale": self.stale,
            "conflict": self.conflict,
            "unrelated": self.unrelated,
        }


FULL = Mix(90, 40, 50, 30, 35, 30, 55, superseded_findings=6, conflict_findings=10,
           ambiguous_findings=2, expired_findings=9)  # fmt: skip
QUICK = Mix(18, 8, 10, 6, 7, 6, 11, superseded_findings=2, conflict_findings=2,
            ambiguous_findings=1, expired_findings=2)  # fmt: skip


@dataclass(frozen=True)
class Cast:
    """Which findings play which part, and the claims that put them in the store."""

    live: list[Finding]
    superseded: list[Finding]
    conflicted: list[Finding]
    expired: list[Finding]
    claims: list[PlannedClaim]
    serving: dict[str, PlannedClaim]  # finding key -> the claim a gold turn must get

    @property
    def conflict_ids(self) -> frozenset[str]:
        return frozenset(p.id for p in self.claims if p.role.startswith("conflict"))

    def conflict_pairs(self) -> list[list[str]]:
        """The ids of each conflicting pair, one list per finding."""
        pairs: dict[str, list[str]] = {}
        for planned in self.claims:
            if planned.role.startswith("conflict"):
                pairs.setdefault(planned.finding, []).append(planned.id)
        return list(pairs.values())


def cast(rng: random.Random, mix: Mix) -> Cast:
    """Deal the findings into parts and plan the claims, all before the first turn."""
    start = CLOCK.start
    with_other = [finding for finding in findings() if finding.other_answer]
    rng.shuffle(with_other)
    superseded = with_other[: mix.superseded_findings]
    conflicted = with_other[len(superseded) : len(superseded) + mix.conflict_findings]
    taken = {finding.key for finding in superseded + conflicted}
    rest = [finding for finding in findings() if finding.key not in taken]
    rng.shuffle(rest)
    expired, live = rest[: mix.expired_findings], rest[mix.expired_findings :]
    if len(conflicted) < mix.conflict_findings or len(live) < mix.paraphrase // GOLD_PER_FINDING:
        raise ReplayError("the pool has too few findings for this mix")

    claims: list[PlannedClaim] = []
    serving: dict[str, PlannedClaim] = {}

    def plan(finding: Finding, role: str, stored_at: datetime, claim: NewClaim) -> PlannedClaim:
        planned = PlannedClaim(claim, finding.key, role, stored_at)
        claims.append(planned)
        return planned

    for finding in expired:
        claim = job_claim(finding, len(claims) + 1, expires_at=start - timedelta(hours=6))
        plan(finding, "expired", start - timedelta(days=10), claim)
    for finding in superseded:
        plan(finding, "superseded", start - timedelta(days=9), job_claim(finding, len(claims) + 1))
    for index, finding in enumerate(live):
        # Some live findings carry an expiry still ahead: not yet stale, so they must serve.
        until = start + timedelta(days=30) if index % 4 == 3 else None
        claim = job_claim(finding, len(claims) + 1, expires_at=until)
        serving[finding.key] = plan(finding, "live", start - timedelta(days=5), claim)
    for index, finding in enumerate(conflicted):
        # Two jobs at one revision reached different answers; or, for the ambiguous ones, the
        # same question answered differently under two build profiles.
        ambiguous = index < mix.ambiguous_findings
        role = "conflict-ambiguous" if ambiguous else "conflict"
        profiles = ("default", "release") if ambiguous else (None, None)
        first = job_claim(finding, len(claims) + 1, profile=profiles[0])
        plan(finding, role, start - timedelta(days=4), first)
        other = finding.other_answer
        second = job_claim(finding, len(claims) + 1, answer=other, profile=profiles[1])
        plan(finding, role, start - timedelta(days=3), second)
    for finding in superseded:
        claim = job_claim(finding, len(claims) + 1, answer=finding.other_answer, generation=2)
        serving[finding.key] = plan(finding, "superseding", start - timedelta(days=2), claim)
    return Cast(live, superseded, conflicted, expired, claims, serving)


def _asked(findings: list[Finding]) -> list[tuple[Finding, str]]:
    """Every way the pool asks these findings' questions: the question itself and paraphrases."""
    return [(f, text) for f in findings for text in (f.question, *f.paraphrases)]


def _sample(rng: random.Random, pool: list[Any], count: int, what: str) -> list[Any]:
    if len(pool) < count:
        raise ReplayError(f"{count} {what} turns wanted, the pool has {len(pool)}")
    return rng.sample(pool, count)


def script(rng: random.Random, mix: Mix, parts: Cast) -> list[ScriptedTurn]:
    """The turns, each with its gold label, in seeded order."""
    gold_findings = parts.live[: mix.paraphrase // GOLD_PER_FINDING - len(parts.superseded)]
    turns: list[ScriptedTurn] = []
    gold_asks = [
        (finding, text)
        for finding in gold_findings + parts.superseded
        for text in rng.sample(finding.paraphrases, GOLD_PER_FINDING)
    ]
    for index, (finding, text) in enumerate(gold_asks):
        serving = parts.serving[finding.key]
        pinned = index % PIN_EVERY == PIN_EVERY - 1
        turns.append(
            ScriptedTurn(
                0, "paraphrase", "hit", text,
                expected_claim_id=serving.id,
                finding=finding.key,
                detail="superseded-newest" if finding in parts.superseded else None,
                repository=serving.claim.repository if pinned else None,
                revision=serving.claim.revision if pinned else None,
            )
        )  # fmt: skip

    changed = [(f, text) for f in parts.live for text in f.changed]
    for finding, text in _sample(rng, changed, mix.changed_requirement, "changed"):
        turns.append(ScriptedTurn(0, "changed_requirement", "miss", text, finding=finding.key))
    for finding, text in _sample(rng, _asked(parts.live), mix.evolving_repository, "evolving"):
        # The repository moved on: the turn names a newer revision than the claim's.
        turns.append(
            ScriptedTurn(
                0, "evolving_repository", "miss", text, finding=finding.key,
                repository=finding.repository, revision=revision(finding.key, 2),
            )
        )  # fmt: skip
    from_superseded = (mix.stale + 1) // 2
    for finding, text in _sample(rng, _asked(parts.superseded), from_superseded, "superseded"):
        # The turn names the old revision: only the superseded claim was made there.
        turns.append(
            ScriptedTurn(
                0, "stale", "miss", text, finding=finding.key, detail="superseded",
                repository=finding.repository, revision=revision(finding.key, 1),
            )
        )  # fmt: skip
    expired = _sample(rng, _asked(parts.expired), mix.stale - from_superseded, "expired")
    for finding, text in expired:
        turns.append(ScriptedTurn(0, "stale", "miss", text, finding=finding.key, detail="expired"))
    ambiguous = parts.conflicted[: mix.ambiguous_findings]
    for finding, text in _sample(rng, _asked(parts.conflicted), mix.conflict, "conflict"):
        detail = "ambiguous" if finding in ambiguous else "conflict"
        turns.append(ScriptedTurn(0, "conflict", "miss", text, finding=finding.key, detail=detail))
    for text in _sample(rng, list(follow_ups()), mix.follow_up, "follow-up"):
        turns.append(ScriptedTurn(0, "follow_up", "miss", text))
    for text in _sample(rng, list(unrelated()), mix.unrelated, "unrelated"):
        turns.append(ScriptedTurn(0, "unrelated", "miss", text))

    rng.shuffle(turns)
    return [replace(turn, number=number) for number, turn in enumerate(turns, start=1)]


async def play(
    workdir: Path, seed: int, quick: bool, store_for: StoreFor | None = None
) -> ReplayOutput:
    """Run the hostile replay in `workdir` and return its spec and ledger."""
    mix = QUICK if quick else FULL
    rng = random.Random(f"hostile:{seed}")
    parts = cast(rng, mix)
    turns = script(rng, mix, parts)
    mouth = ReplayMouth()
    async with StaffStore.open(store_at(workdir, "hostile.sqlite", store_for)) as store:
        player = Player(store, mouth, CLOCK, session="hostile", conflicted=parts.conflict_ids)
        await player.store_claims(parts.claims)
        rows = [await player.play(turn) for turn in turns]
        receipts = await store_ledger(store)
    questions = {planned.id: planned.claim.question for planned in parts.claims}
    spec = {
        **spec_header("hostile", seed, quick, CLOCK),
        "mix": mix.turns(),
        "claims": [planned.spec() for planned in parts.claims],
        "conflicts": parts.conflict_pairs(),
        "turns": [turn.spec() for turn in turns],
    }
    ledger = {
        **ledger_header("hostile", seed, quick),
        "summary": summarize(rows, mouth.calls),
        "categories": breakdown(rows, "category"),
        "details": breakdown(rows, "detail"),
        "gold_misses": gold_misses(rows, questions),
        "store_ledger": receipts,
        "rows": rows,
    }
    return ReplayOutput(spec, ledger)
