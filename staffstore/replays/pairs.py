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

Each pair is asked at one or more error budgets (the gate's calibrated thresholds); the ledger
names each budget's threshold, the half of the file played (`--half`, by a hash of the ids:
splits.py) and the SHA-256 of the file. A test half's ledger keeps counts only, never a
listing of its pairs, so nobody tunes on it.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import tempfile
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, ValidationError, field_validator

from ..errors import InputError
from ..gate import query_first
from ..gate.scoring import DEFAULT_BUDGET, default_model
from ..models import Decision, NewClaim, Progress, Turn
from ..store import StaffStore
from ..text.lexicon import tokens
from .splits import HALF_RULE, Half, in_half

#: The clock the evaluation runs at, so claims never expire mid-run and runs repeat exactly.
_CLOCK = datetime(2026, 1, 1, tzinfo=UTC)
_SHARED_OWNER = "pairs"

SAMPLE_RULE = "the pairs of the half whose sha256('sample:' + id) is lowest, in file order"


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


def _lines(path: Path) -> list[str]:
    """The file's lines; a `.gz` file is read through gzip (Quora's pool ships that way)."""
    try:
        if path.suffix == ".gz":
            with gzip.open(path, "rt", encoding="utf-8") as handle:
                return handle.read().splitlines()
        return path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError, EOFError) as error:
        raise InputError(f"cannot read {path}: {error}") from error


def read_pairs(path: Path) -> list[Pair]:
    """Read a pairs file, naming the first bad line if there is one."""
    pairs: list[Pair] = []
    for number, line in enumerate(_lines(path), start=1):
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


def select(pairs: list[Pair], half: Half = "all", sample: int | None = None) -> list[Pair]:
    """The pairs of one half (by the hash of their ids), then at most `sample` of them.

    The sample is the pairs whose ids hash lowest under another salt: deterministic, the same
    whatever the file order, and unrelated to which half a pair is in. File order is kept.
    """
    if half != "all":
        missing = sum(1 for pair in pairs if pair.id is None)
        if missing:
            raise InputError(f"--half needs an id on every pair; {missing} pairs have none")
        pairs = [pair for pair in pairs if in_half(pair.id, half)]
    if sample is not None and sample < len(pairs):
        ranked = sorted(
            range(len(pairs)),
            key=lambda i: hashlib.sha256(f"sample:{pairs[i].id or i}".encode()).hexdigest(),
        )
        chosen = set(ranked[:sample])
        pairs = [pair for i, pair in enumerate(pairs) if i in chosen]
    return pairs


def file_sha256(path: Path) -> str:
    """The SHA-256 of a data file's bytes, so a ledger names exactly what it measured."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


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
    second_look = [row for row in rows if row["outcome"] == "hit" and row["second_look"]]
    return {
        "queries": queries,
        "positives": positives,
        "negatives": negatives,
        "hits": sum(1 for row in rows if row["outcome"] == "hit"),
        "second_look_hits": len(second_look),
        "second_look_correct_hits": sum(1 for r in second_look if r["verdict"] == "correct_hit"),
        "second_look_false_hits": sum(1 for r in second_look if r["verdict"] == "false_hit"),
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


def _verdict(pair: Pair, decision: Decision, paraphrases: set[frozenset[str]]) -> str:
    if not decision.hit:
        return "miss"
    served = decision.claim.question if decision.claim else ""
    if pair.label == 1 and served == pair.a:
        return "correct_hit"
    if _same_text(served, pair.b):
        return "identical_text_hit"
    if frozenset((served, pair.b)) in paraphrases:
        return "labelled_paraphrase_hit"
    return "false_hit"


async def evaluate_budgets(
    pairs: list[Pair],
    budgets: Sequence[float],
    *,
    isolated: bool = False,
    name: str = "",
    progress: Progress | None = None,
) -> list[dict[str, Any]]:
    """Run the pair evaluation in one mode at each error budget; one result (summary,
    by_source, rows) per budget, in the order given. `progress` is told the pairs asked.

    The store is loaded once; each pair is asked at every budget in turn, so the second look's
    cache serves the later budgets what the first one worked out.
    """
    paraphrases = {frozenset((pair.a, pair.b)) for pair in pairs if pair.label == 1}
    rows: list[list[dict[str, Any]]] = [[] for _ in budgets]
    with tempfile.TemporaryDirectory(prefix="staffstore-pairs-") as scratch:
        async with StaffStore.open(Path(scratch) / "pairs.db") as store:
            await _load(store, pairs, isolated)
            for index, pair in enumerate(pairs):
                owner = f"pair-{index}" if isolated else _SHARED_OWNER
                for at, budget in enumerate(budgets):
                    turn = Turn(owner=owner, text=pair.b, now=_CLOCK, gate_budget=budget)
                    decision = await query_first(store, turn)
                    rows[at].append(
                        {
                            "id": pair.id,
                            "source": pair.source,
                            "label": pair.label,
                            "hard_negative": pair.hard_negative,
                            "outcome": decision.outcome,
                            "reason": decision.reason,
                            "score": decision.score,
                            "second_look": decision.hit and decision.threshold is not None,
                            "verdict": _verdict(pair, decision, paraphrases),
                            "served": decision.claim.question if decision.claim else None,
                        }
                    )
                if progress is not None:
                    progress(index + 1, len(pairs))
    claims = len({(i if isolated else 0, p.a) for i, p in enumerate(pairs)})
    results = []
    for budget, budget_rows in zip(budgets, rows, strict=True):
        by_source: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for pair, row in zip(pairs, budget_rows, strict=True):
            by_source[pair.source].append(row)
        summary = _tally(budget_rows)
        summary.update(
            {
                "file": name,
                "mode": "isolated" if isolated else "shared",
                "budget": budget,
                **default_model().thresholds(budget),
                "claims": claims,
                "reasons": dict(sorted(Counter(row["reason"] for row in budget_rows).items())),
            }
        )
        results.append(
            {
                "summary": summary,
                "by_source": {source: _tally(group) for source, group in sorted(by_source.items())},
                "rows": budget_rows,
            }
        )
    return results


async def evaluate_pairs(
    path: Path, *, isolated: bool = False, budget: float = DEFAULT_BUDGET
) -> dict[str, Any]:
    """Run the pair evaluation on one file in one mode; return the ledger (rows and summary)."""
    (result,) = await evaluate_budgets(
        read_pairs(path), [budget], isolated=isolated, name=path.name
    )
    return result


async def run_pairs(
    path: Path,
    out: Path | None = None,
    *,
    modes: Iterable[str] = ("shared", "isolated"),
    budgets: Sequence[float] = (DEFAULT_BUDGET,),
    half: Half = "all",
    sample: int | None = None,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Evaluate one pairs file in each mode at each budget and write one ledger holding them.

    The ledger's `modes` hold the first budget's results (with every pair's row, unless the
    file's test half is played: nobody should tune on a listing of it); `budgets` holds each
    budget's threshold and summaries. `progress` is told the pairs asked over all modes.
    """
    if not budgets:
        raise InputError("no error budget to evaluate at")
    everything = read_pairs(path)
    pairs = select(everything, half, sample)
    if not pairs:
        raise InputError(f"{path}: no pairs in the {half} half")
    in_half_count = len(select(everything, half))
    model = default_model()
    ledger: dict[str, Any] = {
        "file": path.name,
        "sha256": file_sha256(path),
        "half": half,
        "half_rule": None if half == "all" else HALF_RULE,
        "pairs_in_half": in_half_count,
        "sample": None
        if len(pairs) == in_half_count
        else {"size": len(pairs), "of": in_half_count, "rule": SAMPLE_RULE},
        "rows_withheld": half == "test",
        "budget": budgets[0],
        **model.thresholds(budgets[0]),
        "modes": {},
        "budgets": [{"budget": b, **model.thresholds(b), "modes": {}} for b in budgets],
    }
    modes = tuple(modes)
    for number, mode in enumerate(modes):
        results = await evaluate_budgets(
            pairs, budgets, isolated=(mode == "isolated"), name=path.name,
            progress=_part_of(progress, number * len(pairs), len(modes) * len(pairs)),
        )  # fmt: skip
        for entry, result in zip(ledger["budgets"], results, strict=True):
            entry["modes"][mode] = result["summary"]
        first = results[0]
        if half == "test":
            first = {"summary": first["summary"], "by_source": first["by_source"]}
        ledger["modes"][mode] = first
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(ledger, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return ledger


def _part_of(progress: Progress | None, before: int, total: int) -> Progress | None:
    """`progress` for one part of a longer count: `before` items done ahead of it, `total` in
    all (one count over every mode, not one a mode)."""
    if progress is None:
        return None
    whole = progress
    return lambda done, _: whole(before + done, total)


def data_stem(pairs_file: Path) -> str:
    """`qqp_pool.jsonl.gz` -> `qqp_pool`; `paws_wiki_dev.jsonl` -> `paws_wiki_dev`."""
    name = pairs_file.name
    for suffix in (".gz", ".jsonl", ".json"):
        name = name.removesuffix(suffix)
    return name


def default_ledger_path(pairs_file: Path, ledgers: Path, half: Half = "all") -> Path:
    part = "" if half == "all" else f"-{half}"
    return ledgers / f"pairs-{data_stem(pairs_file)}{part}-ledger.json"
