"""Pair evaluation: the gate on real labelled question pairs, the way a cache would meet them.

Every distinct `a` becomes a claim; every `b` is asked. A label-1 pair is a correct hit only when
its own `a` is returned; any other hit is a false hit. Two modes:

- shared: one owner, one store holding every `a` (thousands of neighbours, as in production);
- isolated: each pair under its own owner, so the store holds only that pair's `a` (the pure
  "same question?" decision).

Some data sets repeat questions: a `b` can be, letter for letter, another pair's `a`. Returning
that stored question is what any cache must do, yet the strict rule above counts it false. And a
`b` can be served another pair's `a` that the file itself labels its paraphrase (a label-1 pair
elsewhere holds the two). Both kinds are reported apart: `false_hits_strict` counts every hit
the rule calls false; `false_hits` leaves out the identical-text hits (`identical_text_hits`:
the same words in the same order, differing only in case, spacing or punctuation) and the
labelled-paraphrase hits (`labelled_paraphrase_hits`), so a reader can see exactly what each
number holds.
"""

from __future__ import annotations

import json
import tempfile
from collections import Counter, defaultdict
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, ValidationError, field_validator

from ..errors import InputError
from ..gate import query_first
from ..models import NewClaim, Turn
from ..store import StaffStore
from ..text.lexicon import tokens

#: The clock the evaluation runs at, so claims never expire mid-run and runs repeat exactly.
_CLOCK = datetime(2026, 1, 1, tzinfo=UTC)
_SHARED_OWNER = "pairs"


class Pair(BaseModel):
    """One labelled pair. The public releases' own field names are read too: Quora's
    `question1`, `question2`, `is_duplicate` and PAWS's `sentence1`, `sentence2` (other fields,
    such as Quora's `qid1`, are ignored)."""

    # Ids come as numbers in the public releases ("id": 7); they are names here.
    model_config = ConfigDict(coerce_numbers_to_str=True)

    a: str = Field(validation_alias=AliasChoices("a", "question1", "sentence1"))
    b: str = Field(validation_alias=AliasChoices("b", "question2", "sentence2"))
    label: int = Field(validation_alias=AliasChoices("label", "is_duplicate"))
    source: str = "unknown"
    id: str | None = None
    hard_negative: bool | None = None

    @field_validator("source", mode="before")
    @classmethod
    def _unknown_when_missing(cls, value: object) -> object:
        return "unknown" if value is None else value


def read_pairs(path: Path) -> list[Pair]:
    """Read a pairs file, naming the first bad line if there is one."""
    pairs: list[Pair] = []
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise InputError(f"cannot read {path}: {error}") from error
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            pair = Pair.model_validate_json(line)
        except ValidationError as error:
            first = error.errors()[0]
            raise InputError(f"{path}:{number}: not a pair: {first['msg']}") from error
        if pair.label not in (0, 1):
            raise InputError(f"{path}:{number}: label must be 0 or 1")
        pairs.append(pair)
    if not pairs:
        raise InputError(f"{path} holds no pairs")
    return pairs


def _same_text(x: str, y: str) -> bool:
    """The same words in the same order: only case, spacing and punctuation differ."""
    return tokens(x) == tokens(y)


def _answer_for(question: str) -> str:
    return f"stored answer to: {question}"


async def _load(store: StaffStore, pairs: list[Pair], isolated: bool) -> None:
    def claims() -> Iterable[NewClaim]:
        seen: set[tuple[str, str]] = set()
        for index, pair in enumerate(pairs):
            owner = f"pair-{index}" if isolated else _SHARED_OWNER
            if (owner, pair.a) in seen:
                continue
            seen.add((owner, pair.a))
            yield NewClaim(owner=owner, question=pair.a, answer=_answer_for(pair.a))

    batch: list[NewClaim] = []
    for claim in claims():
        batch.append(claim)
        if len(batch) == 5_000:
            await store.ensure_claims(batch, now=_CLOCK)
            batch = []
    if batch:
        await store.ensure_claims(batch, now=_CLOCK)


def _tally(rows: list[dict[str, Any]]) -> dict[str, Any]:
    queries = len(rows)
    positives = sum(1 for row in rows if row["label"] == 1)
    negatives = queries - positives
    counts = Counter(row["verdict"] for row in rows)
    strict = counts["false_hit"] + counts["identical_text_hit"] + counts["labelled_paraphrase_hit"]
    false_on_negatives = sum(
        1 for row in rows if row["label"] == 0 and row["verdict"] == "false_hit"
    )
    return {
        "queries": queries,
        "positives": positives,
        "negatives": negatives,
        "hits": sum(1 for row in rows if row["outcome"] == "hit"),
        "correct_hits": counts["correct_hit"],
        "recall": counts["correct_hit"] / positives if positives else 0.0,
        "false_hits": counts["false_hit"],
        "false_hit_rate": counts["false_hit"] / queries if queries else 0.0,
        "false_hits_on_negatives": false_on_negatives,
        "false_hit_rate_on_negatives": false_on_negatives / negatives if negatives else 0.0,
        "identical_text_hits": counts["identical_text_hit"],
        "labelled_paraphrase_hits": counts["labelled_paraphrase_hit"],
        "false_hits_strict": strict,
        "false_hit_rate_strict": strict / queries if queries else 0.0,
    }


async def evaluate_pairs(path: Path, *, isolated: bool = False) -> dict[str, Any]:
    """Run the pair evaluation on one file in one mode; return the ledger (rows and summary)."""
    pairs = read_pairs(path)
    paraphrases = {frozenset((pair.a, pair.b)) for pair in pairs if pair.label == 1}
    with tempfile.TemporaryDirectory(prefix="staffstore-pairs-") as scratch:
        async with StaffStore.open(Path(scratch) / "pairs.db") as store:
            await _load(store, pairs, isolated)
            rows = []
            for index, pair in enumerate(pairs):
                owner = f"pair-{index}" if isolated else _SHARED_OWNER
                decision = await query_first(store, Turn(owner=owner, text=pair.b, now=_CLOCK))
                if not decision.hit:
                    verdict = "miss"
                else:
                    served = decision.claim.question if decision.claim else ""
                    if pair.label == 1 and served == pair.a:
                        verdict = "correct_hit"
                    elif _same_text(served, pair.b):
                        verdict = "identical_text_hit"
                    elif frozenset((served, pair.b)) in paraphrases:
                        verdict = "labelled_paraphrase_hit"
                    else:
                        verdict = "false_hit"
                rows.append(
                    {
                        "id": pair.id,
                        "source": pair.source,
                        "label": pair.label,
                        "hard_negative": pair.hard_negative,
                        "outcome": decision.outcome,
                        "reason": decision.reason,
                        "score": decision.score,
                        "verdict": verdict,
                        "served": decision.claim.question if decision.claim else None,
                    }
                )
    by_source: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for pair, row in zip(pairs, rows, strict=True):
        by_source[pair.source].append(row)
    summary = _tally(rows)
    summary.update(
        {
            "file": path.name,
            "mode": "isolated" if isolated else "shared",
            "claims": len({(i if isolated else 0, p.a) for i, p in enumerate(pairs)}),
            "reasons": dict(sorted(Counter(row["reason"] for row in rows).items())),
        }
    )
    return {
        "summary": summary,
        "by_source": {source: _tally(group) for source, group in sorted(by_source.items())},
        "rows": rows,
    }


async def run_pairs(
    path: Path, out: Path | None = None, *, modes: Iterable[str] = ("shared", "isolated")
) -> dict[str, Any]:
    """Evaluate one pairs file in each mode and write one ledger holding both."""
    ledger: dict[str, Any] = {"file": path.name, "modes": {}}
    for mode in modes:
        ledger["modes"][mode] = await evaluate_pairs(path, isolated=(mode == "isolated"))
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(ledger, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return ledger


def default_ledger_path(pairs_file: Path, ledgers: Path) -> Path:
    return ledgers / f"pairs-{pairs_file.stem}-ledger.json"
