"""Correcting claims by hand: supersede with a new answer, undo a retraction, find the claims
that make a question `conflict`, and export claims as JSON Lines that import reads back.

A correction never rewrites a stored claim: a new answer is a new claim (its id is the hash of
what it says) and the old one is marked superseded by it, so the record of what was served
stays whole. Only the status of a claim changes here.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass

from ..errors import InputError
from ..models import Claim, ClaimStatus, NewClaim
from ..text.matching import normalize
from .async_store import StaffStore

#: Claims read per query while exporting or looking for conflicts.
_PAGE = 1000


async def supersede_claim(
    store: StaffStore, owner: str, claim_id: str, *, answer: str, question: str | None = None
) -> tuple[list[Claim], Claim]:
    """Store `answer` (and maybe a reworded `question`) as a new live claim that supersedes
    the owner's claim `claim_id`, and every other live claim that asks the same question
    (the same normalised words, repository and profile), so a `conflict` is settled in one
    step; return (the superseded claims, the new one). The new claim keeps the old provenance
    fields (agent, repository, revision, profile) and is a manual one: a person made it.
    """
    old = await store.get_claim(owner, claim_id)
    if old.status == "superseded":
        raise InputError(f"claim {old.id} is already superseded by {old.superseded_by}")
    fields = old.model_dump(include=set(NewClaim.model_fields))
    fields.update(answer=answer, source="manual", job_id=None, inputs_fingerprint=None)
    if question is not None:
        fields["question"] = question
    new = await store.ensure_claim(NewClaim.model_validate(fields))
    if new.id == old.id:
        raise InputError(f"claim {old.id} already says that: nothing to supersede")
    key = normalize(old.question).key
    same = [
        claim
        async for claim in iter_claims(store, owner, status="live")
        if claim.id != new.id
        and (claim.repository, claim.profile) == (old.repository, old.profile)
        and normalize(claim.question).key == key
    ]
    if old.status == "live" and all(claim.id != old.id for claim in same):
        same.append(old)  # expired or otherwise not listed as live: still recorded as replaced
    # One claim at a time: stopped midway, the new claim and an old one are both live and the
    # gate answers `conflict`, a miss, so no turn is served the old answer as the new one.
    superseded = [
        await store.set_claim_status(owner, claim.id, "superseded", superseded_by=new.id)
        for claim in same
    ]
    return superseded, new


async def unretract_claim(store: StaffStore, owner: str, claim_id: str) -> Claim:
    """Undo `retract`: the claim is served again (or, superseded before, stays superseded)."""
    claim = await store.get_claim(owner, claim_id)
    if claim.status != "retracted":
        raise InputError(f"claim {claim.id} is not retracted (it is {claim.status})")
    status: ClaimStatus = "superseded" if claim.superseded_by else "live"
    return await store.set_claim_status(owner, claim.id, status, superseded_by=claim.superseded_by)


@dataclass(frozen=True)
class Conflict:
    """Live claims that ask the same question (same words once normalised, same repository
    and profile) and give different answers: the gate misses with `conflict` on them."""

    question: str
    repository: str | None
    profile: str | None
    claims: list[Claim]


async def iter_claims(
    store: StaffStore, owner: str, *, status: ClaimStatus | None = None
) -> AsyncIterator[Claim]:
    """Every claim of the owner (of one status), newest first, read a page at a time."""
    offset = 0
    while True:
        page = await store.list_claims(owner, status=status, limit=_PAGE, offset=offset)
        for claim in page:
            yield claim
        if len(page) < _PAGE:
            return
        offset += len(page)


async def claim_conflicts(store: StaffStore, owner: str) -> list[Conflict]:
    """The owner's groups of live claims that answer one question differently.

    Questions count as the same when their normalised keys are equal: the gate's paraphrase
    matching may join more of them, so this lists the certain conflicts, not every one.
    """
    groups: dict[tuple[str, str | None, str | None], list[Claim]] = {}
    async for claim in iter_claims(store, owner, status="live"):
        key = (normalize(claim.question).key, claim.repository, claim.profile)
        groups.setdefault(key, []).append(claim)
    conflicts = []
    for (_, repository, profile), claims in groups.items():
        answers = {" ".join(claim.answer.split()).casefold() for claim in claims}
        if len(answers) > 1:
            conflicts.append(Conflict(claims[-1].question, repository, profile, claims))
    return conflicts


def claim_line(claim: Claim) -> str:
    """One claim as a line `claims import` reads back to the same claim (the same id)."""
    fields = claim.model_dump(mode="json", include=set(NewClaim.model_fields))
    return json.dumps(
        {name: value for name, value in fields.items() if value is not None},
        ensure_ascii=False,
        sort_keys=True,
    )
