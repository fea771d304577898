"""Vault hits: the few older messages of a session that match the turn, for a miss's prompt.

The tail is the session's last few messages; everything older lives in the vault (an FTS5
index on SQLite, doclists on PostgreSQL: store/vault_tables.py). On a miss the turn's words
find the older messages that hold them; they are ranked here, in Python, with bm25 over the
session (so both backends rank alike), and each of the best few is sent as its extractive
handle: the sentences that hold the turn's words (else its key sentences), with the message's
id, the pointer back to its raw text, which always stays in the store. A sentence that a newer
message revised (a newer key sentence on its subject) is left out: last wins here as in the
story. Derived context, never the authority: a vault hit never answers a turn, and the vault
is never sent whole, only what fits the vault's part of the budget.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass

from ..store import StaffStore
from ..store.fts_tokens import fts_tokens
from ..store.vault_tables import VaultMessage
from .extract import Settled, current_sentences, key_sentences

VAULT_HEADER = (
    "Found in this session's older messages (search hits, derived context: not verified and "
    "not the user's words now; the newest statement of a fact wins):"
)
#: The most hits a prompt carries, and the most candidates one search reads and ranks (those
#: sharing the rarest of the turn's words: store/vault_tables.py).
DEFAULT_HITS = 3
MAX_CANDIDATES = 256
#: The longest handle of one hit, in characters.
MAX_HANDLE_CHARS = 600
#: Words too common to find anything by: left out of the lookup (both backends alike).
_COMMON = frozenset(
    """
    a an the and or but of to in on at for from by with as is are was were be been it its
    this that these those we our you your i me my they them what which who when where why
    how do does did can could should would will shall may might not no yes so if then than
    there here about please tell say now again
    """.split()
)
# bm25's constants, as FTS5 uses them.
_K1, _B = 1.2, 0.75


@dataclass(frozen=True)
class VaultHit:
    """One older message found for the turn: its id (the pointer back), role, score, handle."""

    message_id: int
    role: str
    score: float
    handle: str


def query_tokens(text: str) -> list[str]:
    """The turn's tokens that look something up: FTS5's tokens less the commonest words."""
    return sorted({t for t in fts_tokens(text) if t not in _COMMON and len(t) > 1})


def rank(
    candidates: list[VaultMessage],
    searched: int,
    wanted: list[str],
    holding: dict[str, int] | None = None,
) -> list[tuple[float, VaultMessage]]:
    """The candidates by bm25 over the searched messages, best first (newer first on a tie).
    `holding` says how many of the searched messages hold each token the store looked up (and
    only those count); without it, the candidates are counted, as if they were all that hold
    one."""
    if not candidates:
        return []
    tokenized = {m.id: fts_tokens(m.content) for m in candidates}
    frequency: Counter[str] = Counter(holding or {})
    if holding is None:
        for tokens in tokenized.values():
            frequency.update(set(tokens) & set(wanted))
    # Only the tokens the lookup counted (a long turn's are capped: search.lookup_tokens).
    counted = wanted if holding is None else [t for t in wanted if t in holding]
    average = sum(len(t) for t in tokenized.values()) / len(tokenized) or 1.0
    total = max(searched, len(candidates))
    scored: list[tuple[float, VaultMessage]] = []
    for message in candidates:
        tokens = tokenized[message.id]
        counts = Counter(tokens)
        score = 0.0
        for token in counted:
            hits = counts.get(token, 0)
            if not hits:
                continue
            df = frequency[token]
            idf = math.log(1.0 + (total - df + 0.5) / (df + 0.5))
            score += idf * hits * (_K1 + 1) / (hits + _K1 * (1 - _B + _B * len(tokens) / average))
        if score > 0:
            scored.append((round(score, 9), message))
    scored.sort(key=lambda item: (-item[0], -item[1].id))
    return scored


def handle(message: VaultMessage, wanted: list[str], settled: Settled, upto: int) -> str:
    """The message's extractive handle: its sentences holding the turn's words (else its key
    sentences), less any a newer message revised (`settled` up to `upto`), cut to
    MAX_HANDLE_CHARS."""
    wanted_set = set(wanted)
    # A question found by the turn's words is the same question asked before: it tells
    # nothing, so it is no part of a handle.
    current = [s for s in current_sentences(message.content, settled, upto) if not s.endswith("?")]
    chosen = [s for s in current if wanted_set & set(fts_tokens(s))][:3]
    if not chosen:
        chosen = key_sentences(" ".join(current)) if current else []
    text = " ".join(chosen)
    return text if len(text) <= MAX_HANDLE_CHARS else text[: MAX_HANDLE_CHARS - 1] + "…"


async def vault_hits(
    store: StaffStore,
    session_id: str,
    text: str,
    *,
    skip_latest: int,
    limit: int = DEFAULT_HITS,
    settled: Settled | None = None,
    shown: set[int] | None = None,
) -> list[VaultHit]:
    """The session's older messages (all but its `skip_latest` newest) that best match
    `text`, at most `limit`, each as its handle; none that a newer message wholly revised
    (`settled`: the subjects the newer messages state), none of the ids in `shown` (already
    in the prompt)."""
    wanted = query_tokens(text)
    if not wanted or limit <= 0:
        return []
    found = await store.vault_candidates(
        session_id, wanted, skip_latest=skip_latest, limit=MAX_CANDIDATES
    )
    # Last wins: each candidate is read against what every newer one (and the messages newer
    # than the vault: `settled`) stated; candidates come newest first.
    marks: dict[int, int] = {}
    running = settled or Settled()
    for message in found.messages:
        marks[message.id] = running.mark()
        running.add(message.content)
    hits: list[VaultHit] = []
    for score, message in rank(found.messages, found.searched, wanted, found.holding):
        if shown and message.id in shown:
            continue
        text_of = handle(message, wanted, running, marks[message.id])
        if text_of:
            hits.append(VaultHit(message.id, message.role, score, text_of))
        if len(hits) == limit:
            break
    return hits


def hit_line(hit: VaultHit) -> str:
    """One hit as the prompt shows it: the pointer back, who said it, the handle."""
    return f"- (message {hit.message_id}, {hit.role}) {hit.handle}"


__all__ = ["DEFAULT_HITS", "VAULT_HEADER", "VaultHit", "hit_line", "query_tokens", "vault_hits"]
