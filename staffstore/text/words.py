"""The words of a question as the soft comparison reads them: identifiers kept whole, numbers
with their units apart, dates spelled one way, every other word folded (lexicon.canonical).

matching.normalize reduces a question to a search key for the strict test; this module keeps
more of what was typed (how an identifier was written, which words are function words), because
the soft comparison weighs each word: an identifier or a rare word says more than "the".
"""

from __future__ import annotations

import gzip
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache, lru_cache
from importlib import resources
from typing import Literal

from .interning import QUESTIONS_CACHED
from .lexicon import DETERMINERS, NUMBER_WORDS, canonical
from .rewrites import mark_script_digits

WordKind = Literal["word", "id", "func"]

#: Function words, pronouns, auxiliaries, particles, prepositions and light verbs: they shape a
#: question without saying what it is about ("the", "could", "up", "after", "use"). Negation,
#: direction ("before"/"after") and time are compared as slots (slots.py), not here.
FUNCTION_WORDS = frozenset(
    """
    a an the and or but nor so yet of to in on at by for from with as into onto about over under
    than then there here i me my mine we us our you your he him his she her they them their it its
    this that these those is are am be been being was were do does did doing done has have had
    having will would shall should can could may might must what which how whats hows whatre
    please thanks thank hi hey hello just also really actually currently basically exactly
    get got gets some any up down off out
    after since during within before until through past beyond above below across against per
    via around inside near like following
    use uses used using take takes took taking need needs needed make makes made set sets
    """.split()
)

WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
MONTHS = (
    "january", "february", "march", "april", "may", "june", "july", "august", "september",
    "october", "november", "december",
)  # fmt: skip
_MONTH_ABBREVIATIONS = {
    "jan": "january", "feb": "february", "mar": "march", "apr": "april", "jun": "june",
    "jul": "july", "aug": "august", "sep": "september", "sept": "september", "oct": "october",
    "nov": "november", "dec": "december",
}  # fmt: skip
# The lexicon's number words, and two more that count: "a single partition", "40 percent".
_NUMBER_WORDS = {**NUMBER_WORDS, "single": "1", "percent": "%"}
_UNITS = {
    "h": "hour", "hr": "hour", "hrs": "hour", "m": "minute", "min": "minute", "mins": "minute",
    "s": "second", "sec": "second", "secs": "second", "d": "day", "ms": "millisecond",
    "k": "thousand", "gb": "gb", "mb": "mb", "tb": "tb", "x": "times",
}  # fmt: skip

# An operator of a programming language: "=" is not "==", "!=" not "!==", "+=" not "=".
_OPERATOR = r"[!<>+\-*/%&|^~:=]?={1,2}(?![=!<>+\-*/%&|^~:])|&&|\|\||<<|>>|::|=>"
# A token: a word, an identifier with its inner punctuation ("analytics.orders_daily",
# "prod-us-east", "10^6") and the suffix that makes a language of a letter ("C++", "C#"), an
# operator, or one symbol worth keeping.
_TOKEN = re.compile(
    rf"[^\W_]+(?:[._/:@+#\-^~][^\W_]+)*(?:\+\+|#(?!\w))?%?|{_OPERATOR}|[%$#]|[^\s\w]"
)
_OPERATOR_TOKEN = re.compile(_OPERATOR)
_CAMEL = re.compile(r"[a-z][A-Z]")
_SLASH_DATE = re.compile(r"\b(1[0-2]|0?[1-9])/([12]\d|3[01]|0?[1-9])\b(?!/)")
# A one-letter unit is a unit only in lower case: "5S" is a model, "5M" five million, "3D" no
# duration; the longer ones are read in any case ("10GB", "500MS").
_NUMBER_UNIT = re.compile(
    r"\b(\d+(?:\.\d+)?)((?i:hrs|hr|mins|min|secs|sec|ms|gb|mb|tb|k|x)|[hmsd])\b"
)
_VERSION = re.compile(r"v\d+(?:\.\d+)*")


#: A word typed in capitals, two to five letters: an acronym, perhaps ("ALB", "GHA", "AL").
_CAPITALS = re.compile(r"\b[A-Z]{2,5}\b")


@dataclass(frozen=True)
class Word:
    """One token of a question: as typed (lower-cased), as compared, and what kind it is."""

    surface: str
    key: str
    kind: WordKind


#: A Word for (surface, key, kind), one object for each: the same words recur across the
#: questions words() keeps (see interning.py), and the garbage collector walks each object.
_shared_word = lru_cache(maxsize=131_072)(Word)


@cache
def _zipf_table() -> dict[str, float]:
    table: dict[str, float] = {}
    data = resources.files("staffstore.text") / "data" / "word_zipf.tsv.gz"
    with data.open("rb") as raw, gzip.open(raw, "rt", encoding="utf-8") as handle:
        for line in handle:
            if line.startswith("#"):
                continue
            word, value = line.rstrip("\n").split("\t")
            table[word] = float(value)
    return table


def zipf(word: str) -> float | None:
    """How common a word is: log10 of its uses per billion words (the: 7.7, terraform: 2.0),
    or None when it is too rare to be counted."""
    return _zipf_table().get(word)


def month(word: str) -> str:
    """A month's full name for its abbreviation ("sept" -> "september"), else the word."""
    return _MONTH_ABBREVIATIONS.get(word, word)


def is_common(word: str) -> bool:
    found = zipf(word.lower())
    return found is not None and found >= 3.0


# words() reads every token's characters several times; str methods mapped over them, a regex
# for the marks and a look for the separator before splitting on it say what generator
# expressions said, in C: 136 -> 90 us a text over the 79,315 eval, train, bench and subject
# texts, the same tokens for every one.
_IDENTIFIER_MARK = re.compile(r"[._/:@#+^~-]")


def _is_identifier(raw: str) -> bool:
    if any(map(str.isdigit, raw)) or _IDENTIFIER_MARK.search(raw):
        return True
    return bool(_CAMEL.search(raw))


def _english_parts(raw: str, separator: str) -> list[str] | None:
    """ "fine-tune", "double-check", "rows/day": common words joined, read as those words;
    "cert-mgr", "checkout-api", "globex/api" name something and stay whole (None)."""
    if separator not in raw:
        return None
    parts = raw.split(separator)
    if len(parts) > 1 and all(p.isalpha() and is_common(p) for p in parts):
        return parts
    return None


#: A determiner before "only one" leaves it a pronoun: "the only one", "our only one" (the
#: lexicon's DETERMINERS and "our", which matching does not read as one).
_BEFORE_ONLY_ONE = DETERMINERS | {"our"}
#: Words after "one" that leave it a pronoun: "the latest stable one right now", "that one too".
_AFTER_A_PRONOUN = frozenset("right now rn currently today yet too again instead anymore".split())


def _one_is_a_number(raws: list[str], index: int) -> bool:
    """ "one partition" and "only one partition" count; "quick one,", "which one", "the one
    that", "the only one" and "the latest stable one right now" do not."""
    previous = raws[index - 1].lower() if index else ""
    following = raws[index + 1] if index + 1 < len(raws) else ""
    if previous == "only":
        if index > 1 and raws[index - 2].lower() in _BEFORE_ONLY_ONE:
            return False
    elif previous in {"quick", "the", "this", "that", "which", "any", "each", "every", "no",
                      "another", "other", "last", "first", "same", "a"}:  # fmt: skip
        return False
    return (
        following.isalpha()
        and following.lower() not in FUNCTION_WORDS
        and following.lower() not in _AFTER_A_PRONOUN
    )


#: "won't" is "will not", not "wo not".
_CONTRACTED = {"wo": "will not", "ca": "can not", "sha": "shall not"}


def expand_not(text: str) -> str:
    """ "couldn't" -> "could not", "won't" -> "will not" (an apostrophe typed straight)."""
    text = re.sub(r"\b(wo|ca|sha)n't\b", lambda m: _CONTRACTED[m[1].lower()], text, flags=re.I)
    return re.sub(r"n't\b", " not", text)


@lru_cache(maxsize=QUESTIONS_CACHED)
def prepare(text: str) -> str:
    """The text with the spellings the tokenizer should not have to know unified."""
    text = mark_script_digits(text).replace("\u2019", "'").replace("->", " to ")
    text = re.sub(r"\bw/o\b", "without", text, flags=re.IGNORECASE)
    text = re.sub(r"#\s*of\b", "number of", text)
    text = re.sub(r"(?<![\w#])#(?=\d)", "", text)  # "PR #812" is PR 812
    text = _SLASH_DATE.sub(lambda m: f"{MONTHS[int(m[1]) - 1]} {int(m[2])}", text)
    text = _NUMBER_UNIT.sub(lambda m: f"{m[1]} {_UNITS[m[2].lower()]}", text)
    text = re.sub(r"'s\b", "", text)
    text = expand_not(text)
    return re.sub(r"'(?:d|m|ll|ve|re)\b", "", text, flags=re.IGNORECASE)


@lru_cache(maxsize=QUESTIONS_CACHED)
def words(text: str) -> tuple[Word, ...]:
    """The tokens of a question, each folded and classified."""
    out: list[Word] = []
    raws = _TOKEN.findall(prepare(text))
    for index, raw in enumerate(raws):
        if _OPERATOR_TOKEN.fullmatch(raw):
            out.append(_shared_word(raw, raw, "id"))
            continue
        if not any(map(str.isalnum, raw)) and raw not in "%$#":
            continue
        parts = _english_parts(raw, "-") or _english_parts(raw, "/") or [raw]
        for part in parts:
            if _is_identifier(part):
                key = part.lower()
                out.append(_shared_word(key, key[1:] if _VERSION.fullmatch(key) else key, "id"))
            else:
                out.extend(_word(part, raws, index, compound=len(parts) > 1))
    return tuple(out)


def _word(part: str, raws: list[str], index: int, *, compound: bool) -> list[Word]:
    if not part:
        return []
    low = part.lower()
    acronym = part.isupper() and len(part) >= 2  # "IT", "US", "OR": a name here, not a word
    if low in _NUMBER_WORDS and not compound and (low != "one" or _one_is_a_number(raws, index)):
        return [_shared_word(low, _NUMBER_WORDS[low], "id")]
    low = month(low)
    if low in FUNCTION_WORDS or low == "one":
        if acronym:
            return [_shared_word(low, low + "_", "word")]
        return [_shared_word(low, low, "func")]
    return [_shared_word(low, canonical(low), "word")]


def content_words(text: str) -> list[Word]:
    """The words that say what a question is about."""
    return [w for w in words(text) if w.kind != "func"]


def weight(word: Word) -> float:
    """How much a word says: rare words and identifiers much, common words little."""
    if word.kind == "id":
        return 1.5
    found = zipf(word.surface)
    if found is None:
        found = zipf(word.key)
    return 1.5 if found is None else min(1.5, max(0.1, (7.0 - found) / 3.5))


def acronyms(text: str) -> frozenset[str]:
    """The words typed in capitals ("ALB", "GHA"), lower-cased; none in a text typed all in
    capitals, where capitals say nothing."""
    if text.upper() == text:
        return frozenset()
    return frozenset(m.lower() for m in _CAPITALS.findall(text))


def initials(letters: str, tokens: Sequence[Word]) -> list[Word] | None:
    """The first run of consecutive words whose initials spell `letters` ("feature store" for
    "fs", "add to cart" for "atc"), starting and ending on a word that is not a function word.
    Only words of letters count: numbers and identifiers between them are skipped."""
    tokens = [w for w in tokens if w.surface.isalpha()]
    n = len(letters)
    for start in range(len(tokens) - n + 1):
        run = tokens[start : start + n]
        spelled = all(
            w.surface[0] == ch and len(w.surface) > 1 for w, ch in zip(run, letters, strict=True)
        )
        if spelled and run[0].kind != "func" and run[-1].kind != "func":
            return run
    return None
