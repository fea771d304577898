"""build_working_set: the bounded prompt a miss sends to the model.

The system instruction, then the owner's claims relevant to the turn (marked as recalled
context, not as the user's words), then, for a step of a workflow, what its earlier runs
learned (the memory section, marked as the past and not an instruction), then the last few
messages of the session, then the agent's working state (the authoritative current values,
after everything a provider caches as a prefix; nothing when there is none), then the turn.
Never the whole transcript. Everything fits a token budget; what does not fit is cut at a
visible marker, dropping the oldest tail messages first, then the least relevant claims.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from ..errors import InputError
from ..models import Claim, Message, Turn, WorkingSet
from ..state.config import DEFAULT_AGENT
from ..state.config import DEFAULTS as STATE_DEFAULTS
from ..state.working import working_state_section
from ..store import StaffStore

DEFAULT_SYSTEM = (
    "You are a careful assistant. Recalled claims are verified findings from earlier work; "
    "use them when they answer the question and say so when they do not."
)
DEFAULT_BUDGET = 4_000
DEFAULT_TAIL = 8
DEFAULT_RECALL = 5
#: The smallest budget that can hold a question, an instruction and a visible cut marker.
MIN_BUDGET = 64
CUT_MARKER = "[... cut to fit the working-set budget ...]"

TokenCounter = Callable[[str], int]


class MemorySource(Protocol):
    """What `memory=` takes: a step's view of its workflow's memory (memory.StepMemory, from
    `WorkflowMemory.for_step`). Taken as a protocol, so the working set needs no import of
    the memory layer."""

    async def prompt_section(self, max_tokens: int, count: TokenCounter) -> str:
        """The section's text within `max_tokens` ("" when there is none)."""
        ...


def approximate_tokens(text: str) -> int:
    """Four characters a token, rounded up: a deliberately simple, provider-neutral estimate."""
    return (len(text) + 3) // 4


def _claim_line(claim: Claim) -> str:
    origin = [f"claim {claim.id[:12]}", f"source {claim.source}"]
    for label, value in (("agent", claim.agent), ("repository", claim.repository),
                         ("revision", claim.revision), ("job", claim.job_id)):  # fmt: skip
        if value:
            origin.append(f"{label} {value}")
    return f"- Q: {claim.question}\n  A: {claim.answer}\n  ({', '.join(origin)})"


def _fit(text: str, budget: int, count: TokenCounter) -> str:
    """Cut `text` to at most `budget` tokens, ending with the cut marker."""
    if count(text) <= budget:
        return text
    marker = "\n" + CUT_MARKER
    low, high = 0, len(text)
    while low < high:  # the longest prefix that fits with the marker
        middle = (low + high + 1) // 2
        if count(text[:middle] + marker) <= budget:
            low = middle
        else:
            high = middle - 1
    return text[:low] + marker if low else CUT_MARKER


async def build_working_set(
    store: StaffStore,
    turn: Turn,
    budget: int = DEFAULT_BUDGET,
    *,
    system: str = DEFAULT_SYSTEM,
    tail: int = DEFAULT_TAIL,
    recall: int = DEFAULT_RECALL,
    count: TokenCounter = approximate_tokens,
    state_bytes: int = STATE_DEFAULTS.section_max_bytes,
    memory: MemorySource | None = None,
) -> WorkingSet:
    """Assemble the bounded prompt for a miss, in a deterministic order, within `budget`.

    The working state of `turn.agent` (the default agent when None) takes at most
    `state_bytes` UTF-8 bytes and at most half of what the question and instruction leave;
    `state_bytes=0` leaves it out. `memory` (a workflow step's memory) adds its section, within
    its own budget and at most half of what the working state leaves.
    """
    if budget < MIN_BUDGET:
        raise InputError(f"a working-set budget must be at least {MIN_BUDGET} tokens")
    truncated = False
    # The turn itself is what was asked: it always goes in, cut only if it alone overflows.
    question = _fit(turn.text, max(budget // 2, 1), count)
    truncated |= question != turn.text
    # Room for the cut marker is kept aside, so a cut prompt still fits the budget.
    remaining = budget - count(question) - count(CUT_MARKER)

    system_text = _fit(system, max(remaining // 4, 1), count)
    truncated |= system_text != system
    remaining -= count(system_text)

    # Working state comes before recall and history in the budget: it is the authority on
    # current values. A byte is at most a character, so this many bytes fit this many tokens.
    state_text = ""
    if state_bytes > 0:
        room = min(state_bytes, 4 * max(remaining // 2, 0))
        state_text = await working_state_section(
            store, turn.owner, turn.agent or DEFAULT_AGENT, now=turn.now, max_bytes=room
        )
        remaining -= count(state_text)

    # What earlier runs of the workflow learned comes next: it is what the step was built to
    # read, and its own budget already bounds it.
    memory_text = ""
    if memory is not None and remaining > 1:
        memory_text = await memory.prompt_section(remaining // 2, count)
        remaining -= count(memory_text)

    recalled: list[Claim] = []
    recall_text = ""
    candidates = await store.related_claims(turn.owner, turn.text, limit=recall, now=turn.now)
    for claim in candidates:
        block = "Recalled claims (verified findings from earlier work, not the user's words):\n"
        lines = [_claim_line(c) for c in [*recalled, claim]]
        attempt = block + "\n".join(lines)
        if count(attempt) > remaining // 2:
            truncated = True
            break
        recalled.append(claim)
        recall_text = attempt
    if recall_text:
        remaining -= count(recall_text)

    history: list[Message] = []
    if turn.session is not None and tail > 0:
        session_id = await store.ensure_session(turn.owner, turn.session)
        recent = await store.recent_messages(session_id, limit=tail)
        for message in reversed(recent):  # newest first, so the oldest are the ones cut
            if count(message.content) > remaining:
                truncated = True
                if remaining > count(CUT_MARKER) + 8:  # room for a useful part of it
                    content = _fit(message.content, remaining, count)
                    history.append(Message(role=message.role, content=content))
                break
            history.append(message)
            remaining -= count(message.content)
        history.reverse()

    messages = [Message(role="system", content=system_text)]
    if recall_text:
        messages.append(Message(role="system", content=recall_text))
    if memory_text:
        messages.append(Message(role="system", content=memory_text))
    if truncated:
        messages.append(Message(role="system", content=CUT_MARKER))
    messages.extend(history)
    if state_text:
        messages.append(Message(role="system", content=state_text))
    messages.append(Message(role="user", content=question))
    return WorkingSet(
        messages=messages,
        tokens=sum(count(m.content) for m in messages),
        budget=budget,
        truncated=truncated,
        recalled_claim_ids=[c.id for c in recalled],
        tail_messages=len(history),
        working_state_bytes=len(state_text.encode("utf-8")),
        memory_tokens=count(memory_text) if memory_text else 0,
    )
