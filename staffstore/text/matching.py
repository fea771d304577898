"""Question normalisation and the "does this turn ask what that claim answers?" test.

A question is reduced to its *content*: lower-cased tokens with contractions expanded, light
stemming, a small synonym table, and function words, question-form words and politeness removed
(the text's rewriting is rewrites.py's, each word's folding lexicon.py's; normalize strings the
words together).
Two questions are the same question only when their content is the same set of words (small typos
forgiven, but not a slip that makes another common word: "house" is not "horse") *and* those
words come in the same order, or in an order that moves one whole phrase
("what did Kernel find about X" / "about X, what did Kernel find"), or in the other order of one
of English's alternations that rephrasing.py knows ("the size of the pool" / "the pool size",
active / passive, a moved negation). Two narrow allowances come before that test: a maker's
possessive that only one side names ("Apple's App Review" / "App Review"), and a word that means
another only in context ("use" / "reuse" beside "cache"). Two function words still count: "or"
("Python or Java?" is not "Python and Java?") and a past or future auxiliary ("Did Trump win?"
is not "Will Trump win?"). Everything else is a miss.

The rule is deliberately strict. Equal content catches word order, synonyms, question forms,
casing, punctuation and typos; a different number, version, name, platform, date or a negation
changes the content and so misses; a swap of two words ("from A to B" / "from B to A") keeps the
words but breaks the order check. A false hit costs more than a paid call.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache

from rapidfuzz import fuzz

from .interning import QUESTIONS_CACHED, share_sets
from .lexicon import (
    COMMON_CONTENT,
    COUNTS,
    DETERMINERS,
    EVER_KEEPS,
    GET_FORMS,
    ONE_AS_PRONOUN,
    PHRASE_MARKS,
    PREPOSITIONS,
    SAME_BESIDE,
    SECOND_UNIT,
    WITHIN_PHRASE,
    canonical,
    is_function_word,
    is_name,
    is_participle,
    makers,
    opposite_tenses,
    stem,
    tense_words,
    tokens_and_marks,
)
from .rephrasing import Side, is_rephrasing
from .spelling import same_word


@dataclass(frozen=True)
class Normalized:
    """A question reduced for matching: all canonical words, and the content words in order."""

    words: tuple[str, ...]
    content: tuple[str, ...]
    #: Content positions where a new phrase starts (after punctuation, an auxiliary, a
    #: conjunction): a rephrasing moves whole phrases, never a piece across such a boundary.
    breaks: frozenset[int] = frozenset()
    #: Content positions written as verb forms ("kept", "rejected", "died").
    verbal: frozenset[int] = frozenset()
    #: How each content word was typed, for typos that stemming would hide ("cahce").
    spellings: tuple[tuple[str, str], ...] = ()
    #: Content positions typed as identifiers ("acme/api", "api.acme.dev", "5.2").
    names: frozenset[int] = frozenset()
    #: Content positions of a maker's possessive before a name: "Apple" in "Apple's App Review".
    makers: frozenset[int] = frozenset()
    content_set: frozenset[str] = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "content_set", frozenset(self.content))
        share_sets(self)

    @property
    def key(self) -> str:
        """The indexed form: content words joined by spaces, as FTS5 sees them."""
        return " ".join(self.content)

    @property
    def search_words(self) -> list[str]:
        """The content words worth an index lookup: rare enough to narrow the candidates.

        Prepositions, pronouns and modals are content (they change what is asked) but occur in
        most questions, so searching on them would only slow the lookup down.
        """
        searchable = sorted({w for w in self.content if any(ch.isalnum() for ch in w)})
        informative = [w for w in searchable if w not in COMMON_CONTENT]
        return informative or searchable


#: The version of what normalize makes of a question. Stores keep each claim's content words
#: (its search key) and re-key themselves on open when this differs from the version that wrote
#: them, so bump it with any change that alters some question's content words.
KEY_VERSION = 15


#: One copy of each (word, as typed) pair still in use: most recur ("in", "where"), and a
#: pair costs 64 bytes.
_shared_spelling = lru_cache(maxsize=QUESTIONS_CACHED)(tuple)


@lru_cache(maxsize=QUESTIONS_CACHED)
def normalize(text: str) -> Normalized:
    """Reduce a question to canonical words and content words (cached: turns repeat)."""
    raw, in_path = tokens_and_marks(text)
    possessors = makers(text)
    words: list[str] = []
    content: list[str] = []
    breaks: set[int] = set()  # content positions that start a new phrase
    verbal: set[int] = set()  # content positions written as a verb form ("died", "kept")
    names: set[int] = set()  # content positions typed as identifiers
    maker_at: set[int] = set()  # content positions of a maker's possessive
    spellings: dict[str, str] = {}
    phrase_ended = False
    plural: str | None = None  # the latest plural noun, which "ones" stands for
    last = len(raw) - 1
    for index, token in enumerate(raw):
        previous = raw[index - 1] if index else ""
        following = raw[index + 1] if index < last else ""
        if token in PHRASE_MARKS:
            phrase_ended = True
            continue
        if token == "that":
            # A sentence-final "that" ("why is that?") points back at earlier context;
            # elsewhere it only joins clauses.
            if index != last:
                phrase_ended = True
                continue
            word = "that"
        elif token == "one":
            word = "one" if previous in ONE_AS_PRONOUN or index == last else "1"
        elif token in GET_FORMS and is_participle(following):
            continue
        elif token == "ever" and "not" in content[-4:]:
            # "doesn't ever reuse" is "never reuses": one negation, where "ever" stood.
            at = len(content) - 1 - content[::-1].index("not")
            del content[at]
            del words[len(words) - 1 - words[::-1].index("not")]
            breaks = {i if i <= at else i - 1 for i in breaks}
            verbal = {i if i < at else i - 1 for i in verbal if i != at}
            word = "never"
        elif token == "ever" and following and previous not in EVER_KEEPS:
            continue  # "was it ever used" asks "was it used"; "the best CEO ever" keeps it
        elif token in SECOND_UNIT or (token == "second" and previous in COUNTS):
            word = "sec"  # "5 seconds", "a second": the unit, not the ordinal
        elif token == "ones" and plural is not None:
            word = plural  # "above active ones" is "above active products"
        elif is_function_word(token, index, raw):
            words.append(token)
            # An auxiliary, a conjunction or a question word separates phrases; an article
            # or a filler does not, nor "and" between two numbers ("migrations 0042 and 0043").
            joins_numbers = token in ("and", "or") and previous.isdigit() and following.isdigit()
            phrase_ended = phrase_ended or not (token in WITHIN_PHRASE or joins_numbers)
            continue
        elif previous in DETERMINERS:
            # After "a" or "the", an -ing word is a noun: "a bearing" is not "a bear".
            word = canonical(token, fold_verb=False)
        else:
            word = canonical(token)
        if phrase_ended and content:
            breaks.add(len(content))
        phrase_ended = False
        if is_participle(token):
            verbal.add(len(content))
        if index in in_path or is_name(token):
            names.add(len(content))
        if token in possessors:
            maker_at.add(len(content))
        words.append(word)
        content.append(word)
        # Interned: the same typed words recur across the questions the caches keep.
        spellings.setdefault(word, sys.intern(token))
        if token.endswith("s") and token.isalpha() and stem(token) != token:
            plural = word
    return Normalized(
        tuple(words),
        tuple(content),
        frozenset(breaks),
        frozenset(verbal),
        tuple(map(_shared_spelling, spellings.items())),
        frozenset(names),
        frozenset(maker_at),
    )


#: A question with more slips than this is not the stored question retyped.
MAX_TYPOS = 2


def align(
    turn: Normalized, claim: Normalized, names: frozenset[str] = frozenset()
) -> list[str] | None:
    """Map each turn content word onto the claim's content, allowing typos.

    A slip is judged on the words as folded and as typed: stemming can hide one ("cahce" and
    "cache" fold to "cahc" and "cach"). A word with no close counterpart stays as it is (a
    rephrasing may add one, such as "of"); None when too many words differ or a slip could be
    either of two claim words. A word in `names` is never a slip (only another spelling of
    it, British or American, with or without accents, is the same word): the store the claim
    comes from uses it as a word of its own ("garvo" beside "garlo", two services).
    """
    claim_set = claim.content_set
    if len(turn.content_set - claim_set) > MAX_TYPOS:
        return None  # cheap reject before any edit distances
    typed, claim_typed = dict(turn.spellings), dict(claim.spellings)
    mapped: list[str] = []
    for word in turn.content:
        if word in claim_set:
            mapped.append(word)
            continue
        spelled, slip = typed.get(word, word), word not in names
        close = [
            c for c in claim_set if same_word(word, spelled, c, claim_typed.get(c, c), slip=slip)
        ]
        if len(close) > 1:
            return None
        mapped.append(close[0] if close else word)
    return mapped


def same_order(turn: Sequence[str], claim: Sequence[str]) -> bool:
    """True when the turn keeps the claim's word order, up to moving one prepositional phrase.

    "In CI, why does the build fail" moves "in CI" in "why does the build fail in CI" and asks
    the same question. Any other reordering is refused: "flights from A to B" / "from B to A",
    "A was president and B secretary" / "B was president and A secretary": word swaps are how
    near-identical sentences come to mean different things. Repeated words are kept: "Ted is
    John's son" and "John is Ted's son" differ only there.
    """
    a, b = list(turn), list(claim)
    if a == b:
        return True
    if len(a) != len(b):
        return False
    # Set aside the shared beginning and end; one phrase moved means what is left of the turn
    # is a rotation of what is left of the claim, cut into two blocks.
    start = 0
    while a[start] == b[start]:
        start += 1
    end = len(a)
    while a[end - 1] == b[end - 1]:
        end -= 1
    middle_a, middle_b = a[start:end], b[start:end]
    for cut in range(1, len(middle_b)):
        first, second = middle_b[:cut], middle_b[cut:]
        if second + first == middle_a:
            return first[0] in PREPOSITIONS or second[0] in PREPOSITIONS
    return False


# Words whose place decides what is asked: no rephrasing may move them.
_FIXED = COMMON_CONTENT | PREPOSITIONS


@dataclass(frozen=True)
class Comparison:
    """How a turn relates to one stored question."""

    same_question: bool
    similarity: float
    missing: frozenset[str]  # claim words the turn does not have
    extra: frozenset[str]  # turn words the claim does not have
    order_ok: bool


def compare(turn: Normalized, claim: Normalized, names: frozenset[str] = frozenset()) -> Comparison:
    """Decide whether the turn asks the stored question; say what differs when it does not.
    `names`: the turn's words that are names where the claim is stored (see align)."""
    similarity = _similarity(turn, claim)
    if turn.makers or claim.makers:
        turn, claim = _without_lone_makers(turn, claim)
    turn = _compounds_as_in(turn, claim)
    mapped = align(turn, claim, names)
    if mapped is not None and not turn.content_set <= claim.content_set:
        mapped = _same_beside(mapped, claim)
    if mapped is None:
        missing = claim.content_set - turn.content_set
        extra = turn.content_set - claim.content_set
        return Comparison(False, similarity, missing, extra, False)
    missing = claim.content_set - set(mapped)
    extra = frozenset(mapped) - claim.content_set
    order_ok = not missing and not extra and same_order(mapped, claim.content)
    if not order_ok and is_rephrasing(
        Side(mapped, turn.breaks, turn.verbal, turn.words, turn.names),
        Side(list(claim.content), claim.breaks, claim.verbal, claim.words, claim.names),
        _FIXED,
    ):
        # One of English's two ways of asking it: nothing is missing, nothing is extra.
        order_ok, missing, extra = True, frozenset(), frozenset()
    same = order_ok and bool(claim.content) and _short_guard(claim, similarity)
    if same:
        told_apart = _told_apart_by_function_words(turn.words, claim.words)
        if told_apart is not None:
            extra, missing = told_apart
            same = False
    return Comparison(same, similarity, missing, extra, order_ok)


def _told_apart_by_function_words(
    turn: Sequence[str], claim: Sequence[str]
) -> tuple[frozenset[str], frozenset[str]] | None:
    """The function words (turn's, claim's) that make two questions of the same content words
    ask different things, or None when none do.

    Function words are not content, but two of their differences change what is asked: "Python
    or Java?" (which one) is not "Python and Java?" (both), and "Did Trump win?" (what happened)
    is not "Will Trump win?" (a forecast): lexicon.opposite_tenses.
    """
    if turn.count("or") != claim.count("or"):
        turn_joins, claim_joins = {"and", "or"} & set(turn), {"and", "or"} & set(claim)
        extra, missing = turn_joins - claim_joins, claim_joins - turn_joins
        if not extra and not missing:  # both have both, "or" more often in one
            extra = {"or"} if turn.count("or") > claim.count("or") else set()
            missing = {"or"} - extra
        return frozenset(extra), frozenset(missing)
    tenses = (tense_words(turn), tense_words(claim))
    return tenses if opposite_tenses(*tenses) else None


def _same_beside(mapped: list[str], claim: Normalized) -> list[str]:
    """The aligned turn, each word that means a claim word in this context written as that word.

    Beside "cache", "use" means "reuse" (lexicon.SAME_BESIDE): the context word must be in both
    questions.
    """
    result = list(mapped)
    for index, word in enumerate(mapped):
        if word in claim.content_set:
            continue
        for other in claim.content_set - set(mapped):
            context = SAME_BESIDE.get(frozenset((word, other)))
            if context is not None and context in claim.content_set and context in mapped:
                result[index] = other
                break
    return result


def _without_lone_makers(turn: Normalized, claim: Normalized) -> tuple[Normalized, Normalized]:
    """Both questions without a maker's possessive that only one of them names.

    "rejected by Apple's App Review" asks what "rejected by App Review" asks: the name says
    which thing is meant. When both name a maker, the makers must agree ("Apple's" and
    "Google's App Review" are two things).
    """
    turn_only = {i for i in turn.makers if turn.content[i] not in claim.content_set}
    claim_only = {i for i in claim.makers if claim.content[i] not in turn.content_set}
    if turn_only and claim_only:
        return turn, claim
    return _dropping(turn, turn_only), _dropping(claim, claim_only)


def _dropping(question: Normalized, positions: set[int]) -> Normalized:
    """The question with the content words at `positions` taken out."""
    if not positions:
        return question

    def shifted(marks: frozenset[int]) -> frozenset[int]:
        return frozenset(
            i - sum(1 for p in positions if p < i) for i in marks if i not in positions
        )

    words = list(question.words)
    for at in positions:
        words.remove(question.content[at])
    return Normalized(
        tuple(words),
        tuple(w for i, w in enumerate(question.content) if i not in positions),
        shifted(question.breaks),
        shifted(question.verbal),
        question.spellings,
        shifted(question.names),
        shifted(question.makers),
    )


def _compounds_as_in(turn: Normalized, claim: Normalized) -> Normalized:
    """The turn with its compounds written as the claim writes them.

    "GPL licensed", "GPL-licensed" and "GPLlicensed" are one word written three ways: two
    adjacent turn words that make one claim word are joined, and one turn word that two
    adjacent claim words make is split.
    """
    if turn.content_set <= claim.content_set:
        return turn
    joined = {a + b: (a, b) for a, b in zip(claim.content, claim.content[1:], strict=False)}
    content: list[str] = []
    breaks: set[int] = set()
    verbal: set[int] = set()
    names: set[int] = set()
    changed = False
    index = 0
    while index < len(turn.content):
        word = turn.content[index]
        pair = turn.content[index + 1] if index + 1 < len(turn.content) else ""
        if index in turn.breaks:
            breaks.add(len(content))
        if index in turn.verbal:
            verbal.add(len(content))
        if index in turn.names:
            names.add(len(content))
        if word not in claim.content_set and word + pair in claim.content_set:
            content.append(word + pair)  # "gpl licensed" as the claim's "gpllicensed"
            index += 2
            changed = True
            continue
        if word not in claim.content_set and word in joined:
            content.extend(joined[word])  # "gpllicensed" as the claim's "gpl licensed"
            changed = True
        else:
            content.append(word)
        index += 1
    if not changed:
        return turn
    return Normalized(
        turn.words,
        tuple(content),
        frozenset(breaks),
        frozenset(verbal),
        turn.spellings,
        frozenset(names),
    )


def _short_guard(claim: Normalized, similarity: float) -> bool:
    # With one or two content words, almost everything else is function words; require the
    # whole questions to be close too, so "python?" does not answer "what is python?".
    return len(claim.content_set) > 2 or similarity >= 0.8


def _similarity(turn: Normalized, claim: Normalized) -> float:
    return round(fuzz.ratio(" ".join(turn.words), " ".join(claim.words)) / 100.0, 4)
