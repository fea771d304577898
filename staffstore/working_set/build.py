"""build_working_set: the bounded prompt a miss sends to the model.

The system instruction, then the owner's claims relevant to the turn (marked as recalled
context, not as the user's words), then, for a step of a workflow, what its earlier runs
learned (the memory section, marked as the past and not an instruction), then the session's
story (story.py) when it has one, then the few older messages of the session that match the
turn (vault hits: vault.py), then the last few messages of the session, then the agent's
working state (the authoritative current values, after everything a provider caches as a
prefix; nothing when there is none), then the turn. Never the whole transcript. Everything fits
a token budget, and each part fits its own when it has one (budgets.py); what does not fit is
cut at a visible marker, dropping the oldest tail messages first, then the least relevant
claims. The result records the tokens of each part.
"""

from __future__ import annotations

from typing import Protocol

from ..errors import InputError
from ..models import Claim, Message, Turn, WorkingSet
from ..state.config import DEFAULT_AGENT
from ..state.config import DEFAULTS as STATE_DEFAULTS
from ..state.working import working_state_section
from ..store import StaffStore
from .budgets import MIN_BUDGET, Budgets, Part
from .extract import settled_by
from .rungs import HANDLES_HEADER, Handle, handle_line, handles
from .story import STORY_HEADER, current_story
from .tokens import TokenCounter, approximate_tokens, counter_name
from .vault import DEFAULT_HITS, VAULT_HEADER, hit_line, vault_hits

DEFAULT_SYSTEM = (
    "You are a careful assistant. Recalled claims are verified findings from earlier work; "
    "use them when they answer the question and say so when they do not."
)
DEFAULT_BUDGET = 4_000
DEFAULT_TAIL = 8
DEFAULT_RECALL = 5
CUT_MARKER = "[... cut to fit the working-set budget ...]"


class MemorySource(Protocol):
    """What `memory=` takes: a step's view of its workflow's memory (memory.StepMemory, from
    `WorkflowMemory.for_step`). Taken as a protocol, so the working set needs no import of
    the memory layer."""

    async def prompt_section(self, max_tokens: int, count: TokenCounter) -> str:
        """The section's text within `max_tokens` ("" when there is none)."""
        ...


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
    if low:
        return text[:low] + marker
    return CUT_MARKER if count(CUT_MARKER) <= budget else ""  # never over the budget


class _Room:
    """What is left of the whole budget, and each part's ceiling within it."""

    def __init__(self, budgets: Budgets, left: int) -> None:
        self.budgets = budgets
        self.left = left

    def for_part(self, part: Part, share: int) -> int:
        """The most tokens `part` may take now: its own budget when it has one, else `share`
        (its customary share of what is left), never more than what is left."""
        ceiling = self.budgets.part(part)
        return max(min(share if ceiling is None else ceiling, self.left), 0)


async def build_working_set(
    store: StaffStore,
    turn: Turn,
    budget: int | Budgets = DEFAULT_BUDGET,
    *,
    system: str = DEFAULT_SYSTEM,
    tail: int = DEFAULT_TAIL,
    recall: int = DEFAULT_RECALL,
    vault: int = DEFAULT_HITS,
    count: TokenCounter = approximate_tokens,
    state_bytes: int = STATE_DEFAULTS.section_max_bytes,
    memory: MemorySource | None = None,
) -> WorkingSet:
    """Assemble the bounded prompt for a miss, in a deterministic order, within `budget`.

    `budget` is the whole prompt's tokens, or Budgets with a ceiling per part (a role's
    defaults: budgets.ROLE_BUDGETS); no part ever exceeds its ceiling, nor the prompt its total.
    The working state of `turn.agent` (the default agent when None) takes at most
    `state_bytes` UTF-8 bytes and at most half of what the question and instruction leave;
    `state_bytes=0` leaves it out. In a session, at most `vault` of its messages older than
    the tail that match the turn come as vault hits (vault.py; `vault=0`: none). `memory` (a
    workflow step's memory) adds its section, within its own budget and at most half of what
    the working state leaves.
    """
    budgets = budget if isinstance(budget, Budgets) else None
    total = budget.total if isinstance(budget, Budgets) else budget
    if total < MIN_BUDGET:
        raise InputError(f"a working-set budget must be at least {MIN_BUDGET} tokens")
    budgets = budgets or Budgets(total=total)
    truncated = False
    # The turn itself is what was asked: it always goes in, cut only if it alone overflows.
    question = _fit(turn.text, max(total // 2, 1), count)
    truncated |= question != turn.text
    # Room for the cut marker is kept aside, so a cut prompt still fits the budget.
    room = _Room(budgets, total - count(question) - count(CUT_MARKER))

    system_room = room.for_part("system", max(room.left // 4, 1))
    system_text = _fit(system, system_room, count) if system_room > 0 else ""
    truncated |= system_text != system
    room.left -= count(system_text) if system_text else 0

    # Working state comes before recall and history in the budget: it is the authority on
    # current values.
    state_text = ""
    if state_bytes > 0:
        state_room = room.for_part("state", room.left // 2)
        state_text = await _state_within(store, turn, state_bytes, state_room, count)
        room.left -= count(state_text)

    # What earlier runs of the workflow learned comes next: it is what the step was built to
    # read, and its own budget already bounds it.
    memory_text = ""
    if memory is not None and room.left > 1:
        memory_room = room.for_part("memory", room.left // 2)
        memory_text = await memory.prompt_section(memory_room, count) if memory_room else ""
        if count(memory_text) > memory_room:  # a section over its budget is not sent at all
            memory_text, truncated = "", True
        room.left -= count(memory_text)

    # The session's story: what it decided, which the last few messages may no longer say.
    session_id = (
        await store.ensure_session(turn.owner, turn.session) if turn.session is not None else None
    )
    story_text = ""
    story_body = await current_story(store, session_id) if session_id is not None else ""
    if story_body:
        story_room = room.for_part("story", room.left // 3)
        whole = STORY_HEADER + "\n" + story_body
        story_text = _fit(whole, story_room, count) if story_room > 0 else ""
        truncated |= story_text != whole
        room.left -= count(story_text) if story_text else 0

    recalled: list[Claim] = []
    recall_text = ""
    claims_room = room.for_part("claims", room.left // 2)
    candidates = await store.related_claims(turn.owner, turn.text, limit=recall, now=turn.now)
    for claim in candidates:
        block = "Recalled claims (verified findings from earlier work, not the user's words):\n"
        lines = [_claim_line(c) for c in [*recalled, claim]]
        attempt = block + "\n".join(lines)
        if count(attempt) > claims_room:
            truncated = True
            break
        recalled.append(claim)
        recall_text = attempt
    if recall_text:
        room.left -= count(recall_text)

    # The vault's room is set aside before the tail takes the rest: older messages found by
    # the turn's words are what the last few messages no longer carry.
    vault_room = room.for_part("vault", room.left // 4) if session_id is not None and vault else 0
    history: list[Message] = []
    tail_cut = False
    if session_id is not None and tail > 0:
        tail_room = room.for_part("tail", room.left - vault_room)
        recent = await store.recent_messages(session_id, limit=tail)
        for message in reversed(recent):  # newest first, so the oldest are the ones cut
            if count(message.content) > tail_room:
                truncated = tail_cut = True
                if tail_room > count(CUT_MARKER) + 8:  # room for a useful part of it
                    content = _fit(message.content, tail_room, count)
                    history.append(Message(role=message.role, content=content))
                    tail_room -= count(content)
                break
            history.append(message)
            tail_room -= count(message.content)
        history.reverse()
        room.left -= sum(count(m.content) for m in history)

    # Last wins: what the tail states settles its subjects for every older message shown.
    settled = settled_by([m.content for m in history])
    faded_text, chosen = "", list[Handle]()
    if session_id is not None and tail > 0 and not tail_cut:
        # The messages just older than the tail, faded to their handles (rungs.py), in what
        # the tail's own budget left; the oldest are the ones that do not fit.
        handles_room = room.for_part("tail", room.left - vault_room)
        if budgets.tail is not None:
            handles_room = min(handles_room, budgets.tail - sum(count(m.content) for m in history))
        faded = await handles(store, session_id, after_tail=len(history), settled=settled)
        for item in reversed(faded):  # newest first, so the oldest are the ones left out
            attempt = HANDLES_HEADER + "\n" + "\n".join(handle_line(h) for h in [item, *chosen])
            if count(attempt) > handles_room:
                break
            chosen.insert(0, item)
            faded_text = attempt
        room.left -= count(faded_text) if faded_text else 0

    vault_text, vault_ids = "", list[int]()
    if session_id is not None and vault_room > 0:
        found = await vault_hits(
            store, session_id, turn.text, skip_latest=len(history), limit=vault,
            settled=settled, shown={h.message_id for h in chosen},
        )  # fmt: skip
        for hit in found:  # best first: the hits that fit, in the order they rank
            attempt = (vault_text or VAULT_HEADER) + "\n" + hit_line(hit)
            if count(attempt) > min(vault_room, room.left):
                truncated = True
                break
            vault_text = attempt
            vault_ids.append(hit.message_id)
        room.left -= count(vault_text) if vault_text else 0

    messages = [Message(role="system", content=system_text)] if system_text else []
    if recall_text:
        messages.append(Message(role="system", content=recall_text))
    if memory_text:
        messages.append(Message(role="system", content=memory_text))
    if story_text:
        messages.append(Message(role="system", content=story_text))
    if truncated:
        messages.append(Message(role="system", content=CUT_MARKER))
    if vault_text:
        messages.append(Message(role="system", content=vault_text))
    if faded_text:
        messages.append(Message(role="system", content=faded_text))
    messages.extend(history)
    if state_text:
        messages.append(Message(role="system", content=state_text))
    messages.append(Message(role="user", content=question))

    def sent(text: str) -> int:  # a part left out is 0 tokens, whatever count("") says
        return count(text) if text else 0

    part_tokens = {
        "turn": sent(question),
        "system": sent(system_text),
        "claims": sent(recall_text),
        "memory": sent(memory_text),
        "story": sent(story_text),
        "vault": sent(vault_text),
        "tail": sum(sent(m.content) for m in history) + sent(faded_text),
        "state": sent(state_text),
        "marker": sent(CUT_MARKER) if truncated else 0,
    }
    return WorkingSet(
        messages=messages,
        tokens=sum(part_tokens.values()),
        budget=total,
        truncated=truncated,
        recalled_claim_ids=[c.id for c in recalled],
        tail_messages=len(history),
        working_state_bytes=len(state_text.encode("utf-8")),
        memory_tokens=part_tokens["memory"],
        part_tokens=part_tokens,
        part_budgets=budgets.ceilings(),
        counted_by=counter_name(count),
        vault_message_ids=vault_ids,
    )


async def _state_within(
    store: StaffStore, turn: Turn, state_bytes: int, room: int, count: TokenCounter
) -> str:
    """The working-state section within `state_bytes` and `room` tokens ("" when it cannot fit).

    A byte is at most a character, so 4 bytes a token fits the estimate; a real tokenizer may
    count more tokens than that, so the section is asked again, smaller, until it fits."""
    max_bytes = min(state_bytes, 4 * room)
    while max_bytes > 0:
        text = await working_state_section(
            store, turn.owner, turn.agent or DEFAULT_AGENT, now=turn.now, max_bytes=max_bytes
        )
        used = count(text)
        if used <= room:
            return text
        max_bytes = min(max_bytes - 1, max_bytes * room // used)
    return ""
