"""query_first: answer a turn from the owner's claims, or miss with a reason.

Candidates come from the store (an exact key lookup and FTS5); each is compared with the turn
by matching.compare, which says whether the turn asks the stored question. A hit needs exactly
one answer among the live, fresh, in-scope claims that ask it. Everything else is a miss with a
reason code a person can read:

    empty                the turn has no text, or only politeness
    too_long             longer than any question worth caching
    follow_up            the turn leans on context it does not carry ("and why?", "the second
                         one", "what does this error mean?")
    no_candidate         no stored question shares its words
    below_threshold      the nearest stored question asks something else, or the second
                         look scored it under the budget's threshold (the miss gives both)
    changed_requirement  nearly the stored question, but a number, version, name, platform,
                         date, negation, repository or another slot differs (`differs_in`
                         names the slot the second look found)
    word_order           the same words in an order that changes the meaning
    stale                the matching claim is superseded, expired, from another revision, or
                         made on another day than the "yesterday" (week, month, ...) it names
    retracted            the matching claim was retracted
    conflict             live claims in one scope answer the question differently
    ambiguous            claims from different repositories or profiles answer it differently

When in doubt, miss: a miss costs one model call, a false hit costs trust.
"""

from __future__ import annotations

import asyncio
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import lru_cache

from ..models import Claim, Decision, Turn
from ..store import StaffStore, SyncStore
from ..store.rows import as_of
from ..text.interning import QUESTIONS_CACHED
from ..text.lexicon import REFERENTS, is_specific
from ..text.matching import Comparison, Normalized, compare, normalize
from ..text.respelling import (
    owned_repositories,
    repositories_named_alone,
    repository_owners,
    respelled,
)
from ..text.slots import SLOTS, Difference, numbers_differ, strict_difference, topic_reading
from ..text.spelling import is_common_word, typo_close
from ..text.words import words
from .relative_time import same_period
from .scoring import DEFAULT_BUDGET, Assessment, default_model

#: Words in more of an owner's questions than this are left out of the widened lookup.
NEAR_SEARCH_MAX_COUNT = 1_000

#: The second look scores at most this many candidates, nearest first: each costs an alignment.
SOFT_CANDIDATES = 3

#: Below this strict similarity a candidate is not read again: the second look served no
#: paraphrase of workday_dev's tuning split from lower than 0.34 (at its loosest budget).
SOFT_FLOOR = 0.3

#: Nor is one this far below the nearest candidate: of the 245 turns of workday_dev's tuning
#: split the second look served at its loosest budget, 242 were served the nearest and 3 one
#: within 0.087 of it, while three in four of the others it read were further off (each read
#: costs about a millisecond when the question is new to it).
SOFT_MARGIN = 0.1

#: The lookup reads the questions that hold all of the turn's this many rarest words (and, on
#: widening, all of them but one).
LOOKUP_WORDS = 3

#: The second look also reads questions that share any of the turn's this many rarest words.
SIMILAR_WORDS = 4

#: How many of an owner's questions that share a rare word the widened lookup reads.
SIMILAR_LIMIT = 8

#: The strict test reads at most this many candidates, those sharing most of the turn's words
#: first: reading a stored question costs a normalization, and a widened lookup in a large
#: store can bring back dozens that share two rare words and little else.
MAX_COMPARED = 16

#: How many of an owner's questions naming a repository the lookup reads for its owners, when
#: a turn names it without one (`ambiguous_repositories`).
OWNERS_READ = 256

#: No stored question is this long; a longer turn is a miss without a lookup.
MAX_TURN_CHARS = 4_000

# Openings that continue an earlier exchange rather than ask something whole.
_FOLLOW_UP_OPENING = re.compile(
    r"^\W*(?:and|but|also|plus|so|then|ok(?:ay)?\s+(?:and|so|but)|what\s+about|how\s+about|"
    r"what\s+if|same\s+(?:for|with|question)|why\s+not|why\s+is\s+that|says\s+who|"
    r"what\s+else|anything\s+else|and\s+then)\b",
    re.IGNORECASE,
)


# "this error", "these logs", "the following program": a question whose first clause points at
# something outside its text; two people who type it word for word may be asking about different
# things. Later in the text, "this" may point back at what the text already said ("what is the
# deepest lake, and how does this lake ..."). Before a time ("this week", "these days") or in
# quotes (JavaScript's `this`) a demonstrative points at nothing.
_POINTS_ELSEWHERE = re.compile(
    r"(?<![\w'\"`])(?:this|these)(?![\w'\"`])"
    r"(?!\s+(?:year|month|week|weekend|quarter|sprint|release|morning|afternoon|evening|night"
    r"|summer|winter|spring|autumn|fall|season|semester|time|moment|decade|century|days|weeks"
    r"|months|years)\b)"
    r"|\bthe\s+following\b",
    re.IGNORECASE,
)
_CLAUSE_END = re.compile(r"[?!;,]|\.(?:\s|$)")


def points_elsewhere(text: str) -> bool:
    """True when the question's first clause points at something outside its text."""
    return bool(_POINTS_ELSEWHERE.search(_CLAUSE_END.split(text, maxsplit=1)[0]))


# Misses worth a second, wider look: nothing was found that asks the same question.
_WIDEN_ON = frozenset({"no_candidate", "below_threshold", "changed_requirement", "word_order"})


def _miss(
    reason: str,
    score: float | None = None,
    claim: Claim | None = None,
    *,
    asked_only: list[str] | None = None,
    stored_only: list[str] | None = None,
    threshold: float | None = None,
    budget: float | None = None,
    differs_in: str | None = None,
) -> Decision:
    return Decision(
        outcome="miss",
        reason=reason,
        score=score,
        claim_id=claim.id if claim else None,
        asked_only=asked_only or [],
        stored_only=stored_only or [],
        threshold=threshold,
        budget=budget,
        differs_in=differs_in,
    )


def _explained(
    reason: str,
    score: float | None,
    claim: Claim,
    assessment: Assessment,
    *,
    threshold: float | None = None,
    budget: float | None = None,
    differs_in: str | None = None,
) -> Decision:
    """A miss explained by the second look's reading of `claim`: the words, or the slot's
    values, that only one side has."""
    return _miss(
        reason,
        score,
        claim,
        asked_only=list(assessment.asked_only),
        stored_only=list(assessment.stored_only),
        threshold=threshold,
        budget=budget,
        differs_in=differs_in,
    )


def _leans_on_context(turn: Normalized, against: Comparison | None) -> bool:
    referents = {w for w in turn.content if w in REFERENTS or w == "that"}
    if not referents:
        return False
    return against is None or bool(referents & against.extra)


def _as_typed(words: frozenset[str], question: Normalized) -> list[str]:
    """These words of `question` as it spelled them, in its order."""
    typed = dict(question.spellings)
    return [typed.get(word, word) for word in dict.fromkeys(question.words) if word in words]


def _why_different(turn: Normalized, comparison: Comparison) -> str:
    """Name the difference between a turn and the nearest stored question that it is not."""
    if _leans_on_context(turn, comparison):
        return "follow_up"
    differing = comparison.missing | comparison.extra
    if not differing and not comparison.order_ok:
        return "word_order"
    if any(is_specific(word) for word in differing):
        return "changed_requirement"
    # One word swapped for another, the rest the same: another name, another thing.
    if len(comparison.missing) == 1 and len(comparison.extra) == 1:
        return "changed_requirement"
    return "below_threshold"


def _freshness(claim: Claim, turn: Turn, now: datetime) -> str | None:
    """None when the claim may serve this turn, else the reason it may not."""
    status = as_of(claim, now.timestamp()).status
    if status == "retracted":
        return "retracted"
    if status != "live":
        return "stale"
    if not same_period(claim.question, claim.created_at, now):
        return "stale"  # "yesterday" in the claim was another day than the turn's yesterday
    if turn.repository is not None and claim.repository not in (None, turn.repository):
        return "changed_requirement"  # a finding about another repository
    # The turn pins the code it asks about; a finding made at another revision of that
    # repository (or at an unknown one) may no longer hold.
    if turn.revision is not None and claim.repository is not None:
        return "stale" if claim.revision != turn.revision else None
    return None


def _naming_the_agent(asked: Normalized, text: str, agent: str | None) -> Normalized:
    """The turn as it reads when "the Kernel agent" is called "Kernel", as its claim calls it.

    People name the agent that made a finding either way; the word "agent" after the claim's
    own agent name adds nothing. Any other "agent" stays a word of the question.
    """
    if not agent or "agent" not in asked.content:
        return asked
    pattern = re.compile(rf"\b({re.escape(agent)})\s+agent\b", re.IGNORECASE)
    return normalize(pattern.sub(r"\1", text)) if pattern.search(text) else asked


#: A turn compares itself with at most MAX_COMPARED questions, and again when its lookup
#: widens: room for the turns of a few threads at once is all the cache is for. Over 10,000
#: lookups at 100,000 claims, 4,096 entries served 236 of 50,722 comparisons and 256 served
#: 234, for 5.7 MiB less memory.
_COMPARISONS_CACHED = 512


@lru_cache(maxsize=_COMPARISONS_CACHED)
def _comparison(text: str, question: str, agent: str | None, names: frozenset[str]) -> Comparison:
    """The strict comparison of a turn with a stored question. Cached: on a miss, the lookup
    widens and decides again over the first candidates and the new ones."""
    return compare(_naming_the_agent(normalize(text), text, agent), normalize(question), names)


def store_names(turn: Normalized, known: frozenset[str]) -> frozenset[str]:
    """The turn's words that are names in the store it is asked of: words of the owner's
    questions (`known`, as the store counts them) that are not common English as the turn
    typed them. Such a word is never read as a keyboard slip for another: in a store that
    holds questions about the services "garvo" and "garlo", each is a name, and serving one's
    answer to the other was a false hit of the store benchmark (100,000 claims). A common word
    needs no such care (a slip between two common words is never forgiven), and a store's
    stored questions keep their askers' typos, which a correctly typed common word should
    still find."""
    typed = dict(turn.spellings)
    return frozenset(word for word in known if not is_common_word(typed.get(word, word).casefold()))


def _renamed(comparison: Comparison, names: frozenset[str]) -> tuple[str, str] | None:
    """A name of the store that the turn asks about where the stored question has another
    name a slip away (the turn's, the stored question's), else None."""
    for name in sorted(comparison.extra & names):
        for other in sorted(comparison.missing):
            if typo_close(name, other):
                return name, other
    return None


def _has_digit(word: str) -> bool:
    # str.isdigit mapped over the characters, not a generator expression: the second look asks
    # this of some 70 words a bench miss, 0.08 ms that way and 0.05 this.
    return any(map(str.isdigit, word))


def second_look_candidates(
    text: str, compared: list[tuple[Claim, Comparison]]
) -> list[tuple[Claim, Comparison]]:
    """The few candidates the second look reads, nearest first, among those the strict test
    compared with the turn `text`."""
    # A stored question that differs in a number, version or date is another question for the
    # second look as well (its number slot): no need to read it again, nor to let it take the
    # place of one that may be the same question. The number slot decides, not the words with
    # digits: "Mar 4 2025" / "2025-03-04", "P1s" / "P1" are one value written two ways. Leaving
    # out every candidate whose words with digits differ, as before December 5 2026, kept 11
    # of the 340 fit-third paraphrases of workday_train_{a,b,c} that the gate serves against
    # their own claim alone from being read in a store of their file's 100 claims.
    still_open = [
        (claim, c)
        for claim, c in compared
        if c.similarity >= SOFT_FLOOR
        and not (any(map(_has_digit, c.missing | c.extra)) and numbers_differ(text, claim.question))
    ]
    nearest = sorted(still_open, key=lambda pair: -pair[1].similarity)[:SOFT_CANDIDATES]
    if nearest:
        floor = nearest[0][1].similarity - SOFT_MARGIN
        nearest = [pair for pair in nearest if pair[1].similarity >= floor]
    return nearest


def _unsaid_owner(question: str, ambiguous: frozenset[str]) -> tuple[str, str] | None:
    """A repository of `question` that the turn names without its owner where the store holds
    that name under another owner too (`ambiguous`, each named alone by the turn: see
    ambiguous_repositories): (the name, the owner's name)."""
    for name, owner in owned_repositories(question):
        if name in ambiguous:
            return name, f"{owner}/{name}"
    return None


def _vetoed(
    question: str, comparison: Comparison, names: frozenset[str], ambiguous: frozenset[str]
) -> Assessment | None:
    """The second look's refusal of a candidate before any reading: another of the store's
    names (`name`), or a repository the turn does not say whose (`identifier`)."""
    renamed = _renamed(comparison, names)
    if renamed is not None:
        return Assessment("name", (renamed[0],), (renamed[1],))
    unsaid = _unsaid_owner(question, ambiguous)
    if unsaid is not None:
        return Assessment("identifier", (unsaid[0],), (unsaid[1],))
    return None


def _second_look(
    turn: Turn,
    compared: list[tuple[Claim, Comparison]],
    budget: float,
    names: frozenset[str] = frozenset(),
    ambiguous: frozenset[str] = frozenset(),
) -> tuple[list[tuple[Claim, float]], tuple[Claim, Assessment] | None]:
    """Score the nearest candidates the strict test refused. Returns the claims whose score
    reaches the budget's threshold for their form (the best one and its restatements), and the
    nearest assessment. `ambiguous`: repository names the turn gives no owner that the store
    holds under two or more (ambiguous_repositories)."""
    model = default_model()
    nearest = second_look_candidates(turn.text, compared)
    # A candidate that names another of the store's names a slip away from the turn's is
    # another question, as a slot that differs is: its alignment would read the two names as
    # one word, and no score is asked. So is one whose repository the turn names without the
    # owner where the store has that name under two: the turn does not say which it asks of.
    vetoed = [_vetoed(claim.question, c, names, ambiguous) for claim, c in nearest]
    # The slots and the alignment read each other candidate, then the pair model those let
    # through.
    open_ = [claim.question for (claim, _c), v in zip(nearest, vetoed, strict=True) if v is None]
    read = iter(model.assess_many(turn.text, open_, names))
    found = [next(read) if v is None else v for v in vetoed]
    assessed = [(claim, a) for (claim, _c), a in zip(nearest, found, strict=True)]
    scored = [(claim, a) for claim, a in assessed if a.probability is not None]
    best = max(scored, key=lambda pair: pair[1].probability or 0.0, default=None)
    explained = best or (assessed[0] if assessed else None)

    def reaches(claim: Claim, assessment: Assessment) -> bool:
        return (assessment.probability or 0.0) >= model.threshold_for(budget, claim.question)

    if best is None or not reaches(*best):
        return [], explained
    # Only the best question and its restatements: two different questions that both score
    # high must not be read as a conflict between their answers.
    key = normalize(best[0].question).key
    same = [
        (claim, a.probability or 0.0)
        for claim, a in scored
        if reaches(claim, a) and normalize(claim.question).key == key
    ]
    return same, explained


@lru_cache(maxsize=QUESTIONS_CACHED)
def names_its_subject(text: str) -> bool:
    """True when the turn names what it is about with an identifier or a number
    ("analytics.orders_daily", "CVE-2024-22262", "March 4"): an "it" or "this" in such a turn
    points back at that ("The prod-iam workspace's state: where is it stored?"), not at an
    earlier turn. The second look then requires the stored question to name the same."""
    return any(word.kind == "id" for word in words(text))


_PLAIN_WORD = re.compile(r"\w+")


@lru_cache(maxsize=QUESTIONS_CACHED)
def _plain_words(text: str) -> tuple[str, ...]:
    # Each distinct word once, interned, in a tuple: the cache keeps thousands of these, of
    # words that recur across them, and a tuple of eight words takes a seventh of a frozenset's
    # memory (14.5 MiB after 10,000 lookups at 100,000 claims as frozensets).
    return tuple(dict.fromkeys(map(sys.intern, _PLAIN_WORD.findall(text.casefold()))))


def _most_alike(text: str, candidates: Sequence[Claim], limit: int) -> Sequence[Claim]:
    """The `limit` candidates whose questions share the largest part of their words with the
    turn, in the order given otherwise (a same-content match comes first from the store)."""
    if len(candidates) <= limit:
        return candidates
    asked = frozenset(_plain_words(text))

    def shared(claim: Claim) -> float:
        stored = _plain_words(claim.question)
        return len(asked.intersection(stored)) / max(len(stored), 1)

    return sorted(candidates, key=shared, reverse=True)[:limit]


def compared_candidates(
    text: str, candidates: Sequence[Claim], names: frozenset[str] = frozenset()
) -> list[tuple[Claim, Comparison]]:
    """The candidates the strict test reads (those sharing most of the turn's words), each with
    its comparison; `names` as store_names gives them."""
    return [
        (claim, _comparison(text, claim.question, claim.agent, names))
        for claim in _most_alike(text, candidates, MAX_COMPARED)
    ]


def strict_match_difference(text: str, question: str, names: frozenset[str]) -> Difference | None:
    """How a turn the strict test matched with a stored question differs from it in what the
    strict test folds away, if it does (slots.strict_difference): its time ("ever", "right
    now", the auxiliaries: "Who has ever been on call?" reads as "Who is on call right now?")
    or who did what (the "be" of a passive: "Who was granted access?" reads as "Who granted
    access?"). A time word misspelt ("last weeek") is read as the stored question's word
    first, as the second look reads it."""
    found = strict_difference(text, question)
    if found is None:
        return None
    return strict_difference(respelled(text, question, names), question)


def decide(
    turn: Turn,
    candidates: Sequence[Claim],
    *,
    second_look: bool = True,
    names: frozenset[str] = frozenset(),
    ambiguous: frozenset[str] = frozenset(),
) -> Decision:
    """The gate's decision for a turn among candidate claims (all of one owner).

    Without `second_look`, only the strict test runs: for a caller that will widen the lookup
    on a miss and decide again, where the second look is worth its cost once. `names`: the
    turn's words that are names in the owner's store (store_names), never read as slips.
    `ambiguous`: the repositories the turn names without an owner that the store holds under
    two or more (ambiguous_repositories); the second look serves no question naming one.
    """
    now = turn.now or datetime.now(UTC)
    asked = normalize(turn.text)
    if not asked.content:
        return _miss("empty")
    self_contained = names_its_subject(turn.text)
    if _FOLLOW_UP_OPENING.match(turn.text) or (points_elsewhere(turn.text) and not self_contained):
        return _miss("follow_up")
    compared = compared_candidates(turn.text, candidates, names)
    same = [(claim, c.similarity) for claim, c in compared if c.same_question]
    budget = DEFAULT_BUDGET if turn.gate_budget is None else turn.gate_budget
    if not same:
        if not compared:
            leans = _leans_on_context(asked, None) and not self_contained
            return _miss("follow_up" if leans else "no_candidate")
        claim, nearest = max(compared, key=lambda pair: pair[1].similarity)
        reason = _why_different(asked, nearest)
        looked: tuple[Claim, Assessment] | None = None
        if reason == "follow_up" and (self_contained or topic_reading(turn.text) is not None):
            # Its "it" points at a topic it set itself ("the billing-events queue: what's the
            # retention period on it?"), not at an earlier turn.
            reason = "below_threshold"
        if reason != "follow_up" and second_look:
            same, looked = _second_look(turn, compared, budget, names, ambiguous)
        if not same:
            if reason == "below_threshold" and looked is not None and looked[1].probability:
                # Explain the miss against the question the second look scored highest.
                claim, assessment = looked
                return _explained(
                    "below_threshold",
                    assessment.probability,
                    claim,
                    assessment,
                    threshold=default_model().threshold_for(budget, claim.question),
                    budget=budget,
                )
            if (
                reason == "below_threshold"
                and looked is not None
                and looked[0].id == claim.id
                and looked[1].reason in SLOTS
            ):
                # The second look read the nearest question and found another value in one of
                # its slots ("in staging" against none): another requirement, as the reason's
                # definition and the gate card say, shown with the slot's values.
                assessment = looked[1]
                return _explained(
                    "changed_requirement",
                    nearest.similarity,
                    claim,
                    assessment,
                    differs_in=assessment.reason,
                )
            score, threshold, at_budget = nearest.similarity, None, None
            if (
                reason == "changed_requirement"
                and looked is not None
                and looked[0].id == claim.id
                and looked[1].probability
            ):
                # The words differ in a way the strict test reads as another requirement (one
                # word swapped: "big" / "size", "fired" / "triggered"), but the second look read
                # the nearest question, found no slot that differs and scored it: the turn
                # missed by its score, and a looser budget may serve it. Said so, with the score
                # and the threshold it fell short of.
                reason, score = "below_threshold", looked[1].probability
                threshold = default_model().threshold_for(budget, claim.question)
                at_budget = budget
            return _miss(
                reason,
                score,
                claim,
                asked_only=_as_typed(nearest.extra, asked),
                stored_only=_as_typed(nearest.missing, normalize(claim.question)),
                threshold=threshold,
                budget=at_budget,
                differs_in=looked[1].reason if looked is not None else None,
            )

    servable: list[tuple[Claim, float]] = []
    refusals: list[str] = []
    folding: tuple[Claim, float, Difference] | None = None
    strict_ids = {claim.id for claim, c in compared if c.same_question}
    for claim, score in same:
        refusal = _freshness(claim, turn, now)
        folded = None
        if refusal is None and claim.id in strict_ids:
            folded = strict_match_difference(turn.text, claim.question, names)
        if folded is not None:
            folding, refusal = folding or (claim, score, folded), "changed_requirement"
        if refusal is None:
            servable.append((claim, score))
        else:
            refusals.append(refusal)
    if not servable:
        for reason in ("stale", "changed_requirement", "retracted"):
            if reason == "changed_requirement" and reason in refusals and folding is not None:
                claim, score, difference = folding
                return _miss(
                    reason, score, claim, asked_only=list(difference.asked),
                    stored_only=list(difference.stored), differs_in=difference.slot,
                )  # fmt: skip
            if reason in refusals:
                return _miss(reason, max(score for _, score in same), same[0][0])

    answers = {" ".join(claim.answer.split()).casefold() for claim, _ in servable}
    if len(answers) > 1:
        scopes = {(claim.repository, claim.profile) for claim, _ in servable}
        best = max(score for _, score in servable)
        return _miss("ambiguous" if len(scopes) > 1 else "conflict", best)

    # One answer, perhaps stored more than once: serve the newest statement of it.
    claim, score = max(servable, key=lambda pair: pair[0].created_at)
    exact = " ".join(turn.text.split()).casefold() == " ".join(claim.question.split()).casefold()
    strict = any(c.same_question for other, c in compared if other.id == claim.id)
    return Decision(
        outcome="hit",
        reason="exact" if exact else "paraphrase",
        claim_id=claim.id,
        score=score,
        answer=claim.answer,
        claim=claim,
        threshold=None if strict else default_model().threshold_for(budget, claim.question),
        budget=None if strict else budget,
    )


@dataclass(frozen=True)
class Candidates:
    """A turn the strict test did not settle, with every stored question its second look may
    read: what query_first reads from the store before the second look, which reads nothing
    more and so can score them after the read connection is given back (`decide`)."""

    turn: Turn
    claims: list[Claim]
    #: The turn's words that are names in the owner's store (store_names).
    names: frozenset[str] = frozenset()
    #: The repositories it names without an owner that the store holds under two or more.
    ambiguous: frozenset[str] = frozenset()

    def decide(self) -> Decision:
        return decide(self.turn, self.claims, names=self.names, ambiguous=self.ambiguous)


async def query_first(store: StaffStore, turn: Turn) -> Decision:
    """Return the stored claim that answers this turn, or a miss with its reason."""
    refused = unaskable(turn)
    if refused is not None:
        return refused
    # The lookups run on a store's read thread: its queries and the strict decision between
    # them cost one round trip, where a trip per query cost the event loop several, and no
    # write the store is making holds it up (it only reads). The second look, tens of
    # milliseconds of scoring, runs on a thread of its own, holding no read connection.
    found = await store.run_read(lambda sync: look_up(sync, turn))
    if isinstance(found, Decision):
        return found
    return await asyncio.to_thread(found.decide)


def query_first_sync(store: SyncStore, turn: Turn) -> Decision:
    """query_first as one synchronous call, for work run inside StaffStore.run_read. It only
    reads, but holds the read connection while the second look scores: a server calls
    `look_up` there and `Candidates.decide` elsewhere."""
    found = look_up(store, turn)
    return found if isinstance(found, Decision) else found.decide()


def look_up(store: SyncStore, turn: Turn) -> Decision | Candidates:
    """query_first's reads: the decision when the strict test settles the turn (or no lookup
    is needed), else the candidates for the second look to score. It only reads."""
    refused = unaskable(turn)
    if refused is not None:
        return refused
    candidates, some_words, names = first_candidates(store, turn)
    decision = decide(turn, candidates, second_look=False, names=names)
    if decision.reason not in _WIDEN_ON:
        return decision
    found = candidates + widened_candidates(store, turn, candidates, some_words)
    return Candidates(turn, found, names, ambiguous_repositories(store, turn, found))


def first_candidates(
    store: SyncStore, turn: Turn
) -> tuple[list[Claim], list[tuple[str, int]], frozenset[str]]:
    """The questions with the turn's content, or holding every one of its rarest words; the
    turn's rarer words with their counts (for widening); and its words that are names in the
    owner's store (store_names)."""
    asked = normalize(turn.text)
    # Questions with the same content, or holding every word of the turn, first: fast and
    # usually enough. Only when none asks the same question do we widen to questions with all
    # but one of the rarest words, to forgive a typo and to find the nearest question for an
    # honest miss reason.
    searched = asked.search_words
    some_words, known = store.rarest_words(
        turn.owner, searched, keep=max(LOOKUP_WORDS, SIMILAR_WORDS)
    )
    all_known = len(known) == len(set(searched))
    rare = [word for word, _count in some_words[:LOOKUP_WORDS]]
    candidates = store.candidate_claims(turn.owner, asked.key, rare if all_known else [])
    return candidates, some_words, store_names(asked, known)


def widened_candidates(
    store: SyncStore, turn: Turn, found: Sequence[Claim], some_words: list[tuple[str, int]]
) -> list[Claim]:
    """The questions the widened lookup adds to `found`: those with all but one of the rarest
    words, and those sharing any of the rarer words."""
    seen = {claim.id for claim in found}
    # Widening reads each word's doclist several times: a common word would make the slowest
    # lookups slow, and it narrows nothing, so it is left out here.
    rarest = some_words[:LOOKUP_WORDS]
    near_words = [word for word, count in rarest if count <= NEAR_SEARCH_MAX_COUNT]
    extra = [c for c in store.near_claims(turn.owner, near_words) if c.id not in seen]
    seen.update(c.id for c in extra)
    # The second look also reads questions that share any of the turn's rarer words: a
    # paraphrase may keep the identifier and change every other word.
    similar_words = [(word, count) for word, count in some_words if count <= NEAR_SEARCH_MAX_COUNT]
    extra += [
        c
        for c in store.similar_claims(turn.owner, similar_words, limit=SIMILAR_LIMIT)
        if c.id not in seen
    ]
    return extra


def ambiguous_repositories(
    store: SyncStore, turn: Turn, candidates: Sequence[Claim]
) -> frozenset[str]:
    """The repositories that the turn names without an owner ("why did helpdesk-sync stop
    syncing?") where the owner's store names that repository under two owners or more
    ("lumen/helpdesk-sync", "acme/helpdesk-sync"): the turn does not say which it asks about.
    Only names some candidate gives an owner are looked up, in the owner's questions that hold
    them, whether or not those are candidates: a question about the other owner's repository
    may share nothing else with the turn. Those questions are read leaving out the ones that
    name an owner already seen, so that thousands of questions about lumen's repository do not
    hide the one about acme's (a question that names both owners is left out too)."""
    questions = [claim.question for claim in candidates]
    owners = repository_owners(questions)
    return frozenset(
        name
        for name in repositories_named_alone(turn.text, questions)
        if len(owners[name]) > 1 or _other_owners(store, turn.owner, name, owners[name])
    )


def _other_owners(store: SyncStore, owner: str, name: str, seen: set[str]) -> set[str]:
    """The owners other than `seen` that the owner's questions give the repository `name`."""
    words = normalize(name).search_words
    if not words:
        return set()
    without = sorted({w for found in seen for w in normalize(found).search_words} - {words[0]})
    naming = store.claims_holding_without(owner, words[0], without, limit=OWNERS_READ)
    return repository_owners([claim.question for claim in naming]).get(name, set()) - seen


def unaskable(turn: Turn) -> Decision | None:
    """The miss for a turn no claim can answer, found without a lookup; else None."""
    if not turn.text.strip():
        return _miss("empty")
    if len(turn.text) > MAX_TURN_CHARS:
        return _miss("too_long")
    if not normalize(turn.text).content:  # cached: the lookup normalizes it again for free
        return _miss("empty")
    return None
