"""Reuse of paid answers: a kept answer served for a reworded context-free question.

A kept answer whose request was context-free keeps its prompt (store/kept_prompts.py). When
a context-free turn is neither an exact repeat nor answered by a claim, the kept prompts of the
same owner, namespace and context (model, system prompt, parameters: the context key) that
share its words become candidates for the very same decision claims get (query_first.decide):
each is read as a claim whose question is the kept prompt and whose answer is the kept answer,
made when the answer was kept and expiring when it does. So the same strict test, second look,
error budget, thresholds, freshness rules ("what failed today?" kept yesterday is `stale`) and
reason codes apply; a hit is `exact` or `paraphrase`, and names the kept answer it served.

A kept answer is never a verified finding: it is the model's reply to that prompt under that
context, which is why it may answer only a turn asked under the same context, and never a turn
that leans on a conversation (the caller passes only context-free turns).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from ..models import Claim, Decision, Turn
from ..store.fts_tokens import fts_tokens
from ..store.kept_prompts import KeptPrompt, PromptCandidate
from ..store.sync_store import KeptAnswer, SyncStore
from ..text.matching import normalize
from ..text.respelling import repositories_named_alone, shared_names
from .query_first import MAX_TURN_CHARS, decide, store_names, unaskable
from .relative_time import same_period

#: How many kept prompts, those sharing the most words with the turn first, the gate reads.
KEPT_CANDIDATES = 20
#: The longest kept answer read as a candidate (a claim's answer may be no longer).
MAX_ANSWER_CHARS = 200_000
_ID_PREFIX = "kept:"


def prompt_to_keep(text: str | None, context_key: str | None) -> KeptPrompt | None:
    """The prompt a kept answer keeps for the reworded questions to come: that of a
    context-free request (`context_key` not None) whose question the gate can read (no longer
    than MAX_TURN_CHARS; a longer one is served to its exact repeats only, and not stored twice)."""
    if text is None or context_key is None or len(text) > MAX_TURN_CHARS:
        return None
    return KeptPrompt(text, context_key)


def asked_tokens(text: str) -> list[str]:
    """The tokens a turn's kept prompts are looked up by: its content words worth a lookup
    (matching.Normalized.search_words), as folded and as typed, in FTS5's tokens."""
    asked = normalize(text)
    typed = dict(asked.spellings)
    words = [*asked.search_words, *(typed.get(w, w) for w in asked.search_words)]
    return sorted(set(fts_tokens(" ".join(words))))


def _as_claim(owner: str, found: PromptCandidate, turn: Turn) -> Claim:
    # The turn's own repository and revision: the context key already pins what the prompt
    # was asked under, so the gate's scope rules have nothing to add.
    return Claim(
        id=_ID_PREFIX + found.receipt_id, owner=owner, question=found.prompt,
        answer=found.answer, source="kept_answer", repository=turn.repository,
        revision=turn.revision, expires_at=found.expires_at, created_at=found.created_at,
    )  # fmt: skip


def _kept(owner: str, namespace: str, found: PromptCandidate) -> KeptAnswer:
    return KeptAnswer(
        owner=owner, namespace=namespace, request_hash=found.request_hash,
        receipt_id=found.receipt_id, model=found.model, answer=found.answer,
        created_at=found.created_at, expires_at=found.expires_at, cost_usd=found.cost_usd,
    )  # fmt: skip


@dataclass(frozen=True)
class KeptCandidates:
    """A turn with the kept prompts that may answer it, read from the store: the gate's
    decision among them (`decide`, each read as a claim) reads nothing more."""

    turn: Turn
    namespace: str
    prompts: list[PromptCandidate]
    #: The turn's words that are names among the scope's kept prompts (store_names).
    names: frozenset[str] = frozenset()

    def decide(self) -> tuple[Decision, KeptAnswer | None]:
        """The gate's decision among the kept prompts; on a hit, the kept answer it serves.

        The decision never names a claim (claim_id and claim are None): what it served is the
        kept answer returned beside it."""
        owner = self.turn.owner
        claims = [_as_claim(owner, c, self.turn) for c in self.prompts]
        # A repository named without its owner that two of these prompts give two owners:
        # the turn does not say which it asks about (query_first.ambiguous_repositories).
        prompts = [c.prompt for c in self.prompts]
        ambiguous = repositories_named_alone(self.turn.text, prompts) & shared_names(prompts)
        decision = decide(self.turn, claims, names=self.names, ambiguous=ambiguous)
        by_id = {_ID_PREFIX + c.receipt_id: c for c in self.prompts}
        served = by_id.get(decision.claim_id or "") if decision.hit else None
        # The decision as the gate made it, less the claim it names: a kept answer is not one.
        unnamed = decision.model_copy(update={"claim_id": None, "claim": None})
        if served is None:
            return unnamed, None
        return unnamed, _kept(owner, self.namespace, served)


def reuse_kept_sync(
    store: SyncStore,
    turn: Turn,
    namespace: str,
    context_key: str,
    *,
    max_age: float | None = None,
) -> tuple[Decision, KeptAnswer | None]:
    """The gate's decision for a context-free turn among the kept answers asked under the
    same context (it only reads: StaffStore.run_read): on a hit, the kept answer it serves.
    A server calls `kept_candidates` on a read connection and `KeptCandidates.decide` off it."""
    found = kept_candidates(store, turn, namespace, context_key, max_age=max_age)
    return (found, None) if isinstance(found, Decision) else found.decide()


def kept_candidates(
    store: SyncStore,
    turn: Turn,
    namespace: str,
    context_key: str,
    *,
    max_age: float | None = None,
) -> Decision | KeptCandidates:
    """The kept prompts of a context-free turn's owner, namespace and context that may answer
    it, or the miss when none may (it only reads). `max_age` (seconds) leaves out answers kept
    longer ago."""
    refused = unaskable(turn)
    if refused is not None:
        return refused
    now = turn.now or datetime.now(UTC)
    found, held = store.kept_prompt_candidates(
        turn.owner, namespace, context_key, asked_tokens(turn.text),
        limit=KEPT_CANDIDATES, max_age=max_age, now=now,
    )  # fmt: skip
    usable: dict[str, PromptCandidate] = {}
    for candidate in found:
        if len(candidate.prompt) > MAX_TURN_CHARS or len(candidate.answer) > MAX_ANSWER_CHARS:
            continue  # no claim is that long either: the gate reads none
        if not candidate.prompt.strip() or not candidate.answer.strip():
            continue
        if not same_period(turn.text, candidate.created_at, now):
            continue  # "what failed today?" kept yesterday answers another day's question
        # One prompt's content asked twice (a refreshed answer under another wording's key):
        # the newest answer speaks for it, as a claim restated is served its newest statement.
        key = normalize(candidate.prompt).key
        if key not in usable or candidate.created_at > usable[key].created_at:
            usable[key] = candidate
    if not usable:
        return Decision(outcome="miss", reason="no_candidate")
    return KeptCandidates(turn, namespace, list(usable.values()), _names(turn.text, held))


def _names(text: str, held: frozenset[str]) -> frozenset[str]:
    """The turn's words that are names among the kept prompts of its scope: those whose every
    FTS5 token some kept prompt there holds (`held`), as store_names reads the claims'."""
    asked = normalize(text)
    typed = dict(asked.spellings)
    known = frozenset(
        word
        for word in asked.search_words
        if (tokens := fts_tokens(typed.get(word, word))) and held.issuperset(tokens)
    )
    return store_names(asked, known)
