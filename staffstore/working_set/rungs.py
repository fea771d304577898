"""Fidelity rungs: how much of a session message a miss's prompt carries, by age, origin and
how often it was recalled.

Every rule is here. A message is born raw; as newer messages pile up it fades to its handle
(its key sentences and its id, the pointer back to the full text); older still, it leaves the
working set and is only found by the vault's search (vault.py) when a turn's words match it.
The raw text never leaves the store: a rung says what is sent, not what is kept. The default
needs no model; an abstractive rung, which would, is not built.

    rung         age (messages newer than it)                      sent as
    raw          < raw_messages                                    the message itself (the tail)
    handle       < raw_messages + horizon                          its key sentences, with its id
    searchable   older                                             a vault hit, when it matches

    horizon = handle_messages (the user's) or half of it (anyone else's),
              + per_recall for each time the vault recalled it, up to max_horizon

The user's messages keep their handles longest: they state the decisions and constraints; an
assistant's or a system message mostly repeats or frames them. A message the vault keeps
finding for new turns (the session keeps coming back to it) stays a handle longer, so it is in
the prompt even when a turn's words do not find it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ..store import StaffStore
from .extract import Settled, current_sentences, key_sentences

Rung = Literal["raw", "handle", "searchable"]
HANDLES_HEADER = (
    "Earlier in this session, faded to key sentences (message ids point to the full text):"
)


@dataclass(frozen=True)
class RungRules:
    """The ages at which a message fades, in messages newer than it."""

    raw_messages: int = 8
    handle_messages: int = 24
    #: Messages of horizon each recall adds, and the longest horizon recalls can give.
    per_recall: int = 12
    max_horizon: int = 72
    #: The most key sentences a handle keeps.
    handle_sentences: int = 2


DEFAULT_RUNGS = RungRules()


def rung_of(age: int, role: str, recalls: int = 0, rules: RungRules = DEFAULT_RUNGS) -> Rung:
    """The rung of a message with `age` newer messages after it, said by `role`, recalled
    `recalls` times by the vault."""
    if age < rules.raw_messages:
        return "raw"
    horizon = rules.handle_messages if role == "user" else rules.handle_messages // 2
    horizon = min(horizon + rules.per_recall * recalls, max(horizon, rules.max_horizon))
    return "handle" if age < rules.raw_messages + horizon else "searchable"


@dataclass(frozen=True)
class Handle:
    """A faded message: its id, who said it, its key sentences."""

    message_id: int
    role: str
    text: str


async def handles(
    store: StaffStore,
    session_id: str,
    *,
    after_tail: int,
    settled: Settled,
    rules: RungRules = DEFAULT_RUNGS,
) -> list[Handle]:
    """The handles of the session's messages on the handle rung, oldest first; `after_tail`
    is how many of its newest messages the prompt carries raw (they are skipped).

    Last wins: a key sentence on a subject in `settled` (stated by a newer message) is left
    out, and each handle's subjects are added to `settled` for the older ones."""
    window = rules.raw_messages + max(rules.handle_messages, rules.max_horizon)
    rows = await store.vault_recent(session_id, limit=max(window, after_tail))
    found: list[Handle] = []
    for age, (message_id, role, content, recalls) in enumerate(rows):  # newest first
        if age < after_tail or rung_of(age, role, recalls, rules) != "handle":
            continue
        current = " ".join(current_sentences(content, settled))
        # A message with nothing key to say has no handle: it is only searchable.
        text = " ".join(key_sentences(current, rules.handle_sentences)) if current else ""
        settled.add(content)
        if text:
            found.append(Handle(message_id, role, text))
    return found[::-1]


def handle_line(handle: Handle) -> str:
    return f"- (message {handle.message_id}, {handle.role}) {handle.text}"


__all__ = [
    "DEFAULT_RUNGS",
    "HANDLES_HEADER",
    "Handle",
    "Rung",
    "RungRules",
    "handle_line",
    "handles",
    "rung_of",
]
