"""The claims' full-text lookups, one implementation per database, with the same answers.

SQLite keeps an FTS5 index (tokenizer unicode61) over each claim's question, answer and
search key. PostgreSQL has no FTS5; there each claim carries the tokens FTS5 would make
(fts_tokens.py): `search_tokens`, those of its search key, also kept as doclists
(`claim_terms`: owner, token, rowid, read in rowid order from its primary key), and
`text_tokens`, those of its question and answer, a text[] with a GIN index. A word that is
several tokens ("3.11") is a phrase to FTS5, so rows holding all its tokens are then kept
only where they stand together, as FTS5 keeps them; ranked search computes FTS5's bm25 from
the same counts FTS5 uses. So the gate finds the same candidates in the same order
on both, and decides the same (tests/test_backends.py plays the replays on both to check).

Also here: by_shared_rarity, the ranking the kept prompts' and the session vault's lookups
give what each of a turn's tokens found.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal, Protocol

from ..models import Claim
from .fts_tokens import fts_tokens, holds_phrase
from .rows import QUALIFIED_CLAIM_COLUMNS, fts_all, fts_phrase, row_to_claim

#: How a ranked search combines its words: every one must occur, or any one.
Combine = Literal["all", "any"]

# FTS5's bm25 constants (fts5_aux.c), for PostgreSQL's copy of its ranking.
_K1 = 1.2
_B = 0.75


class Rows(Protocol):
    """The part of a Database (database.py) the searches use."""

    def fetchall(self, sql: str, params: Sequence[Any] = ()) -> list[Any]: ...

    def execute(self, sql: str, params: Sequence[Any] = ()) -> int: ...

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None: ...


class ClaimSearch(Protocol):
    """What the gate, `claims search` and the working set ask of the full-text index."""

    #: An SQL expression for a claim's owner, in a query that reads claims by rowid.
    owner_by_rowid: str

    def index_columns(self) -> tuple[str, ...]:
        """The columns a claim's insert fills beyond its own (index data), in order."""
        ...

    def index_values(self, question: str, answer: str, search_key: str) -> tuple[Any, ...]:
        """The values of index_columns() for a claim with this text."""
        ...

    def after_insert(self, claim_ids: Sequence[str]) -> None:
        """Index these newly inserted claims (inside the write that inserted them)."""
        ...

    def after_rekey(self, rowids: Sequence[int]) -> None:
        """Bring the index of these claims up to their new search keys (inside a write)."""
        ...

    def compact(self) -> None:
        """Bring the index to the shape lookups read fastest, after a bulk write (inside a
        write); it may take seconds at a million claims."""
        ...

    def holding_all(
        self, owner: str, groups: Sequence[Sequence[str]], limit: int, *, key: str | None = None
    ) -> list[Claim]:
        """The owner's claims with search key `key` (when given), then those whose search key
        holds every word of any one of `groups`; each part by rowid, at most `limit` in all
        (a claim in both parts comes once)."""
        ...

    def holding_without(
        self, owner: str, word: str, without: Sequence[str], limit: int
    ) -> list[Claim]:
        """The owner's claims whose search key holds `word` and none of `without`, by rowid, at
        most `limit`."""
        ...

    def rowids_holding(self, words: Sequence[str], owner: str) -> dict[str, list[int]]:
        """For each word, the rowids of claims whose search key holds it, ascending; the
        owner's at least (SQLite reads a word's whole doclist; the caller checks owners)."""
        ...

    def ranked(
        self,
        owner: str,
        words: Sequence[str],
        combine: Combine,
        limit: int,
        *,
        live_at: float | None = None,
    ) -> list[Claim]:
        """The owner's claims whose question or answer holds the words (all or any), best
        first by FTS5's bm25; with `live_at`, only live claims unexpired at that epoch."""
        ...


_LIVE = " AND c.status = 'live' AND (c.expires_at IS NULL OR c.expires_at > ?)"


class SqliteClaimSearch:
    """FTS5 over claims_fts (see migrations.py)."""

    owner_by_rowid = "+c.owner"  # "+": look the rows up by rowid, not by the owner's index

    def __init__(self, db: Rows) -> None:
        self.db = db

    def index_columns(self) -> tuple[str, ...]:
        return ()  # the FTS5 index follows the claims table by trigger

    def index_values(self, question: str, answer: str, search_key: str) -> tuple[Any, ...]:
        return ()

    def after_insert(self, claim_ids: Sequence[str]) -> None:
        return None  # by trigger

    def after_rekey(self, rowids: Sequence[int]) -> None:
        return None  # by trigger

    def compact(self) -> None:
        # FTS5 writes each transaction's terms as a new segment and merges them by levels, so
        # a bulk import leaves about ten segments and every term lookup reads each of them.
        # Merged into one, the gate's first lookup at 1,000,000 claims took 0.19 ms instead
        # of 0.35 (0.18 against 0.46 for the match alone); the merge took 1.8 s.
        self.db.execute("INSERT INTO claims_fts (claims_fts) VALUES ('optimize')")

    def _matching(
        self, match: str, owner: str, limit: int, *, ranked: bool, where: str = "", params: Any = ()
    ) -> list[Claim]:
        # CROSS JOIN keeps FTS5 first in the plan; otherwise SQLite may walk the owner's
        # claims and match each one.
        order = " ORDER BY claims_fts.rank" if ranked else ""
        rows = self.db.fetchall(
            f"SELECT {QUALIFIED_CLAIM_COLUMNS} "
            "FROM claims_fts CROSS JOIN claims c ON c.rowid = claims_fts.rowid "
            f"WHERE claims_fts MATCH ? AND c.owner = ?{where}{order} LIMIT ?",
            (match, owner, *params, limit),
        )
        return [row_to_claim(row) for row in rows]

    def holding_all(
        self, owner: str, groups: Sequence[Sequence[str]], limit: int, *, key: str | None = None
    ) -> list[Claim]:
        match = " OR ".join(fts_all(group) for group in groups if group)
        if key is None:
            return self._matching(match, owner, limit, ranked=False) if match else []
        sql = (
            f"SELECT {QUALIFIED_CLAIM_COLUMNS} FROM claims c WHERE c.owner = ? AND c.search_key = ?"
        )
        params: list[Any] = [owner, key]
        if match:
            # UNION ALL runs left to right: same-content questions come first, within LIMIT.
            sql += (
                f" UNION ALL SELECT {QUALIFIED_CLAIM_COLUMNS} "
                "FROM claims_fts CROSS JOIN claims c ON c.rowid = claims_fts.rowid "
                "WHERE claims_fts MATCH ? AND c.owner = ?"
            )
            params += [match, owner]
        rows = self.db.fetchall(sql + " LIMIT ?", [*params, limit])
        unique = {row[0]: row for row in rows}  # a claim can come from both halves
        return [row_to_claim(row) for row in unique.values()]

    def holding_without(
        self, owner: str, word: str, without: Sequence[str], limit: int
    ) -> list[Claim]:
        match = fts_phrase(word)
        if without:
            match += " NOT (" + " OR ".join(fts_phrase(w) for w in without) + ")"
        return self._matching(f"search_key : ({match})", owner, limit, ranked=False)

    def rowids_holding(self, words: Sequence[str], owner: str) -> dict[str, list[int]]:
        return {
            word: [
                int(row[0])
                for row in self.db.fetchall(
                    "SELECT rowid FROM claims_fts WHERE claims_fts MATCH ?", (fts_all([word]),)
                )
            ]
            for word in words
        }

    def ranked(
        self,
        owner: str,
        words: Sequence[str],
        combine: Combine,
        limit: int,
        *,
        live_at: float | None = None,
    ) -> list[Claim]:
        if combine == "all":
            match = " AND ".join("{question answer} : " + fts_phrase(w) for w in words)
        else:
            match = "{question answer} : (" + " OR ".join(fts_phrase(w) for w in words) + ")"
        if live_at is None:
            return self._matching(match, owner, limit, ranked=True)
        return self._matching(match, owner, limit, ranked=True, where=_LIVE, params=(live_at,))


class PostgresClaimSearch:
    """FTS5's answers from token arrays and doclists (see the module's docstring)."""

    owner_by_rowid = "c.owner"

    def __init__(self, db: Rows) -> None:
        self.db = db

    def index_columns(self) -> tuple[str, ...]:
        return ("search_tokens", "text_tokens", "token_count")

    def index_values(self, question: str, answer: str, search_key: str) -> tuple[Any, ...]:
        asked, said, key = fts_tokens(question), fts_tokens(answer), fts_tokens(search_key)
        return (list(key), sorted(set(asked) | set(said)), len(asked) + len(said) + len(key))

    def after_insert(self, claim_ids: Sequence[str]) -> None:
        for start in range(0, len(claim_ids), 1000):
            self._index_terms("c.id = ANY(?)", [list(claim_ids[start : start + 1000])])

    def compact(self) -> None:
        return None  # the doclists are a B-tree (claim_terms): nothing is left to merge

    def after_rekey(self, rowids: Sequence[int]) -> None:
        for start in range(0, len(rowids), 500):
            block = list(rowids[start : start + 500])
            rows = self.db.fetchall(
                "SELECT rowid, question, answer, search_key FROM claims WHERE rowid = ANY(?)",
                (block,),
            )
            self.db.executemany(
                "UPDATE claims SET search_tokens = ?, text_tokens = ?, token_count = ? "
                "WHERE rowid = ?",
                [(*self.index_values(q, a, k), rowid) for rowid, q, a, k in rows],
            )
            self.db.executemany("DELETE FROM claim_terms WHERE rowid = ?", [(r,) for r in block])
            self._index_terms("c.rowid = ANY(?)", [block])

    def _index_terms(self, which: str, params: Sequence[Any]) -> None:
        # Each distinct token of a claim's search key once: a doclist holds a claim once.
        self.db.execute(
            "INSERT INTO claim_terms (owner, term, rowid) "
            "SELECT DISTINCT c.owner, t.term, c.rowid FROM claims c, "
            f"unnest(c.search_tokens) AS t(term) WHERE {which} ON CONFLICT DO NOTHING",
            params,
        )

    def _doclists(self, owner: str, tokens: Sequence[str]) -> dict[str, list[int]]:
        """Each token's claims (the owner's), by rowid ascending, in one query."""
        found: dict[str, list[int]] = {token: [] for token in tokens}
        if not tokens:
            return found
        for term, rowid in self.db.fetchall(
            "SELECT term, rowid FROM claim_terms WHERE owner = ? AND term = ANY(?) "
            "ORDER BY term, rowid",
            (owner, sorted(set(tokens))),
        ):
            found[term].append(int(rowid))
        return found

    def _holding(self, owner: str, groups: Sequence[Sequence[Sequence[str]]]) -> list[int]:
        """Rowids (ascending) of the owner's claims whose search key holds every phrase of
        any group (each a word's tokens)."""
        doclists = self._doclists(owner, [t for group in groups for p in group for t in p])
        matched: set[int] = set()
        unchecked: dict[int, list[Sequence[Sequence[str]]]] = {}
        for group in groups:
            sets = [set(doclists[t]) for p in group for t in p]
            rows = set.intersection(*sets) if sets else set()
            if all(len(p) == 1 for p in group):
                matched |= rows  # a one-token word: its doclist is its phrase's
            else:
                for rowid in rows - matched:
                    unchecked.setdefault(rowid, []).append(group)
        if unchecked:
            # A word of several tokens ("3.11") is a phrase: its tokens must stand together.
            keys = dict(
                self.db.fetchall(
                    "SELECT rowid, search_key FROM claims WHERE rowid = ANY(?)",
                    (sorted(unchecked),),
                )
            )
            for rowid, waiting in unchecked.items():
                tokens = fts_tokens(keys[rowid])
                if any(all(holds_phrase(tokens, p) for p in group) for group in waiting):
                    matched.add(rowid)
        return sorted(matched)

    def _claims(self, rowids: Sequence[int]) -> list[Claim]:
        if not rowids:
            return []
        rows = self.db.fetchall(
            f"SELECT {QUALIFIED_CLAIM_COLUMNS} FROM claims c WHERE c.rowid = ANY(?) "
            "ORDER BY c.rowid",
            (list(rowids),),
        )
        return [row_to_claim(row) for row in rows]

    def holding_all(
        self, owner: str, groups: Sequence[Sequence[str]], limit: int, *, key: str | None = None
    ) -> list[Claim]:
        found: dict[str, Claim] = {}
        if key is not None:
            rows = self.db.fetchall(
                f"SELECT {QUALIFIED_CLAIM_COLUMNS} FROM claims c "
                "WHERE c.owner = ? AND c.search_key = ? ORDER BY c.rowid LIMIT ?",
                (owner, key, limit),
            )
            found = {row[0]: row_to_claim(row) for row in rows}
        # FTS5's LIMIT counts a claim in both parts twice: so does this.
        left = limit - len(found)
        phrases = [[fts_tokens(word) for word in group] for group in groups if group]
        # A word without a token is a phrase FTS5 matches nowhere: its group holds nothing.
        phrases = [group for group in phrases if all(group)]
        if not phrases or left <= 0:
            return list(found.values())
        rowids = self._holding(owner, phrases)
        for claim in self._claims(rowids[:left]):
            found.setdefault(claim.id, claim)
        return list(found.values())

    def holding_without(
        self, owner: str, word: str, without: Sequence[str], limit: int
    ) -> list[Claim]:
        phrase = fts_tokens(word)
        if not phrase:
            return []  # FTS5 matches a phrase without a token nowhere
        left_out = [[tokens] for w in without if (tokens := fts_tokens(w))]
        rowids = set(self._holding(owner, [[phrase]]))
        if left_out:
            rowids -= set(self._holding(owner, left_out))
        return self._claims(sorted(rowids)[:limit])

    def rowids_holding(self, words: Sequence[str], owner: str) -> dict[str, list[int]]:
        # One query for every word's doclist: the lookups are round trips to a server here.
        phrases = {word: fts_tokens(word) for word in words}
        doclists = self._doclists(owner, [t for p in phrases.values() for t in p])
        found: dict[str, list[int]] = {}
        for word, phrase in phrases.items():
            if not phrase:
                found[word] = []  # FTS5 matches a phrase without a token nowhere
            elif len(phrase) == 1:
                found[word] = doclists[phrase[0]]
            else:
                found[word] = self._holding(owner, [[phrase]])
        return found

    def ranked(
        self,
        owner: str,
        words: Sequence[str],
        combine: Combine,
        limit: int,
        *,
        live_at: float | None = None,
    ) -> list[Claim]:
        phrases = [fts_tokens(word) for word in words]
        if limit <= 0 or not phrases or (combine == "all" and not all(phrases)):
            return []
        phrases = [p for p in phrases if p]
        if not phrases:
            return []
        everything = sorted({t for p in phrases for t in p})
        test = "@>" if combine == "all" else "&&"
        where = "c.owner = ? AND c.text_tokens " + test + " ?"
        params: list[Any] = [owner, everything]
        if live_at is not None:
            where += _LIVE
            params.append(live_at)
        rows = self.db.fetchall(
            f"SELECT {QUALIFIED_CLAIM_COLUMNS}, c.rowid, c.search_key FROM claims c "
            f"WHERE {where} ORDER BY c.rowid",
            params,
        )
        scored: list[tuple[float, int, Claim]] = []
        idf: list[float] | None = None
        average = 0.0
        for row in rows:
            claim = row_to_claim(row[:-2])
            asked, said = fts_tokens(claim.question), fts_tokens(claim.answer)
            freq = [_instances(asked, p) + _instances(said, p) for p in phrases]
            if (combine == "all" and not all(freq)) or not any(freq):
                continue
            if idf is None:
                idf, average = self._bm25_corpus(phrases)
            size = len(asked) + len(said) + len(fts_tokens(row[-1]))
            score = 0.0
            for weight, hits in zip(idf, freq, strict=True):
                score += (
                    weight * (hits * (_K1 + 1.0)) / (hits + _K1 * (1 - _B + _B * size / average))
                )
            scored.append((-score, int(row[-2]), claim))
        scored.sort(key=lambda item: (item[0], item[1]))
        return [claim for _rank, _rowid, claim in scored[:limit]]

    def _bm25_corpus(self, phrases: Sequence[Sequence[str]]) -> tuple[list[float], float]:
        """Each phrase's inverse document frequency over every claim (FTS5 counts the whole
        table, every owner's rows) and the average claim length in tokens, as bm25 takes them."""
        ((count, total),) = self.db.fetchall(
            "SELECT count(*), coalesce(sum(token_count), 0) FROM claims"
        )
        count, total = int(count), int(total)
        idf: list[float] = []
        for phrase in phrases:
            if len(phrase) == 1:
                ((hits,),) = self.db.fetchall(
                    "SELECT count(*) FROM claims WHERE text_tokens @> ?", (list(phrase),)
                )
            else:
                rows = self.db.fetchall(
                    "SELECT question, answer FROM claims WHERE text_tokens @> ?",
                    (sorted(set(phrase)),),
                )
                hits = sum(
                    1
                    for question, answer in rows
                    if holds_phrase(fts_tokens(question), phrase)
                    or holds_phrase(fts_tokens(answer), phrase)
                )
            value = math.log((count - int(hits) + 0.5) / (int(hits) + 0.5))
            idf.append(value if value > 0.0 else 1e-6)
        return idf, total / count if count else 1.0


def _instances(tokens: Sequence[str], phrase: Sequence[str]) -> int:
    """How many times `phrase` stands in `tokens` (FTS5's instances of a phrase)."""
    width = len(phrase)
    if width == 1:
        return tokens.count(phrase[0])
    first = phrase[0]
    return sum(
        1
        for start in range(len(tokens) - width + 1)
        if tokens[start] == first and list(tokens[start : start + width]) == list(phrase)
    )


#: A notional collection size for the word weights of rarity(): only their order matters, and
#: the gate reads no word held by more than about this many questions.
_RARITY_SCALE = 1_000.0


def rarity(holding: int) -> float:
    """A word's weight when `holding` rows hold it, ln(1 + scale / holding): the rarer, the
    heavier (the claims' widened lookup and the kept prompts' lookup rank by it)."""
    return math.log(1.0 + _RARITY_SCALE / max(holding, 1))


def by_shared_rarity(
    holding: Mapping[str, Sequence[int]], weight: Callable[[int], float]
) -> list[int]:
    """The ids listed in `holding` (a token -> the ids of the rows holding it), those sharing the
    most weight first, ties the highest id (the newest) first: each token weighs `weight` of the
    length of its list, so the rarer tokens count most. Where the kept prompts' and the session
    vault's lookups rank what their tokens' doclists found."""
    shared: dict[int, float] = {}
    for ids in holding.values():
        each = weight(len(ids))
        for found in ids:
            shared[found] = shared.get(found, 0.0) + each
    return sorted(sorted(shared, reverse=True), key=shared.__getitem__, reverse=True)


class Doclists(Rows, Protocol):
    """The part of a Database newest_holding uses: its rows and which backend it is."""

    @property
    def dialect(self) -> str: ...


def newest_holding(
    db: Doclists,
    tokens: Sequence[str],
    each: int,
    *,
    scope: str,
    fts: tuple[str, Callable[[str], str]],
    terms: tuple[str, str, str],
    below: int | None = None,
) -> dict[str, list[int]]:
    """For each token, the ids of the `each` newest rows of one scope that hold it (older than
    `below`, when given), newest first, in one statement. On SQLite from the FTS5 table
    `fts[0]`, one query per token (`fts[1]` makes a token's MATCH expression, the scope
    included): each walks its doclists newest first until it has `each`, where FTS5 cannot stop
    early on an OR of them ranked by rarity. On PostgreSQL from the doclist table `terms`
    (table, scope column, id column), read backwards along its primary key."""
    older: list[Any] = [] if below is None else [below]
    if db.dialect == "sqlite":
        table, match = fts
        bound = "" if below is None else " AND rowid < ?"
        one = (
            f"SELECT {{index}}, id FROM (SELECT rowid AS id FROM {table} "
            f"WHERE {table} MATCH ?{bound} ORDER BY rowid DESC LIMIT ?)"
        )
        sql = " UNION ALL ".join(one.format(index=i) for i in range(len(tokens)))
        params = [value for token in tokens for value in (match(token), *older, each)]
        rows = [(tokens[int(index)], found) for index, found in db.fetchall(sql, params)]
    else:
        table, scope_column, id_column = terms
        bound = "" if below is None else f" AND d.{id_column} < ?"
        rows = db.fetchall(
            "SELECT t.token, p.found FROM unnest(?::text[]) AS t(token) CROSS JOIN LATERAL "
            f"(SELECT d.{id_column} AS found FROM {table} d WHERE d.{scope_column} = ? "
            f"AND d.token = t.token{bound} ORDER BY d.{id_column} DESC LIMIT ?) AS p",
            (list(tokens), scope, *older, each),
        )
    holding: dict[str, list[int]] = {}
    for token, found in rows:
        holding.setdefault(str(token), []).append(int(found))
    return holding


#: The most tokens a kept-prompt or vault lookup reads the doclists of, the longest first (a
#: long word is seldom a common one): a turn pasted whole, a log or a file, holds hundreds, and
#: each is a query of its own (SQLite also refuses a compound SELECT of over 500).
MAX_LOOKUP_TOKENS = 64


def lookup_tokens(tokens: Sequence[str]) -> list[str]:
    """The distinct non-empty `tokens` a lookup reads, sorted: at most MAX_LOOKUP_TOKENS of
    them, the longest first."""
    wanted = sorted({t for t in tokens if t})
    if len(wanted) <= MAX_LOOKUP_TOKENS:
        return wanted
    return sorted(sorted(wanted, key=lambda token: (-len(token), token))[:MAX_LOOKUP_TOKENS])
