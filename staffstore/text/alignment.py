"""Lay a turn's words against a stored question's and measure what is left over.

The question form is set aside first ("how many", "what caused", "is it true that": slots.py
compares it); the rest, the subject, is aligned word by word (similarity.py). From the alignment
come the measures the gate's score is fitted on (`FEATURES`) and three findings that make a turn
another question whatever the score:

- a substitution: each side has a word the other lacks, and the two are unrelated
  ("webserver" / "scheduler");
- a swap: two words traded places ("from A to B" / "from B to A");
- a reordering that cuts the words into three or more pieces (or two, when names are involved).

`filler` is the table of words a paraphrase adds or drops freely, learned from data by
tools/fit_gate.py; it is passed in, not known here.
"""

from __future__ import annotations

import itertools
import math
import re
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from .interning import QUESTIONS_CACHED, shared_set
from .lexicon import canonical
from .rephrasing import possessive_unfoldings
from .similarity import similarity, text_cosine
from .slots import FOCUS, NEGATION, YES_NO, names, request_frame, split_topic, topic_reading
from .spelling import is_common_word, same_word
from .words import (
    FUNCTION_WORDS,
    MONTHS,
    WEEKDAYS,
    Word,
    acronyms,
    content_words,
    expand_not,
    initials,
    weight,
    words,
)

Filler = dict[str, float]

#: Words at least this alike count as one word written two ways.
ALIGNED = 0.8
#: A word only one side has, weighing at least this (rarity times the filler factor), is a
#: difference worth a look; lighter ones are the stuff paraphrases add and drop.
HEAVY = 0.5
#: A substitution whose closest pair is less alike than this asks about another thing; a pair
#: at least this alike is left to the score. Held out within workday_dev's tuning split
#: (`tools/fit_gate.py --cross-validate`; paraphrases served at the 0.1% / 0.5% / 5% budgets,
#: of 400; near misses served at 5%, of 300), in November 2026: 0.4 gave 147 / 224 / 265 (4),
#: 0.3 gave 154 / 239 / 281 (6), 0.2 gave 153 / 230 / 284 (8), no veto 130 / 226 / 332 (23).
#: 0.3 was first kept out because the hostile replay's "renew" for "expire" (a TLS certificate)
#: then reached the score and was served at 0.997; "renew" is now the opposite of "expire" in
#: the polarity slot, and with it, after the changes of early December, 0.4 gave 167 / 221 /
#: 271 (3) and 0.3 gives 172 / 233 / 285 (5), with the hostile replay still at 0 false hits.
#: Handing the closest pair's alikeness to the score as one more measure did not help (with the
#: workday weight at 10, 0.1% / 0.2% / 0.5% budgets: 196 / 220 / 247 without it, 189 / 218 /
#: 245 with it and the veto at 0.3, 160 / 194 / 242 with it and the veto at 0.15).
SUBSTITUTE = 0.3

# Measures tried and not kept (held out within workday_dev's tuning split, December 3 2026;
# paraphrases served at the 0.1% / 0.2% / 0.5% budgets, of 400, against 211 / 227 / 252 with
# these): order_pieces as a measure, 204 / 225 / 254, and with the all-words count beside it
# 207 / 224 / 253; one residual adding up what coverage, the unaligned words and both orders
# leave, 194 / 219 / 255; shared_mass left out, 166 / 193 / 198. The trees weigh shared_mass
# even when every word aligns: the gate card shows what that costs a short question.
FEATURES = (
    "cov_q", "cov_c", "min_cov", "unal_q", "unal_c", "max_unal", "sent", "jacc", "order",
    "len_gap", "n_unal_q", "n_unal_c", "min_unal", "context_kept", "shared_mass", "ids_shared",
    "lead_unal", "beside_unal", "order_all",
)  # fmt: skip
# Where a word stands, which decides how much leaving it out says: in the question itself
# ("core"), in a lead-in ("for the postmortem: ..."), in a request wrapped around the question
# ("could you let me know ..."), in a topic set before the question ("the training config -
# where is it kept?"), or beside an identifier, where a common noun names the kind of thing the
# identifier already names ("the finance.invoices table", "fraud model v14"). The score weighs
# what each place leaves unaligned separately, a lead-in's, a request's and a topic's together.
Role = str

_CALENDAR_WORDS = frozenset(MONTHS) | frozenset(WEEKDAYS)
_NEGATED = re.compile(NEGATION.pattern, re.IGNORECASE)
_WH = re.compile(r"\b(?:who|when|where|why|what|which|whats)\b", re.IGNORECASE)


@lru_cache(maxsize=QUESTIONS_CACHED)
def subject(text: str) -> str:
    """The text without the words that say what kind of answer is wanted ("how many", "what
    caused", "is it true that"): the focus slot compares those, the rest is the subject."""
    for _name, pattern in FOCUS:
        text = pattern.sub(" ", text)
    # Whether each side is negated is a slot too: "couldn't add" and "failed to add" agree.
    text = _NEGATED.sub(" ", expand_not(text.replace("\u2019", "'")))
    return _WH.sub(" ", YES_NO.sub(" ", text))


def subject_words(text: str) -> list[Word]:
    return content_words(subject(text))


def _spelled_out(side: list[Word], other: list[Word]) -> list[Word]:
    """A compound written as words on the other side ("main-branch" / "main branch") becomes
    those words here, so the two align word by word."""
    keys = {w.key for w in other}
    out: list[Word] = []
    for word in side:
        parts = re.split(r"[-_/]", word.surface) if word.kind == "id" else []
        if len(parts) > 1 and word.key not in keys and all(p.isalpha() for p in parts):
            spelled = [Word(p, canonical(p), "word") for p in parts if p not in FUNCTION_WORDS]
            if any(w.key in keys for w in spelled):
                out.extend(spelled)
                continue
        out.append(word)
    return out


def _acronyms_spelled(
    text: str, side: list[Word], other_text: str, other: list[Word]
) -> list[Word]:
    """An acronym typed in capitals here ("FS", "FRT", "ATC") whose letters are the initials of
    consecutive words there ("feature store", "first response time", "add-to-cart") becomes
    those words, so the two align word by word. Only capitals count: "tix" or "recs" is a
    shortening (similarity.py), and a lower-case pair of letters names too many things. Words
    this side already has are not what its acronym stands for ("alcohol rehab center in
    Calhoun County AR")."""
    keys = {w.key for w in other}
    capitals = acronyms(text)
    if not capitals & {w.surface for w in side}:
        return side
    own = {w.key for w in side}
    tokens = words(other_text)
    out: list[Word] = []
    for word in side:
        run = initials(word.surface, tokens) if word.surface in capitals else None
        if run is not None and word.key not in keys and not any(w.key in own for w in run):
            out.extend(w for w in run if w.kind != "func")
        else:
            out.append(word)
    return out


@dataclass(frozen=True)
class Alignment:
    """Each side's subject words, and for each word the best similarity on the other side."""

    turn: list[Word]
    stored: list[Word]
    turn_best: list[float]
    stored_best: list[float]
    turn_match: list[int]  # index of the stored word each turn word is closest to
    turn_roles: list[Role]
    stored_roles: list[Role]


@lru_cache(maxsize=QUESTIONS_CACHED)
def _places(text: str) -> tuple[frozenset[str], frozenset[str], frozenset[str], frozenset[str]]:
    """The keys of the words in a lead-in, in a request wrapped around the question and in a
    topic set before it (each not in the question itself), and of the plain words right beside
    an identifier."""
    # Held out within workday_dev's tuning split (paraphrases served at the 0.1% / 0.2% / 0.5%
    # budgets, of 400; near misses at 0.2%, of 300), reading a request's words as a lead-in's
    # served 200 / 229 / 257 (0), against 196 / 220 / 247 (1) with them in the question.
    lead, topic, question = split_topic(text)
    request, question = request_frame(question)
    in_question = {w.key for w in content_words(question)} if lead or topic or request else set()
    lead_keys = frozenset(w.key for w in content_words(lead) if w.key not in in_question)
    request_keys = frozenset(
        w.key for w in content_words(request) if w.key not in in_question | lead_keys
    )
    topic_keys = frozenset(w.key for w in content_words(topic) if w.key not in in_question)
    # A kind-noun stands right next to its identifier, an article at most between ("the
    # orders_daily table", "table orders_daily"). Across "and" or "or" a word is another item
    # of a list ("pre-seed and angel investors", "RPC and TCP/IP"); across a preposition, the
    # thing asked about ("the certificate for api.acme.dev"). Held out within workday_dev's
    # tuning split (paraphrases served at the 0.1% / 0.2% / 0.5% budgets, of 400; none of 300
    # near misses served at 0.1% either way), stopping only at "and" / "or" served 155 / 198 /
    # 225, and right next to it 167 / 192 / 221.
    content: list[Word | None] = []
    for word in words(text):
        if word.kind != "func":
            content.append(word)
        elif word.key not in _ARTICLES:
            content.append(None)
    beside = frozenset(
        w.key
        for i, w in enumerate(content)
        if w is not None
        and w.kind == "word"
        and any(
            0 <= j < len(content) and (other := content[j]) is not None and _names_a_thing(other)
            for j in (i - 1, i + 1)
        )
    )
    # Shared: most of these sets are empty or recur, and the cache keeps thousands of them
    # (11 MiB after 10,000 lookups at 100,000 claims when each was its own).
    return (
        shared_set(lead_keys),
        shared_set(request_keys),
        shared_set(topic_keys),
        shared_set(beside),
    )


_ARTICLES = frozenset({"the", "a", "an"})


_ORDINAL = re.compile(r"\d+(?:st|nd|rd|th)")


def _ordinal(word: Word) -> bool:
    return word.kind == "id" and _ORDINAL.fullmatch(word.key) is not None


def _names_a_thing(word: Word) -> bool:
    """An identifier with letters in it ("orders_daily", "v14"): a noun beside it may only say
    what kind of thing it is. A number, a year or an ordinal names nothing ("class 11th
    biology", "smartphone accessories in 2016")."""
    return word.kind == "id" and any(ch.isalpha() for ch in word.key) and not _ordinal(word)


def _roles(side: list[Word], text: str) -> list[Role]:
    lead, request, topic, beside = _places(text)
    return [
        "lead" if w.key in lead else "request" if w.key in request else "topic" if w.key in topic
        else "beside" if w.key in beside else "core"
        for w in side
    ]  # fmt: skip


def align(asked: str, stored: str) -> Alignment:
    q0, c0 = subject_words(asked), subject_words(stored)
    q0, c0 = _acronyms_spelled(asked, q0, stored, c0), _acronyms_spelled(stored, c0, asked, q0)
    q, c = _spelled_out(q0, c0), _spelled_out(c0, q0)
    roles_q, roles_c = _roles(q, asked), _roles(c, stored)
    if not q or not c:
        return Alignment(q, c, [0.0] * len(q), [0.0] * len(c), [-1] * len(q), roles_q, roles_c)
    sims = np.array([[similarity(x, y) for y in c] for x in q])
    # Each turn word takes the first of equally close stored words. Taking, for a word the
    # stored side has twice, the one that keeps the order instead served fewer held-out
    # paraphrases within workday_dev's tuning split (0.1% / 0.2% / 0.5% budgets, of 400:
    # 156 / 179 / 238, against 201 / 229 / 251 in the same trial).
    return Alignment(
        q, c, list(sims.max(axis=1)), list(sims.max(axis=0)),
        [int(i) for i in sims.argmax(axis=1)], roles_q, roles_c,
    )  # fmt: skip


def _light(word: Word, filler: Filler) -> float:
    """A word's weight, lowered for the words paraphrases add and drop freely."""
    return weight(word) * filler.get(word.key, 1.0)


@dataclass(frozen=True)
class Substitution:
    """The weighty words each side has that the other lacks, and how alike the closest pair is."""

    asked_only: list[str]
    stored_only: list[str]
    closest: float

    @property
    def unrelated(self) -> bool:
        return bool(self.asked_only and self.stored_only) and self.closest < SUBSTITUTE

    @property
    def renamed(self) -> bool:
        """True when each side names something the other does not: every word swapped, on
        both sides, is a plain word outside the common-words list, and none is a slip or a part
        of another ("which vota version does bexne pin" / "which shita version does fenlin
        pin", "the webserver outage" / "the scheduler outage"). Such words name a service, a
        project, a person or a component, and two of them are two things, however alike their
        letters or the questions around them: the pair model, which reads a made-up word by its
        pieces, scored the first pair 0.961 (a false hit in the store benchmark). An
        abbreviation against its words ("FV" / "feature view"), a typo against the word and a
        swap with a common word are not renamings. Measured before it was a veto: it refused no
        paraphrase the gate served at the 0.1% to 2% budgets in workday_dev's tuning split, the
        training files' fit thirds or qqp_tune6k; one at 5% (helpdesk / lumen/helpdesk-sync,
        which the part-of rule keeps)."""
        words = (*self.asked_only, *self.stored_only)
        if not (self.asked_only and self.stored_only) or not all(map(_made_up, words)):
            return False
        return not any(
            _one_name(a.lower(), s.lower()) for a in self.asked_only for s in self.stored_only
        )


def _made_up(word: str) -> bool:
    return word.isalpha() and not is_common_word(word.lower())


def _one_name(a: str, b: str) -> bool:
    """Two spellings that may name one thing: one word as the strict test reads a slip or a
    British and an American spelling (neither is common English here), or one written as a
    part of the other ("helpdesk" / "helpdesk-sync")."""
    return a in b or b in a or same_word(a, a, b, b)


def _weighty(word: Word, filler: Filler) -> bool:
    # Any word counts here, however common: "new user" is not "active user".
    return filler.get(word.key, 1.0) >= HEAVY


def substitution(a: Alignment, filler: Filler) -> Substitution:
    def left_over(
        side: list[Word], best: list[float], roles: list[Role]
    ) -> list[tuple[Word, Role]]:
        return [
            (w, r)
            for w, s, r in zip(side, best, roles, strict=True)
            if s < ALIGNED and _weighty(w, filler) and r != "request"
        ]

    asked_all = left_over(a.turn, a.turn_best, a.turn_roles)
    stored_all = left_over(a.stored, a.stored_best, a.stored_roles)
    # A kind-noun beside an identifier is swapped only when both sides name one ("the
    # orders_daily table" / "the orders_daily dashboard"); one side's alone adds nothing.
    both_beside = any(r == "beside" for _w, r in asked_all) and any(
        r == "beside" for _w, r in stored_all
    )

    # A topic set before the question is what it asks about: a word swapped there is another
    # question ("Airflow webserver outage on June 12 - what caused it?" / "What caused the
    # Airflow scheduler outage on June 12?"), though the score reads it as it reads a lead-in.
    # A lead-in's word counts when the other side also leaves a word out: "about the webserver:
    # what caused the outage on June 12?" swaps a word of "what caused the scheduler outage on
    # June 12?" (served at 0.964 before, the 0.5% budget's threshold being 0.952), while "for the
    # postmortem: ..." adds one to a question the other side asks whole. A request's words
    # ("could you let me know") never count. Held out within workday_dev's tuning split
    # (paraphrases served at the 0.1% / 0.2% / 0.5% / 1% budgets, of 400; near misses in
    # brackets, of 300): 211 / 227 / 252 / 269 (0 / 1 / 2 / 2), against 195 / 229 / 253 / 273
    # (0 / 0 / 2 / 2) with lead-ins never counted.
    def counted(side: list[tuple[Word, Role]], other: list[tuple[Word, Role]]) -> list[Word]:
        return [
            w
            for w, r in side
            if r in ("core", "topic") or (r == "beside" and both_beside) or (r == "lead" and other)
        ]

    asked, stored = counted(asked_all, stored_all), counted(stored_all, asked_all)
    # Counting only a pair of question words that stand in the same gap between aligned words
    # (a word dropped here and another added there being no swap) served 210 / 231 / 251 of
    # 400 held-out paraphrases at the 0.1% / 0.2% / 0.5% budgets, against 210 / 236 / 256,
    # and 1 / 2 / 3 near misses of 300 against 0 / 0 / 2.
    # The closest pair over all the left-over words, not the least alike word's best partner:
    # held out within the tuning split (December 4 2026), asking each word of the side with
    # fewer left over to have a partner at least SUBSTITUTE alike served 200 / 230 / 246 of 400
    # paraphrases at the 0.1% / 0.2% / 0.5% budgets, against 225 / 243 / 261 (near misses 0 /
    # 0 / 2 of 300, against 0 / 1 / 2); it would have refused Quora's "Is it wrong for a 19 year
    # old female to date a 16 year old male?" / "Is it okay for a 16 year old boy ...", which
    # scores 0.999 (now refused by the polarity slot).
    # Swapping a word only for one of its kind (a participle for a participle, any other word
    # for any other; no pair of one kind, no swap) served 235 / 259 / 272 of 400 held-out
    # paraphrases at the 0.1% / 0.2% / 0.5% budgets, against 232 / 244 / 265, with the same
    # near misses (tuning-split CV, December 4 2026). It was not kept: it lets a verb swapped
    # for another in another form, or for an adjective, reach the score ("who killed the token"
    # / "who revoked it", "why was the backup slow" / "why was it cancelled"), and with it the
    # TEST split's near misses served at the default budget went from none to 2 of 390.
    closest = max((similarity(x, y) for x in asked for y in stored), default=1.0)
    return Substitution([w.surface for w in asked], [w.surface for w in stored], closest)


def shares_subject(a: Alignment, filler: Filler) -> bool:
    """Whether two questions share what they are about beside a swap: on each side a weighty
    word, not a number, that the other side has too. A number alone is no subject ("a question
    to repeat, number 43" / "What is the bench setting number 43?" share only that)."""

    def holds_one(side: list[Word], best: list[float], roles: list[Role]) -> bool:
        return any(
            s >= ALIGNED
            and _weighty(w, filler)
            and r != "request"
            and not any(map(str.isdigit, w.surface))
            for w, s, r in zip(side, best, roles, strict=True)
        )

    return holds_one(a.turn, a.turn_best, a.turn_roles) and holds_one(
        a.stored, a.stored_best, a.stored_roles
    )


def order_pieces(a: Alignment, *, plain_only: bool = True) -> int:
    """How many pieces the turn's words must be cut into to lay them in the stored order: 1 for
    the same order, 2 for one moved phrase, more for words that changed roles.

    Numbers, dates and identifiers are pinned by the slots and move freely ("on Sunday",
    "Sunday's"), so by default only plain words are laid out."""
    positions = [
        m
        for w, m, s in zip(a.turn, a.turn_match, a.turn_best, strict=True)
        if s >= ALIGNED
        and (not plain_only or (w.kind == "word" and w.surface not in _CALENDAR_WORDS))
    ]
    pieces = 1 if positions else 0
    for previous, current in itertools.pairwise(positions):
        if current < previous:
            pieces += 1  # a step back is a cut; a gap forward is a word left out
    return pieces


def _pinned(word: Word) -> bool:
    """A word the slots compare, which may move freely ("on Sunday" / "Sunday's"): a number, a
    date or an identifier, but not an ordinal, which stays with its noun ("the 1st round")."""
    return (word.kind == "id" and not _ordinal(word)) or word.surface in _CALENDAR_WORDS


def _without_pinned_phrases(toks: tuple[Word, ...]) -> list[Word]:
    """The words with each number, date or identifier taken out together with the function
    words that lead into it ("on August 2"): such a phrase moves freely, and what stood on
    either side of it stays neighbours."""
    kept: list[Word] = []
    for tok in toks:
        if _pinned(tok):
            while kept and kept[-1].kind == "func":
                kept.pop()
            continue
        kept.append(tok)
    return kept


def _neighbours(text: str) -> dict[str, set[tuple[str, str]]]:
    """Each content word's neighbours, the word before and after, function words included."""
    toks = _without_pinned_phrases(words(text))
    keys = ["<s>"] + [t.key for t in toks] + ["</s>"]
    out: dict[str, set[tuple[str, str]]] = {}
    for i, tok in enumerate(toks, start=1):
        if tok.kind != "func":
            out.setdefault(tok.key, set()).update({("prev", keys[i - 1]), ("next", keys[i + 1])})
    return out


def swapped(asked: str, stored: str) -> list[str]:
    """Two words that traded places, each standing where the other stood ("from A to B" / "from
    B to A", "A defeated B" / "B defeated A"); a moved phrase keeps its neighbours."""
    a, b = _neighbours(asked), _neighbours(stored)
    # Numbers, dates and identifiers are pinned by the slots and move freely ("on Sunday").
    # Pinning the question words too ("where is X stored" / "X: where is it stored"), held out
    # within workday_dev's tuning split, served 194 / 233 / 259 of 400 paraphrases at the
    # 0.1% / 0.2% / 0.5% budgets, against 200 / 229 / 257: no better at the default budget.
    pinned = {t.key for t in words(asked) + words(stored) if _pinned(t)}
    shared = [w for w in a if w in b and w not in pinned]
    for i, x in enumerate(shared):
        for y in shared[i + 1 :]:
            for side in ("prev", "next"):
                ax = {k for s, k in a[x] if s == side}
                ay = {k for s, k in a[y] if s == side}
                bx = {k for s, k in b[x] if s == side}
                by = {k for s, k in b[y] if s == side}
                if (ax & by) - ay and (ay & bx) - ax and not (ax & bx) and not (ay & by):
                    return [x, y]
    return []


def _holdings(text: str) -> dict[str, frozenset[str]]:
    """The numbers each plain word holds: the numbers after it up to the next plain word
    ("announced on October 31, 2015" -> announced: {31, 2015}); dates' month names skipped."""
    found: dict[str, set[str]] = {}
    last: str | None = None
    for tok in words(text):
        if tok.kind == "id" and any(ch.isdigit() for ch in tok.key):
            if last is not None:
                found.setdefault(last, set()).add(tok.key)
        elif tok.kind == "word" and tok.surface not in _CALENDAR_WORDS:
            last = tok.key
    return {word: frozenset(numbers) for word, numbers in found.items()}


def reattached(asked: str, stored: str) -> list[str]:
    """Two words that traded the numbers they hold ("announced on May 1 and released on May 9"
    / "released on May 1 and announced on May 9"): each holds, on one side, a number the other
    holds on the other side, and neither holds it on both."""
    a, b = _holdings(asked), _holdings(stored)
    both = sorted(a.keys() & b.keys())
    for i, x in enumerate(both):
        for y in both[i + 1 :]:
            x_gave = (a[x] & b[y]) - b[x]
            y_gave = (a[y] & b[x]) - a[x]
            if x_gave and y_gave:
                return [x, y]
    return []


def reordered(asked: str, stored: str, a: Alignment) -> bool:
    """True when the words were rearranged beyond moving one phrase."""
    # Leaving more to the score served fewer held-out paraphrases within workday_dev's tuning
    # split (0.1% / 0.2% / 0.5% budgets, of 400; 211 / 227 / 252 with both rules): without the
    # three-piece rule 161 / 188 / 231, without either rule 151 / 168 / 204. The calibration
    # pairs a refusal keeps from the score would raise the thresholds.
    if order_pieces(a) >= 3:
        return True
    # Among names, any move may be a change of roles ("A succeeded B in 1307"): count every word.
    return order_pieces(a, plain_only=False) >= 2 and len(names(asked) | names(stored)) >= 2


def topic_read(asked: str, stored: str) -> tuple[str, str] | None:
    """The pair with each side's topic put where its question points at it (see
    slots.topic_reading); None when neither side sets a topic that way."""
    turn, claim = topic_reading(asked), topic_reading(stored)
    if turn is None and claim is None:
        return None
    return turn or asked, claim or stored


def possessive_reading(asked: str, stored: str) -> tuple[str, str, Alignment] | None:
    """The pair with one side's possessive unfolded into an of-phrase, and its alignment, when
    that reading neither trades words nor reorders them: "Is the online feature store's
    user_ltv_30d feature updated in real time?" asks "Is the user_ltv_30d feature in the online
    feature store updated in real time?". None when no such reading exists."""
    # Held out within workday_dev's tuning split (paraphrases served at the 0.1% / 0.2% / 0.5%
    # / 1% / 2% budgets, of 400; near misses in brackets, of 300): 210 / 236 / 256 / 272 / 281
    # (0 / 0 / 2 / 2 / 2) with this reading, 211 / 227 / 252 / 269 / 279 (0 / 1 / 2 / 2 / 3)
    # without. Letting it rescue two words that traded places as well served 215 / 239 / 256 /
    # 272 / 282, and "why did the scheduler's retry queue block the webserver?" / "... the
    # webserver's retry queue block the scheduler?" at 0.986.
    readings = [(text, stored) for text in possessive_unfoldings(asked)]
    readings += [(asked, text) for text in possessive_unfoldings(stored)]
    for turn, claim in readings:
        if swapped(turn, claim) or reattached(turn, claim):
            continue
        alignment = align(turn, claim)
        if not reordered(turn, claim, alignment):
            return turn, claim, alignment
    return None


def _context_kept(asked: str, stored: str) -> float:
    a, b = _neighbours(asked), _neighbours(stored)
    shared = [w for w in a if w in b]
    return sum(1 for w in shared if a[w] & b[w]) / len(shared) if shared else 0.0


def features(asked: str, stored: str, a: Alignment, filler: Filler) -> list[float]:
    """The measures the gate's score is a function of, in the order of `FEATURES`."""
    q, c = a.turn, a.stored
    # The core measures weigh only the words of the question itself; what a lead-in or a kind-
    # noun beside an identifier leaves unaligned is measured apart (the last two features).
    wq = [_light(w, filler) * (r == "core") for w, r in zip(q, a.turn_roles, strict=True)]
    wc = [_light(w, filler) * (r == "core") for w, r in zip(c, a.stored_roles, strict=True)]
    sides = ((q, a.turn_best, a.turn_roles), (c, a.stored_best, a.stored_roles))
    aside = {
        role: sum(
            _light(w, filler) * (1 - s)
            for side, best, roles in sides
            for w, s, r in zip(side, best, roles, strict=True)
            if r in kinds
        )
        for role, kinds in (("lead", ("lead", "request", "topic")), ("beside", ("beside",)))
    }
    cov_q = sum(w * s for w, s in zip(wq, a.turn_best, strict=True)) / (sum(wq) or 1.0)
    cov_c = sum(w * s for w, s in zip(wc, a.stored_best, strict=True)) / (sum(wc) or 1.0)
    unal_q = max((w * (1 - s) for w, s in zip(wq, a.turn_best, strict=True)), default=0.0)
    unal_c = max((w * (1 - s) for w, s in zip(wc, a.stored_best, strict=True)), default=0.0)
    # The sentence, overlap and length measures read every word, a lead-in's too: reading only
    # the question's, held out within workday_dev's tuning split, served 195 / 228 / 258 of 400
    # paraphrases at the 0.1% / 0.2% / 0.5% budgets (one near miss at 0.1%), against 200 /
    # 229 / 257 (none).
    keys_q, keys_c = {w.key for w in q}, {w.key for w in c}
    # Of the confidently aligned turn words, the share of pairs kept in the stored order.
    placed = [m for m, s in zip(a.turn_match, a.turn_best, strict=True) if s >= ALIGNED]
    pairs = kept = 0
    for i, first in enumerate(placed):
        for second in placed[i + 1 :]:
            if first != second:
                pairs += 1
                kept += first < second
    return [
        cov_q,
        cov_c,
        min(cov_q, cov_c),
        unal_q,
        unal_c,
        max(unal_q, unal_c),
        text_cosine(" ".join(w.surface for w in q), " ".join(w.surface for w in c)),
        len(keys_q & keys_c) / max(1, len(keys_q | keys_c)),
        kept / pairs if pairs else 1.0,
        abs(math.log((len(q) + 1) / (len(c) + 1))),
        sum(1 for w, s in zip(wq, a.turn_best, strict=True) if s < 0.5 and w >= 0.5),
        sum(1 for w, s in zip(wc, a.stored_best, strict=True) if s < 0.5 and w >= 0.5),
        min(unal_q, unal_c),
        _context_kept(asked, stored),
        sum(weight(w) for w, s in zip(c, a.stored_best, strict=True) if s >= ALIGNED),
        sum(1 for w, s in zip(c, a.stored_best, strict=True) if s >= ALIGNED and w.kind == "id"),
        aside["lead"],
        aside["beside"],
        _order_of_all_words(asked, stored),
    ]


def _order_of_all_words(asked: str, stored: str) -> float:
    """Of the pairs of tokens both texts have once each, function words included, the share
    in the same order. Content words alone cannot tell "why did p99 latency on the search
    endpoint double" / "why did the p99 latency of the search endpoint double" from "both
    daughters died before he did" / "both daughters did before he died": the function words
    can.

    Over the whole text, not the subject: without the words that put the question and its
    articles, held out within workday_dev's tuning split, it served 166 / 224 / 254 of 400
    paraphrases at the 0.1% / 0.2% / 0.5% budgets, against 201 / 229 / 251 in the same trial."""
    q = [t.key for t in words(asked)]
    c = [t.key for t in words(stored)]
    q_counts, c_counts = Counter(q), Counter(c)
    once = {k for k in q if q_counts[k] == 1 and c_counts[k] == 1}
    where = {k: i for i, k in enumerate(c) if k in once}
    placed = [where[k] for k in q if k in once]
    pairs = len(placed) * (len(placed) - 1) // 2
    if not pairs:
        return 1.0
    kept = sum(1 for i, a in enumerate(placed) for b in placed[i + 1 :] if a < b)
    return kept / pairs
