"""ensure_mouth: one turn end to end, with a receipt whatever happens.

Hit: the stored answer, no model call, a receipt with inference_avoided=True. Miss: the bounded
working set, exactly one call of `chat`, the exchange appended to the session, a receipt with
the provider's usage (None where it did not say). A failed call is an attempt and is recorded
as one; a missing API key is not, and is recorded as not attempted. A blank question is
refused before the gate and the model (a "rejected" receipt, nothing sent): there is nothing to
pay for. A chat answer is never turned into a claim here: claims are verified work, stored by
a job, an import or on purpose.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta

from .errors import UpstreamError
from .gate import query_first
from .models import ChatReply, Decision, Message, Receipt, Turn, TurnResult
from .store import StaffStore
from .working_set import DEFAULT_BUDGET, build_working_set

ChatFn = Callable[[list[Message]], Awaitable[ChatReply]]


class TurnFailed(Exception):
    """Carries the receipt of a turn whose model call failed, with the cause attached."""

    def __init__(self, cause: UpstreamError, result: TurnResult) -> None:
        super().__init__(str(cause))
        self.cause = cause
        self.result = result


def new_receipt_id() -> str:
    return "rcpt_" + uuid.uuid4().hex[:20]


async def ensure_mouth(
    store: StaffStore,
    turn: Turn,
    chat: ChatFn,
    *,
    model: str | None = None,
    budget: int = DEFAULT_BUDGET,
    raise_on_error: bool = False,
) -> TurnResult:
    """Answer one turn: from a claim when one answers it, else by one call of `chat`.

    On a failed call the result has answer None and a receipt with the error status; with
    `raise_on_error` a TurnFailed carrying that result is raised instead.
    """
    started = turn.now or datetime.now(UTC)
    clock = time.perf_counter()

    def finish(**fields: object) -> Receipt:
        elapsed_ms = (time.perf_counter() - clock) * 1000.0
        return Receipt(
            id=new_receipt_id(),
            owner=turn.owner,
            latency_ms=round(elapsed_ms, 3),
            started_at=started,
            finished_at=started + timedelta(milliseconds=elapsed_ms),
            question=turn.text,
            **fields,  # type: ignore[arg-type]
        )

    if not turn.text.strip():
        # Nothing to ask: a model would be paid to answer an empty prompt.
        receipt = finish(
            outcome="miss", reason="empty", status="rejected", model=None,
            inference_avoided=False, inference_attempted=False,
            error="the question is empty: nothing was asked",
        )  # fmt: skip
        await store.add_receipt(receipt)
        return TurnResult(
            answer=None, decision=Decision(outcome="miss", reason="empty"), receipt=receipt
        )

    session_id = (
        await store.ensure_session(turn.owner, turn.session, now=turn.now)
        if turn.session is not None
        else None
    )
    decision = await query_first(store, turn)
    if decision.hit:
        assert decision.answer is not None
        receipt = finish(
            outcome="hit", reason=decision.reason, status="hit", model=None,
            inference_avoided=True, inference_attempted=False, session_id=session_id,
            claim_id=decision.claim_id, answer=decision.answer,
        )  # fmt: skip
        await _record(store, receipt, session_id, turn, decision.answer)
        return TurnResult(answer=decision.answer, decision=decision, receipt=receipt)

    working_set = await build_working_set(store, turn, budget)
    try:
        reply = await chat(list(working_set.messages))
    except UpstreamError as error:
        receipt = finish(
            outcome="miss", reason=decision.reason, status=error.status, model=model,
            inference_avoided=False, inference_attempted=error.attempted,
            session_id=session_id, error=str(error),
        )  # fmt: skip
        await store.add_receipt(receipt)
        result = TurnResult(
            answer=None, decision=decision, receipt=receipt, working_set=working_set
        )
        if raise_on_error:
            raise TurnFailed(error, result) from error
        return result
    except asyncio.CancelledError:
        receipt = finish(
            outcome="miss", reason=decision.reason, status="cancelled", model=model,
            inference_avoided=False, inference_attempted=True, session_id=session_id,
        )  # fmt: skip
        await asyncio.shield(store.add_receipt(receipt))
        raise

    receipt = finish(
        outcome="miss", reason=decision.reason, status="ok", model=reply.model or model,
        prompt_tokens=reply.prompt_tokens, completion_tokens=reply.completion_tokens,
        cost_usd=reply.cost_usd, inference_avoided=False, inference_attempted=True,
        session_id=session_id, answer=reply.text,
    )  # fmt: skip
    await _record(store, receipt, session_id, turn, reply.text)
    return TurnResult(
        answer=reply.text, decision=decision, receipt=receipt, working_set=working_set
    )


async def _record(
    store: StaffStore, receipt: Receipt, session_id: str | None, turn: Turn, answer: str
) -> None:
    if session_id is not None:
        await store.append_messages(
            session_id, [("user", turn.text), ("assistant", answer)], now=turn.now
        )
    await store.add_receipt(receipt)


__all__ = ["ChatFn", "TurnFailed", "ensure_mouth", "new_receipt_id"]
