"""Key sentences: the extractive reading of a message that the story and the handles are made of.

No model: a sentence is key when it states a decision, a constraint, a name or a number (the
signal words and digits below say which; a question states nothing). Two key sentences are
about the same thing when their frames match: the words around the value, less the value (a
word with a digit, or the word that differs) and less a lead-in before a colon ("Update: the
port is now 6544" and "The port is 5433" share "the port is"). The newer of two sentences on
one subject wins, so a revised value replaces the one it revised, wherever it would be shown.
"""

from __future__ import annotations

import re

_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
_WORD = re.compile(r"[a-z0-9][a-z0-9_\-]*")
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


def is_key(sentence: str) -> bool:
    """Whether a sentence states a decision, a constraint, a name or a number (a question
    does not: it asks for one)."""
    if sentence.rstrip().endswith("?"):
        return False
    lowered = sentence.lower()
    return (
        any(ch.isdigit() for ch in sentence)
        or bool(set(_WORD.findall(lowered)) & _SIGNALS)
        or bool(_NAME.search(sentence))
    )


def frame(sentence: str) -> frozenset[str]:
    """The words around a sentence's value: its content words less a lead-in and any word
    holding a digit (the commonest values)."""
    body = _LEAD_IN.sub("", sentence, count=1).lower()
    return frozenset(
        w for w in _WORD.findall(body) if w not in _FUNCTION and not any(c.isdigit() for c in w)
    )


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


def latest_by_subject(texts: list[str], max_chars: int) -> list[str]:
    """The key sentences of `texts` (oldest first), newest first wins per subject, within
    `max_chars` in all; returned oldest first."""
    settled = Settled()
    kept: list[str] = []
    used = 0
    for text in reversed(texts):
        for sentence in reversed(sentences(text)):
            if not is_key(sentence) or settled.covers(sentence):
                continue  # not key, or on a subject a newer sentence already settled
            settled.add(sentence)
            if used + len(sentence) + 3 > max_chars:
                return kept[::-1]
            kept.append(sentence)
            used += len(sentence) + 3
    return kept[::-1]


__all__ = [
    "Settled",
    "current_sentences",
    "frame",
    "is_key",
    "key_sentences",
    "latest_by_subject",
    "same_subject",
    "sentences",
    "settled_by",
]
