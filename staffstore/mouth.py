"""ensure_mouth: one turn end to end, with a receipt whatever happens.

Hit: the stored answer, no model call, a receipt with inference_avoided=True. Miss: the bounded
working set, exactly one call of `chat`, the exchange appended to the session, a receipt with
the provider's usage (None where it did not say). A failed call is an attempt and is recorded
as one; a missing API key is not, and is recorded as not attempted. A blank question is
refused before the gate and the model (a "rejected" receipt, nothing sent): there is nothing to
pay for. A chat answer is never turned into a claim here: claims are verified work, stored by
a job, an import or on purpose.

With a CachePolicy (`staffstore ask` and `Staff.ask` pass one; the replays do not), a paid
answer is also kept, in the table the proxy keeps its answers in, and an exact repeat of the
turn is served from it with a zero-call receipt (reason `exact_repeat`), as the proxy serves
an exact repeat of a request. What makes a repeat exact is `repeat_key`. A context-free turn
(its prompt is the system instruction and the question, nothing recalled: see context_key)
keeps its question beside its answer, and a reworded question asked under the same context is
served that answer when the gate accepts it as it would accept a claim (gate/kept_reuse.py;
reason `exact` or `paraphrase`, source `kept_answer`), unless the policy says `paraphrase=False`.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from .errors import UpstreamError
from .gate import KeptCandidates, kept_candidates, query_first
from .gate.kept_reuse import prompt_to_keep
from .gate.relative_time import same_period
from .identity import content_hash
from .models import (
    ChatReply,
    Decision,
    KeptFrom,
    Message,
    Receipt,
    Role,
    Turn,
    TurnResult,
    WorkingSet,
)
from .state.config import DEFAULT_AGENT
from .state.working import working_state_section
from .store import StaffStore
from .store.sync_store import KeptAnswer, TurnRecord
from .working_set import DEFAULT_BUDGET, DEFAULT_SYSTEM, Budgets, build_working_set, token_counter
from .working_set.story import refresh_story

ChatFn = Callable[[list[Message]], Awaitable[ChatReply]]


class TurnFailed(Exception):
    """Carries the receipt of a turn whose model call failed, with the cause attached."""

    def __init__(self, cause: UpstreamError, result: TurnResult) -> None:
        super().__init__(str(cause))
        self.cause = cause
        self.result = result


def new_receipt_id() -> str:
    return "rcpt_" + uuid.uuid4().hex[:20]


#: The longest `ttl` or `max_age`, in seconds (100 years), as the proxy's `cache` controls:
#: beyond it a date overflows.
MAX_KEEP_SECONDS = 100 * 365 * 24 * 3600
#: The kept-answer namespace of turns answered here. The proxy's default namespace is "" too;
#: the two never serve each other, because their keys hash different things (see repeat_key).
ASK_NAMESPACE = ""


@dataclass(frozen=True)
class CachePolicy:
    """How a turn uses kept answers: the proxy's LiteLLM-style `cache` controls, for ask.

    `serve=False` looks nothing up, neither a kept answer nor a claim, and asks the model (the
    proxy's `no-cache`); `keep=False` keeps no new answer (the proxy's `no-store`, for kept
    answers only: the receipt is written as always). `ttl`: seconds a kept answer may serve
    (None: until replaced). `max_age`: the oldest kept answer to serve, in seconds (`s-maxage`).
    `paraphrase=False` serves a kept answer for an exact repeat only, never for a reworded
    question (the proxy's `no-paraphrase`; the answer is still kept for others).
    """

    serve: bool = True
    keep: bool = True
    ttl: float | None = None
    max_age: float | None = None
    paraphrase: bool = True

    @classmethod
    def from_flags(
        cls,
        *,
        refresh: bool = False,
        no_cache: bool = False,
        ttl: float | None = None,
        max_age: float | None = None,
        no_paraphrase: bool = False,
    ) -> CachePolicy:
        """The policy of `ask --refresh/--no-cache/--ttl/--max-age/--no-paraphrase` (and
        `Staff.ask`'s same arguments), defined once: refresh serves nothing and keeps the new
        answer; no_cache serves nothing and keeps nothing; no_paraphrase serves no kept answer
        for a reworded question."""
        return cls(
            serve=not (refresh or no_cache), keep=not no_cache, ttl=ttl, max_age=max_age,
            paraphrase=not no_paraphrase,
        )  # fmt: skip


async def repeat_key(
    store: StaffStore,
    turn: Turn,
    model: str,
    budget: int | Budgets,
    working_set: WorkingSet,
    system: str | None = None,
) -> str:
    """The key under which a turn's paid answer is kept, and an exact repeat finds it.

    An exact repeat is the same owner (the table's own column), model, question text (exactly,
    not normalised: a paraphrase is the gate's business and comes only from claims), session
    name, agent, repository, revision and working-set budget, asked while the agent's working
    state and the claims its prompt recalls are what they were. The working state is in the
    key as the proxy puts it in a bounded request's key: the prompt carries it, so an answer
    given under other values must not serve (a changed stop-loss is a different question). The
    recalled claims' ids are in it because a claim stored, corrected or retracted since
    changes what the model was told, and so is a system instruction given in place of the
    default (`ask --system`). The session's tail is not, as in the proxy's bounded mode:
    it grows with every turn, so keying on it would make the repeat of a question in its own
    session never repeat; `--refresh` asks again where the conversation has moved on.
    """
    section = await working_state_section(
        store, turn.owner, turn.agent or DEFAULT_AGENT, now=turn.now
    )
    asked: dict[str, object] = {
        "model": model,
        "question": turn.text,
        "session": turn.session,
        "agent": turn.agent or DEFAULT_AGENT,
        "repository": turn.repository,
        "revision": turn.revision,
        # A Budgets with no part of its own keys as its bare total, as an int budget always has.
        "budget": budget.key() if isinstance(budget, Budgets) else budget,
    }
    if system is not None:  # only then: the answers kept before it keep their keys
        asked["system"] = system
    return content_hash(
        {
            "ask": asked,
            "recalled_claims": working_set.recalled_claim_ids,
            "working_state": section,
        }
    )


#: The parts of a context-free prompt: the system instruction and the question, nothing else.
_CONTEXT_FREE_PARTS = frozenset({"system", "turn"})


def context_key(
    turn: Turn,
    model: str,
    budget: int | Budgets,
    working_set: WorkingSet,
    system: str | None = None,
) -> str | None:
    """The context key of a context-free turn, else None: the hash of everything that shaped
    its answer besides its question (model, system instruction, agent, repository, revision,
    budget). Context-free: the prompt sent holds the system instruction and the question and
    nothing else (no session tail, story or vault, no recalled claim, no working state or
    memory), uncut. A question asked under another key is asked under other conditions."""
    sent = {part for part, tokens in working_set.part_tokens.items() if tokens}
    if working_set.truncated or working_set.recalled_claim_ids or sent - _CONTEXT_FREE_PARTS:
        return None
    return content_hash(
        {
            "ask_context": {
                "model": model,
                "system": DEFAULT_SYSTEM if system is None else system,
                "agent": turn.agent or DEFAULT_AGENT,
                "repository": turn.repository,
                "revision": turn.revision,
                "budget": budget.key() if isinstance(budget, Budgets) else budget,
            }
        }
    )


async def ensure_mouth(
    store: StaffStore,
    turn: Turn,
    chat: ChatFn,
    *,
    model: str | None = None,
    budget: int | Budgets = DEFAULT_BUDGET,
    raise_on_error: bool = False,
    cache: CachePolicy | None = None,
    system: str | None = None,
) -> TurnResult:
    """Answer one turn: from a claim when one answers it, else by one call of `chat`.

    `budget` is the prompt's tokens, or Budgets per part (a role's: working_set.ROLE_BUDGETS);
    tokens are counted with `model`'s tokenizer when one is installed (working_set.tokens).
    `system` replaces the working set's default system instruction on a miss (a claim's
    answer is served as stored, whatever it asks, as the proxy serves one).

    With `cache` (and a `model`, which is part of what makes a repeat exact), an exact repeat
    of a paid turn is answered from its kept answer first, and a finished paid answer is kept.
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
    # Without a model name nothing is kept or served: a repeat could not tell which model
    # answered, and another model's answer is not an exact repeat.
    keyed = cache is not None and model is not None and (cache.serve or cache.keep)
    instruction = DEFAULT_SYSTEM if system is None else system

    async def prompt() -> WorkingSet:
        if turn.session is not None:
            # A long session's story is kept current extractively (never over the client's),
            # so the decisions its tail no longer shows still reach the model on a miss.
            await refresh_story(store, turn.owner, turn.session, now=turn.now)
        return await build_working_set(
            store, turn, budget, system=instruction, count=token_counter(model)
        )

    working_set = await prompt() if keyed else None
    key = context = None
    if keyed:
        assert model is not None and working_set is not None
        key = await repeat_key(store, turn, model, budget, working_set, system)
        context = context_key(turn, model, budget, working_set, system)
    if cache is not None and not cache.serve:
        decision = Decision(outcome="miss", reason="no_cache")
    else:
        # The exact repeat first, as the proxy does: it is certain where the gate judges, it
        # is the answer this owner already paid for and was given, and it costs one lookup by
        # primary key. A claim stored since then does not lose to it: the claims the prompt
        # recalls are in the key, so the repeat misses and the gate below serves the claim.
        kept = None
        if key is not None and cache is not None:
            kept = await store.kept_answer(
                turn.owner, ASK_NAMESPACE, key, max_age=cache.max_age, now=turn.now
            )
        if kept is not None and not same_period(turn.text, kept.created_at, started):
            kept = None  # "what failed today?" kept yesterday answers another day's question
        if kept is not None:
            decision = Decision(outcome="hit", reason="exact_repeat", answer=kept.answer)
            return await _serve_kept(store, turn, kept, decision, finish, session_id)
        decision = await query_first(store, turn)
        if not decision.hit and context is not None and cache is not None and cache.paraphrase:
            # No claim answers it: a paid answer to a reworded form of it, asked under the
            # same context, may, when the gate accepts its question as it would a claim's.
            found = context
            prompts = await store.run_read(
                lambda sync: kept_candidates(
                    sync, turn, ASK_NAMESPACE, found, max_age=cache.max_age
                )
            )
            # Scored as query_first scores its second look: on a thread, no read held.
            reused, kept = (
                await asyncio.to_thread(prompts.decide)
                if isinstance(prompts, KeptCandidates)
                else (prompts, None)
            )
            if kept is not None:
                return await _serve_kept(store, turn, kept, reused, finish, session_id)
    if decision.hit:
        assert decision.answer is not None
        # The paid call the claim was promoted from prices what this hit saved (None: a
        # job's or a person's claim, whose cost is unknown).
        origin = (
            await store.claim_origin(turn.owner, decision.claim_id)
            if decision.claim_id is not None
            else None
        )
        receipt = finish(
            outcome="hit", reason=decision.reason, status="hit", model=None,
            inference_avoided=True, inference_attempted=False, session_id=session_id,
            claim_id=decision.claim_id, answer=decision.answer,
            served_from=origin.receipt_id if origin else None,
            avoided_cost_usd=origin.cost_usd if origin else None, source="claim",
        )  # fmt: skip
        await _record(store, receipt, session_id, turn, decision.answer)
        return TurnResult(answer=decision.answer, decision=decision, receipt=receipt)

    if working_set is None:
        working_set = await prompt()
    try:
        reply = await chat(list(working_set.messages))
    except UpstreamError as error:
        receipt = finish(
            outcome="miss", reason=decision.reason, status=error.status, model=model,
            inference_avoided=False, inference_attempted=error.attempted,
            session_id=session_id, error=str(error), prompt_parts=working_set.part_tokens,
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
            prompt_parts=working_set.part_tokens,
        )  # fmt: skip
        await asyncio.shield(store.add_receipt(receipt))
        raise

    receipt = finish(
        outcome="miss", reason=decision.reason, status="ok", model=reply.model or model,
        prompt_tokens=reply.prompt_tokens, completion_tokens=reply.completion_tokens,
        cost_usd=reply.cost_usd, inference_avoided=False, inference_attempted=True,
        session_id=session_id, answer=reply.text, prompt_parts=working_set.part_tokens,
    )  # fmt: skip
    kept_answer = None
    if key is not None and cache is not None and cache.keep and _finished(reply):
        kept_answer = KeptAnswer(
            owner=turn.owner, namespace=ASK_NAMESPACE, request_hash=key, receipt_id=receipt.id,
            model=receipt.model, answer=reply.text, created_at=started,
            expires_at=started + timedelta(seconds=cache.ttl) if cache.ttl is not None else None,
            prompt=prompt_to_keep(turn.text, context),
        )  # fmt: skip
    # The receipt, the session's messages, the kept answer and the recalls in one
    # transaction: a kept answer never exists without the receipt of the call that paid for it.
    messages: list[tuple[Role, str]] = (
        [("user", turn.text), ("assistant", reply.text)] if session_id is not None else []
    )
    record = TurnRecord(
        receipt, session_id, messages, kept_answer, recalled=working_set.vault_message_ids
    )
    await store.record_turns([record], now=turn.now)
    return TurnResult(
        answer=reply.text, decision=decision, receipt=receipt, working_set=working_set
    )


def _finished(reply: ChatReply) -> bool:
    """Whether an answer may be kept: whole text that ended by itself (finish reason "stop"),
    as the proxy keeps; an answer cut at its length limit is not the answer to repeat."""
    return bool(reply.text) and reply.finish_reason == "stop"


async def _serve_kept(
    store: StaffStore,
    turn: Turn,
    kept: KeptAnswer,
    decision: Decision,
    finish: Callable[..., Receipt],
    session_id: str | None,
) -> TurnResult:
    """Serve a kept answer (an exact repeat, or a reworded question the gate accepted): a
    zero-call receipt naming the paid receipt it reuses and what that call cost."""
    receipt = finish(
        outcome="hit", reason=decision.reason, status="hit", model=None,
        inference_avoided=True, inference_attempted=False, session_id=session_id,
        answer=kept.answer, served_from=kept.receipt_id, avoided_cost_usd=kept.cost_usd,
        source="kept_answer",
    )  # fmt: skip
    await _record(store, receipt, session_id, turn, kept.answer)
    kept_from = KeptFrom(receipt_id=kept.receipt_id, model=kept.model, kept_at=kept.created_at)
    hit = decision.model_copy(update={"answer": kept.answer})
    return TurnResult(answer=kept.answer, decision=hit, receipt=receipt, kept_from=kept_from)


async def _record(
    store: StaffStore, receipt: Receipt, session_id: str | None, turn: Turn, answer: str
) -> None:
    if session_id is not None:
        await store.append_messages(
            session_id, [("user", turn.text), ("assistant", answer)], now=turn.now
        )
    await store.add_receipt(receipt)


__all__ = [
    "ASK_NAMESPACE",
    "MAX_KEEP_SECONDS",
    "CachePolicy",
    "ChatFn",
    "TurnFailed",
    "context_key",
    "ensure_mouth",
    "new_receipt_id",
    "repeat_key",
]
