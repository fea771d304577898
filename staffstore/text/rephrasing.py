"""Word orders that English uses to ask one question in two ways.

matching.compare requires a turn's content words to come in the stored question's order. A few
grammatical alternations move words without changing what is asked, and each leaves a mark that
a mere word swap does not: a preposition or "by" that one side has and the other lacks, a
passive auxiliary, a negation that stays one negation, an "and" between the swapped words.
Those are recognised here, one alternation per comparison (a negation that moved may come with
one more):

    of-phrase      "the size of the pool"            / "the pool size"
                   "the LCP on the pricing page"      / "the pricing page's LCP"
                   "the Docker image for acme/api"    / "the acme/api Docker image"
    passive        "why was the build rejected by Review" / "why did Review reject the build"
    bare passive   "how long are logs kept"          / "how long do we keep logs"
    negation       "why can engineers not reach X"   / "why can't engineers reach X"
    version        "the iOS 5.2 build"               / "the 5.2 iOS build"
    conjuncts      "the memory and CPU limits"       / "the CPU and memory limits"
    preposition    "crash at launch"                 / "crash on launch" (long questions only)
                   "the rate limit for the API"      / "the rate limit on the API"

A moved block never crosses a phrase boundary (punctuation, an auxiliary, a conjunction: see
matching.Normalized.breaks), so "in Europe and in Belgium" cannot become "in Belgium and Europe".

The second look reads a possessive the same way when the order is all that keeps two questions
apart ("the prod-web ALB's target group" / "the target group of the prod-web ALB"): see
possessive_unfoldings.

Everything else stays a different question. PAWS-style swaps ("flights from A to B" / "from
B to A") keep every word, so they can never look like an alternation that adds or drops one.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from .interning import QUESTIONS_CACHED
from .words import FUNCTION_WORDS

#: Prepositions that attach a noun's modifier after it ("the size of X" is "X's size"). "for"
#: does too, but only before an identifier: "the image for acme/api" is "the acme/api image",
#: while "a magazine for kids" need not be "a kids magazine".
OF_LIKE = frozenset({"of", "on", "in"})

#: Prepositions of place and relation that a long question may trade for one another: "crash
#: at/on launch", "rows in/into the table", "the limit for/on the API". Not "of" ("the effect
#: of/on X"), nor direction, time order or company ("to/from", "before/after", "with").
INTERCHANGEABLE = frozenset({"in", "into", "on", "at", "for"})

#: Content words a question needs before one of its prepositions may be swapped: in a short
#: question the preposition may be the whole point.
MIN_WORDS_FOR_SWAP = 6

#: The two a short question may still trade, between two noun phrases.
NOUN_FOR_ON = frozenset({"for", "on"})

#: Longest block (in content words) an alternation may move: a short noun phrase.
MAX_BLOCK = 4

#: Questions longer than this (in content words) are compared word for word only: the search
#: for an alternation grows with the square of the length, and no question is that long.
MAX_WORDS = 64

#: A passive's patient or agent may carry a phrase of its own: "the leaked key in acme/web".
_LONG_BLOCK = 6

_BE = frozenset({"is", "are", "was", "were", "be", "been", "being", "am"})
_ARTICLES = frozenset({"the", "a", "an"})
_NEGATIONS = frozenset({"not", "never"})


@dataclass(frozen=True)
class Side:
    """One question of a comparison: its content words and where its phrases start."""

    seq: list[str]
    breaks: frozenset[int]  # positions in seq that start a new phrase
    verbal: frozenset[int]  # positions in seq written as verb forms
    words: Sequence[str]  # every word, function words too (the bare passive needs them)
    names: frozenset[int] = frozenset()  # positions in seq typed as identifiers ("acme/api")

    def one_phrase(self, start: int, end: int) -> bool:
        """True when seq[start:end] does not cross a phrase boundary."""
        return not any(start < i < end for i in self.breaks)

    def phrases(self, start: int, sizes: Sequence[int]) -> bool:
        """True when the blocks of these sizes, laid end to end from `start`, are each one
        phrase (a boundary may fall between two blocks, not inside one)."""
        for size in sizes:
            if not self.one_phrase(start, start + size):
                return False
            start += size
        return True

    def nominal(self, start: int, end: int, fixed: frozenset[str]) -> bool:
        """True when seq[start:end] can be a short noun phrase that moves as one."""
        block = self.seq[start:end]
        return (
            0 < len(block) <= MAX_BLOCK
            and self.one_phrase(start, end)
            and not any(w in fixed or w in _NEGATIONS for w in block)
            and not any(start <= i < end for i in self.verbal)
        )

    def named(self, start: int, end: int) -> bool:
        """True when every word of seq[start:end] was typed as an identifier."""
        return all(i in self.names for i in range(start, end))

    def without(self, at: int) -> Side:
        """This side with the word at `at` taken out; a phrase start there moves on."""
        return Side(
            self.seq[:at] + self.seq[at + 1 :],
            frozenset(i if i <= at else i - 1 for i in self.breaks),
            frozenset(i if i < at else i - 1 for i in self.verbal if i != at),
            self.words,
            frozenset(i if i < at else i - 1 for i in self.names if i != at),
        )


def is_rephrasing(turn: Side, claim: Side, fixed: frozenset[str]) -> bool:
    """True when one alternation (and perhaps a moved negation) turns `turn` into `claim`.

    `fixed` holds words no moved block may carry: prepositions, pronouns, modals and question
    words, whose place decides what is asked.
    """
    if len(turn.seq) > MAX_WORDS or len(claim.seq) > MAX_WORDS:
        return False
    if _one_alternation(turn, claim, fixed):
        return True
    moved = _without_moved_negation(turn, claim, fixed)
    if moved is None:
        return False
    turn, claim = moved
    return turn.seq == claim.seq or _one_alternation(turn, claim, fixed)


def _one_alternation(a: Side, b: Side, fixed: frozenset[str]) -> bool:
    surplus = Counter(a.seq) - Counter(b.seq)
    shortfall = Counter(b.seq) - Counter(a.seq)
    if not surplus and not shortfall:
        return (
            _bare_passive(a, b, fixed)
            or _bare_passive(b, a, fixed)
            or _version_swap(a, b)
            or _conjuncts_swapped(a, b)
        )
    if shortfall and surplus:
        return _preposition_swapped(a, b, surplus, shortfall)
    longer, shorter = (a, b) if surplus else (b, a)
    (word, count), *others = (surplus or shortfall).items()
    if others or count != 1:
        return False
    if word in OF_LIKE or word == "for":  # "for" only before an identifier: see _of_phrase
        return _of_phrase(longer, shorter, word, fixed)
    if word == "by":
        return _passive(longer, shorter, fixed)
    return False


def _preposition_swapped(a: Side, b: Side, surplus: Counter[str], shortfall: Counter[str]) -> bool:
    """One preposition traded for another of INTERCHANGEABLE, in place, in a long question; or,
    in any question, "for" and "on" between two noun phrases: "the rate limit for/on the API"."""
    if len(surplus) != 1 or len(shortfall) != 1:
        return False
    ((given, count),) = surplus.items()
    ((wanted, wanted_count),) = shortfall.items()
    if count != 1 or wanted_count != 1 or not {given, wanted} <= INTERCHANGEABLE:
        return False
    if [wanted if word == given else word for word in a.seq] != b.seq:
        return False
    if len(b.seq) >= MIN_WORDS_FOR_SWAP:
        return True
    return {given, wanted} == NOUN_FOR_ON and _between_noun_phrases(b, b.seq.index(wanted))


def _between_noun_phrases(side: Side, at: int) -> bool:
    """True when the preposition at content position `at` joins two noun phrases: one that an
    article opened, and one that opens with an article or is an identifier.

    Between nouns, "for" and "on" both say what the first applies to: "the rate limit for/on
    the public API". After a verb they part ("work for" / "work on", "vote for" / "vote on"),
    and before a bare plural "for" may name an audience where "on" names a topic ("a book for
    kids" / "a book on kids").
    """
    if at == 0 or at + 1 >= len(side.seq) or at in side.breaks:
        return False
    # Content words appear in `words` in order, among the function words: find each one's place.
    places: list[int] = []
    for index, word in enumerate(side.words):
        if len(places) < len(side.seq) and word == side.seq[len(places)]:
            places.append(index)
    if len(places) <= at + 1:
        return False
    start = at
    while start > 0 and places[start - 1] == places[start] - 1 and start not in side.breaks:
        start -= 1  # back over the first noun phrase's words, to its first
    opener, after = places[start] - 1, places[at] + 1
    return (
        start < at
        and opener >= 0
        and side.words[opener] in _ARTICLES
        and not any(i in side.verbal for i in range(start, at))
        and (side.words[after] in _ARTICLES or side.named(at + 1, at + 2))
    )


def _of_phrase(longer: Side, shorter: Side, preposition: str, fixed: frozenset[str]) -> bool:
    """longer = L + X + [of] + Y + R and shorter = L + Y + X + R: "size of pool" / "pool size"."""
    seq = longer.seq
    for at, word in enumerate(seq):
        if word != preposition or at in longer.breaks or at + 1 in longer.breaks:
            continue
        for start in range(max(0, at - MAX_BLOCK), at):
            if not longer.nominal(start, at, fixed):
                continue
            for end in range(at + 2, min(len(seq), at + 1 + MAX_BLOCK) + 1):
                if not longer.nominal(at + 1, end, fixed):
                    continue
                if preposition == "for" and not longer.named(at + 1, end):
                    continue  # "the image for acme/api", not "the best sites for blogs"
                head, modifier = seq[start:at], seq[at + 1 : end]
                if shorter.seq == seq[:start] + modifier + head + seq[end:] and (
                    shorter.one_phrase(start, end - 1)
                ):
                    return True
    return False


def _passive(passive: Side, active: Side, fixed: frozenset[str]) -> bool:
    """passive = L + B + V + [by] + A + R and active = L + A + V + B + R (or L + B + A + V + R).

    V is the verb, perhaps with a negation or adverb before it ("never reused"); the patient B
    and the agent A may carry a prepositional phrase of their own ("the leaked key in acme/web",
    "by the Docker build in CI"). A question fronts its object, so "which algorithm is used by
    acme/auth" is active as "which algorithm does acme/auth use", B before A.
    """
    seq = passive.seq
    for at, word in enumerate(seq):
        if word != "by":
            continue
        for verb_start in (at - 1, at - 2):
            verb = seq[verb_start:at]
            if verb_start < 1 or any(w in fixed for w in verb) or at - 1 not in passive.verbal:
                continue
            for start in range(max(0, verb_start - _LONG_BLOCK), verb_start):
                patient = seq[start:verb_start]
                if patient[0] in fixed or not _movable(patient):
                    continue
                if not passive.one_phrase(start, verb_start):
                    continue
                for end in range(at + 2, min(len(seq), at + 1 + _LONG_BLOCK) + 1):
                    agent = seq[at + 1 : end]
                    if not _movable(agent) or not passive.one_phrase(verb_start, end):
                        continue
                    # Each block is one phrase on the active side too; an auxiliary may stand
                    # between blocks ("which algorithm | does acme/auth use").
                    head, tail = seq[:start], seq[end:]
                    if active.seq == head + agent + verb + patient + tail and active.phrases(
                        start, [len(agent), len(verb), len(patient)]
                    ):
                        return True
                    if active.seq == head + patient + agent + verb + tail and active.phrases(
                        start, [len(patient), len(agent) + len(verb)]
                    ):
                        return True
    return False


def _movable(block: Sequence[str]) -> bool:
    return 0 < len(block) <= _LONG_BLOCK and not any(w in _NEGATIONS or w == "by" for w in block)


def _bare_passive(passive: Side, active: Side, fixed: frozenset[str]) -> bool:
    """ "how long are logs kept" / "how long do we keep logs": the verb moves past its object.

    Only a participle, with the passive's auxiliary in place ("are ... kept"), which a plain
    swap of two words does not have.
    """
    seq = passive.seq
    for at, verb in enumerate(seq):
        if at == 0 or at not in passive.verbal or verb in fixed or verb in _NEGATIONS:
            continue
        for start in range(max(0, at - MAX_BLOCK), at):
            if not passive.nominal(start, at, fixed) or not passive.one_phrase(start, at + 1):
                continue
            if not _follows_be(passive.words, seq[start:at]):
                continue
            if active.seq == [*seq[:start], verb, *seq[start:at], *seq[at + 1 :]] and (
                active.one_phrase(start, at + 1)
            ):
                return True
    return False


def _follows_be(words: Sequence[str], block: Sequence[str]) -> bool:
    """True when `block` appears in `words` right after a form of "be" (articles skipped)."""
    size = len(block)
    for at in range(1, len(words) - size + 1):
        if list(words[at : at + size]) != list(block):
            continue
        before = at - 1
        while before > 0 and words[before] in _ARTICLES:
            before -= 1
        if words[before] in _BE:
            return True
    return False


def _version_swap(a: Side, b: Side) -> bool:
    """ "iOS 5.2 build" / "5.2 iOS build": a number trades places with the name beside it.
    A verb is no name: "which release replaced v2.3" asks for the newer release, "which
    release did v2.3 replace" for the older one (a verb in the past marks its place)."""
    swap = _adjacent_swap(a, b)
    if swap is None:
        return False
    i, j = swap
    if j in a.breaks or j in b.breaks or {i, j} & (a.verbal | b.verbal):
        return False
    has_digit = [any(ch.isdigit() for ch in w) for w in (a.seq[i], a.seq[j])]
    return has_digit[0] != has_digit[1] and (a.seq[i].isalpha() or a.seq[j].isalpha())


def _adjacent_swap(a: Side, b: Side) -> tuple[int, int] | None:
    """The two positions, side by side, whose words trade places between a and b; else None."""
    differ = [i for i, (x, y) in enumerate(zip(a.seq, b.seq, strict=True)) if x != y]
    if len(differ) != 2 or differ[1] != differ[0] + 1:
        return None
    i, j = differ
    return (i, j) if (a.seq[i], a.seq[j]) == (b.seq[j], b.seq[i]) else None


def _conjuncts_swapped(a: Side, b: Side) -> bool:
    """ "memory and CPU limits" / "CPU and memory limits": two words joined by "and" or "or"."""
    swap = _adjacent_swap(a, b)
    if swap is None:
        return False
    first, second = a.seq[swap[0]], a.seq[swap[1]]
    return _joined(a.words, first, second) and _joined(b.words, second, first)


def _joined(words: Sequence[str], first: str, second: str) -> bool:
    return any(
        words[k] == first and words[k + 1] in ("and", "or") and words[k + 2] == second
        for k in range(len(words) - 2)
    )


def _without_moved_negation(a: Side, b: Side, fixed: frozenset[str]) -> tuple[Side, Side] | None:
    """Both sides without their one negation, when it only moved past a short subject.

    "why can engineers not reach" / "why can't engineers reach": the negation crossed
    "engineers". It may not cross a preposition or a phrase boundary ("not a doctor but a
    lawyer" / "a doctor but not a lawyer").
    """
    for negation in _NEGATIONS:
        if a.seq.count(negation) != 1 or b.seq.count(negation) != 1:
            continue
        i, j = a.seq.index(negation), b.seq.index(negation)
        if i == j:
            continue
        rest_a, rest_b = a.without(i), b.without(j)
        low, high = min(i, j), max(i, j)
        crossed = rest_a.seq[low:high]
        if (
            0 < len(crossed) <= MAX_BLOCK
            and not any(w in fixed for w in crossed)
            and (rest_a.one_phrase(low, high) and "but" not in crossed)
        ):
            return rest_a, rest_b
    return None


# -- the possessive, for the second look ---------------------------------------------------------

_POSSESSOR = re.compile(r"^(.*\w)'s$|^(.*\ws)'$")  # "the ALB's", "the users'"
#: "what's", "it's", "let's": a contraction, not a possessive.
_NOT_POSSESSORS = frozenset(
    {"it", "that", "what", "who", "where", "when", "why", "how", "there", "here", "let", "he",
     "she"}
)  # fmt: skip
#: The longest possessed phrase read after a possessor, in words ("the ALB's target group").
MAX_POSSESSED = 3


def _word_and_trailing(token: str) -> tuple[str, str]:
    """ "group?" -> ("group", "?")."""
    word = token.rstrip("?!.,;:)")
    return word, token[len(word) :]


def _open_word(token: str) -> bool:
    """A word a noun phrase runs on through: not a function word, no punctuation after it."""
    word, trailing = _word_and_trailing(token)
    return bool(word) and not trailing and word.lower() not in FUNCTION_WORDS


@lru_cache(maxsize=QUESTIONS_CACHED)
def possessive_unfoldings(text: str) -> tuple[str, ...]:
    """The text with its first possessive unfolded into an of-phrase ("does the prod-web ALB's
    target group have" -> "does the target group of prod-web ALB have"), once for each length
    the possessed phrase may have (1 to MAX_POSSESSED words: without a tagger, "the client's
    certificate expire" may end before or after "expire"); () without a possessive.

    The possessor is the run of words before "'s" up to a function word or punctuation."""
    tokens = text.replace("\u2019", "'").split()
    for at, token in enumerate(tokens):
        found = _POSSESSOR.fullmatch(token)
        owner = found and (found[1] or found[2])
        if not owner or owner.lower() in _NOT_POSSESSORS:
            continue
        start = at
        while start > 0 and _open_word(tokens[start - 1]):
            start -= 1
        readings = []
        for end in range(at + 1, min(at + 1 + MAX_POSSESSED, len(tokens))):
            word, trailing = _word_and_trailing(tokens[end])
            if not word or word.lower() in FUNCTION_WORDS:
                break
            possessed = [*tokens[at + 1 : end], word]
            possessor = [*tokens[start:at], owner + trailing]
            readings.append(
                " ".join([*tokens[:start], *possessed, "of", *possessor, *tokens[end + 1 :]])
            )
            if trailing:
                break
        return tuple(readings)
    return ()
