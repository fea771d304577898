"""Key sentences: the extractive reading of a message that the story and the handles are made of.

No model: a sentence is key when it states a decision, a constraint, a name or a number (the
signal words and digits below say which; a question states nothing). Two key sentences are
about the same thing when their frames match: the words around the value, less the value (a
word with a digit, or the word that differs) and less a lead-in before a colon ("Update: the
port is now 6544" and "The port is 5433" share "the port is"). The newer of two sentences on
one subject wins, so a revised value replaces the one it revised, wherever it would be shown.

A story is stricter about who said it: the user's (and a system message's) key sentences state
what the session decided, but an assistant's answers are full of numbers and names that decide
nothing ("the endpoint returns 404"), so only its sentences that say a decision or constraint in
words (a signal word) enter a story. Without that rule a session of unrelated questions fills
its story with old answers: in the hostile replay it doubled the prompt of every miss.
"""

from __future__ import annotations

import re
from functools import lru_cache

_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
_WORD = re.compile(r"[a-z0-9][a-z0-9_\-]*")
_DIGIT = re.compile(r"[0-9]")
_ANY_DIGIT = re.compile(r"\d")
#: A lead-in: a few words and a colon at the start ("Change of plan:"), not a time's colon.
_LEAD_IN = re.compile(r"^\s*[A-Za-z][\w \-]{0,30}:\s+")
#: A name: a capitalised word after a sentence's first ("... is Priya-Natarajan"), not an
#: acronym ("README").
_NAME = re.compile(r"(?<=\s)[A-Z][a-z]+\b")
#: Words that mark a sentence as one a later turn may need.
_SIGNALS = frozenset(
    """
    decide decided decision decisions agree agreed chose choose chosen settle settled pick
    picked must never always constraint constraints require required requires switch
    switched named name call called deadline budget limit cap max maximum minimum min
    changed instead revise revised rule
    """.split()
)
#: The verbs of deciding: what an assistant's sentence needs to enter a story (the signal
#: words above also mark constraints, and "limit", "never" or "required" fill ordinary answers).
_DECIDING = frozenset(
    """
    decide decided decision agree agreed chose choose chosen settle settled pick picked
    switch switched
    """.split()
)
#: First words of a question without its question mark. A closed class: the interrogatives
#: and the auxiliaries that open a yes/no question (a contraction's stem: "isn't" reads "isn").
_QUESTION_OPENERS = frozenset(
    """
    why what whats how when where which who whom whose is are was were do does did can could
    should would will shall has have had may might isn aren wasn doesn didn
    """.split()
)
#: First words of a request: it asks for work and states nothing, whatever it names
#: ("Translate 'good morning' into German"). A closed class of verbs that never set a value.
_REQUEST_OPENERS = frozenset(
    """
    summarize summarise translate convert explain describe compare list show tell give find
    please help remind
    """.split()
)
#: Words that say nothing of what a sentence is about: left out of its frame, so "the port is"
#: and "our port will be" match, and two sentences do not match by their grammar alone.
_FUNCTION = frozenset(
    """
    a an the now instead again still also then we i you it its our us your they their this
    that these those is are was were be been being will must shall should would can could
    to for of in on at by with from and or but not no so as set into onto about
    """.split()
)
#: Two frames are one subject when they share this many words, and this share of the smaller.
SAME_WORDS, SAME_SHARE = 2, 0.6


def sentences(text: str) -> list[str]:
    """The text's sentences (and lines), stripped, empty ones left out."""
    return [part.strip() for part in _SENTENCE.split(text) if part.strip()]


@lru_cache(maxsize=16_384)
def asks(sentence: str) -> bool:
    """Whether a sentence asks rather than states: it ends with a question mark, or opens with
    a question word or an inverted auxiliary ("why does the build fail", typed in a hurry), or
    with a verb of request ("convert 72 fahrenheit to celsius")."""
    if sentence.rstrip().endswith("?"):
        return True
    first = _WORD.match(sentence.lstrip().lower())
    return first is not None and first.group() in _QUESTION_OPENERS | _REQUEST_OPENERS


def is_key(sentence: str) -> bool:
    """Whether a sentence states a decision, a constraint, a name or a number (a question
    does not: it asks for one)."""
    if asks(sentence):
        return False
    lowered = sentence.lower()
    return (
        bool(_ANY_DIGIT.search(sentence))
        or bool(set(_WORD.findall(lowered)) & _SIGNALS)
        or bool(_NAME.search(sentence))
    )


def decides(sentence: str) -> bool:
    """Whether a sentence says a decision in words (a verb of deciding), whatever numbers or
    names it holds; a question does not."""
    if asks(sentence):
        return False
    return bool(set(_WORD.findall(sentence.lower())) & _DECIDING)


def story_worthy(role: str, sentence: str) -> bool:
    """Whether a sentence said by `role` belongs in a session's story: any key sentence of
    the user's or a system message, only a deciding one of anyone else's."""
    return is_key(sentence) if role in ("user", "system") else decides(sentence)


@lru_cache(maxsize=16_384)
def frame(sentence: str) -> frozenset[str]:
    """The words around a sentence's value: its content words less a lead-in and any word
    holding a digit (the commonest values). Cached: every build of a working set reads the
    same older sentences again."""
    body = _LEAD_IN.sub("", sentence, count=1).lower()
    return frozenset(w for w in _WORD.findall(body) if w not in _FUNCTION and not _DIGIT.search(w))


def same_subject(one: frozenset[str], other: frozenset[str]) -> bool:
    """Whether two frames are about one thing: most of the smaller one is in the other."""
    shared = len(one & other)
    return shared >= SAME_WORDS and shared >= SAME_SHARE * min(len(one), len(other))


class Settled:
    """The subjects newer messages stated: an older key sentence on one of them is revised."""

    def __init__(self) -> None:
        self._frames: list[frozenset[str]] = []

    def covers(self, sentence: str, upto: int | None = None) -> bool:
        """Whether a newer sentence already settled the subject of `sentence` (among the
        first `upto` subjects settled, when given: see mark)."""
        mine = frame(sentence)
        return any(same_subject(mine, seen) for seen in self._frames[:upto])

    def mark(self) -> int:
        """How many subjects are settled now: `covers(..., upto=mark)` reads them as they were."""
        return len(self._frames)

    def add(self, text: str) -> None:
        """Settle the subjects of the sentences of `text` (a message newer than the rest; a
        statement that is not key may still restate an older one, and then wins over it)."""
        self._frames += [frame(s) for s in sentences(text) if not s.rstrip().endswith("?")]


def settled_by(texts: list[str]) -> Settled:
    """The subjects `texts` settle for every older message."""
    settled = Settled()
    for text in texts:
        settled.add(text)
    return settled


def current_sentences(text: str, settled: Settled, upto: int | None = None) -> list[str]:
    """The sentences of `text` less those whose subject a newer message settled."""
    return [s for s in sentences(text) if not settled.covers(s, upto)]


def key_sentences(text: str, limit: int = 3) -> list[str]:
    """At most `limit` key sentences of `text`, in its order."""
    return [s for s in sentences(text) if is_key(s)][:limit]


def latest_by_subject(said: list[tuple[str, str]], max_chars: int) -> list[str]:
    """The story-worthy sentences of `said` ((role, text), oldest first), newest first wins
    per subject, within `max_chars` in all; returned oldest first."""
    settled = Settled()
    kept: list[str] = []
    used = 0
    for role, text in reversed(said):
        for sentence in reversed(sentences(text)):
            if not story_worthy(role, sentence) or settled.covers(sentence):
                continue  # not for a story, or on a subject a newer sentence already settled
            settled.add(sentence)
            if used + len(sentence) + 3 > max_chars:
                return kept[::-1]
            kept.append(sentence)
            used += len(sentence) + 3
    return kept[::-1]


__all__ = [
    "Settled",
    "asks",
    "current_sentences",
    "decides",
    "frame",
    "is_key",
    "key_sentences",
    "latest_by_subject",
    "same_subject",
    "sentences",
    "settled_by",
    "story_worthy",
]
