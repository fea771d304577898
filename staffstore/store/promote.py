"""promote_receipt: make a verified claim of an answer the proxy paid for.

A chat answer never becomes a claim by itself (see mouth.py): a person or a job that has
checked it promotes it, by receipt id, from the CLI (`staffstore claims promote`) or the
proxy's admin endpoint. The receipt holds the question and the answer; the claim keeps the
model that gave it as its agent, so its provenance is on record, and the paid call it came
from (with that call's cost), so the hits it serves can say what they saved.
"""

from __future__ import annotations

from datetime import datetime

from ..errors import InputError
from ..models import Claim, NewClaim, Receipt
from .async_store import StaffStore
from .sync_store import PaidOrigin


def promotable(receipt: Receipt) -> bool:
    """Whether a receipt carries a paid answer: a model answered it, or it repeated one."""
    paid = receipt.status == "ok" or receipt.reason == "exact_repeat"
    return paid and bool(receipt.question) and bool(receipt.answer)


async def promote_receipt(
    store: StaffStore,
    owner: str,
    receipt_id: str,
    *,
    question: str | None = None,
    answer: str | None = None,
    agent: str | None = None,
    repository: str | None = None,
    revision: str | None = None,
    profile: str | None = None,
    expires_at: datetime | None = None,
    now: datetime | None = None,
) -> Claim:
    """Store the answer of the owner's receipt as a live claim (once: promoting again is a no-op).

    `question` and `answer` replace the recorded ones, for a person who tidied them up.
    Raises NotFoundError for an unknown receipt and InputError for one with no paid answer.
    """
    receipt = await store.get_receipt(owner, receipt_id)
    if not promotable(receipt):
        raise InputError(
            f"receipt {receipt_id!r} has no paid answer to promote "
            f"(status {receipt.status}, reason {receipt.reason})"
        )
    assert receipt.question is not None and receipt.answer is not None
    claim = NewClaim(
        owner=owner,
        question=question if question is not None else receipt.question,
        answer=answer if answer is not None else receipt.answer,
        agent=agent if agent is not None else receipt.model,
        source="chat",
        repository=repository,
        revision=revision,
        profile=profile,
        expires_at=expires_at,
    )
    stored = await store.ensure_claim(claim, now=now)
    origin = paid_origin(receipt)
    if origin is not None:
        await store.ensure_claim_origin(owner, stored.id, origin)
    return stored


def paid_origin(receipt: Receipt) -> PaidOrigin | None:
    """The paid call behind a promotable receipt: the receipt itself, or for an exact repeat
    the paid receipt whose answer it repeated (None when a repeat recorded none)."""
    if receipt.status == "ok":
        return PaidOrigin(receipt.id, receipt.cost_usd)
    if receipt.served_from is None:
        return None
    return PaidOrigin(receipt.served_from, receipt.avoided_cost_usd)
