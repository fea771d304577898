"""The workday replays: a workday-style file played like a cache, split by split, budget by budget.

All of a file's claims go into one owner's store on a temporary SQLite file; every turn is asked
through query_first against the whole store, once per calibrated error budget. A hit turn is
correct only when its own claim is served; serving anything to a miss turn, or another claim to
a hit turn, is a false hit (the files' READMEs score it so). Figures are kept apart by split
(splits.py): workday_dev.jsonl's tuning split, which tools/fit_gate.py fitted the gate on, and
its TEST split; a training file's fit, calibrate and TEST thirds. Only a split the gate may be
fitted on lists its false hits turn by turn: a listing of a calibration or test split's errors
would invite tuning on it, so those hold counts only.
"""

from __future__ import annotations

import json
import tempfile
from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from ..errors import InputError
from ..gate import query_first
from ..gate.scoring import DEFAULT_BUDGET, default_model
from ..models import Decision, NewClaim, Progress, Turn
from ..store import StaffStore
from .pairs import file_sha256
from .splits import (
    THIRD_SPLITS,
    THIRDS,
    WORKDAY_SPLITS,
    Split,
    is_workday_dev,
    workday_split,
    workday_third,
)

#: The clock the replay runs at, so claims never expire mid-run and runs repeat exactly.
_CLOCK = datetime(2026, 1, 1, tzinfo=UTC)
OWNER = "workday-dev"
SPLITS: tuple[Split, ...] = ("tune", "test")
#: The splits whose false hits a ledger may list: those the gate may be fitted on.
LISTED: frozenset[Split] = frozenset({"tune", "fit"})


@dataclass(frozen=True)
class SplitScheme:
    """How one workday-style file is split: the split of each claim or turn, and what each is."""

    splits: tuple[Split, ...]
    what: dict[Split, str]

    def of(self, claim: str | None, turn: str | None = None) -> Split:
        if self.splits == SPLITS:
            return workday_split(claim, turn)
        return workday_third(claim, turn)


def split_scheme(claim_ids: list[str]) -> SplitScheme:
    """workday_dev's tune/TEST split, or a training file's thirds."""
    if is_workday_dev(claim_ids):
        return SplitScheme(SPLITS, dict(WORKDAY_SPLITS))
    return SplitScheme(THIRDS, dict(THIRD_SPLITS))


def ledger_name(path: Path) -> str:
    """The ledger a workday-style file's replay writes: workday_dev-ledger.json and the like."""
    return f"{path.stem}-ledger.json"


class DevClaim(BaseModel):
    model_config = ConfigDict(extra="ignore")

    id: str
    question: str
    answer: str
    agent: str | None = None
    repository: str | None = None
    revision: str | None = None


class DevTurn(BaseModel):
    model_config = ConfigDict(extra="ignore")

    id: str
    claim: str | None
    label: str
    style: str
    text: str


@dataclass(frozen=True)
class DevSet:
    claims: list[DevClaim]
    turns: list[DevTurn]


def is_dev_set(path: Path) -> bool:
    """Whether a .jsonl file is laid out as workday_dev.jsonl (claim and turn lines), rather
    than as labelled pairs: its first line carries a `kind`."""
    try:
        with path.open(encoding="utf-8") as handle:
            first = handle.readline()
        return isinstance(row := json.loads(first), dict) and "kind" in row
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return False


def read_dev_set(path: Path) -> DevSet:
    """The claims and turns of a workday_dev-style file, naming the first bad line."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as error:
        raise InputError(f"cannot read {path}: {error}") from None
    claims: list[DevClaim] = []
    turns: list[tuple[int, DevTurn]] = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            kind = row.get("kind") if isinstance(row, dict) else None
            if kind == "claim":
                claims.append(DevClaim.model_validate(row))
            elif kind == "turn":
                turn = DevTurn.model_validate(row)
                if turn.label not in ("hit", "miss"):
                    raise ValueError("label must be hit or miss")
                turns.append((number, turn))
            else:
                raise ValueError("kind must be claim or turn")
        except (json.JSONDecodeError, ValidationError, ValueError) as error:
            raise InputError(f"{path}:{number}: not a claim or turn line: {error}") from None
    # The split scheme follows from the claims' ids, so turns are checked once all are read.
    scheme = split_scheme([claim.id for claim in claims])
    for number, turn in turns:
        try:
            scheme.of(turn.claim, turn.id)  # an id that names no split fails here
        except ValueError as error:
            raise InputError(f"{path}:{number}: not a claim or turn line: {error}") from None
    known = {claim.id for claim in claims}
    unknown = sorted({t.claim for _, t in turns if t.claim is not None and t.claim not in known})
    if unknown:
        raise InputError(f"{path}: turns name claims the file does not hold: {unknown[:5]}")
    if not claims or not turns:
        raise InputError(f"{path} holds no claims or no turns")
    return DevSet(claims, [turn for _, turn in turns])


def _verdict(turn: DevTurn, decision: Decision, claim_ids: dict[str, str]) -> str:
    if not decision.hit:
        return "miss"
    served = claim_ids.get(decision.claim_id or "")
    if turn.label == "hit" and served == turn.claim:
        return "correct_hit"
    return "false_hit"


def _split_summary(rows: list[dict[str, Any]], *, listing: bool) -> dict[str, Any]:
    """One split's figures at one budget; `listing` adds the false hits turn by turn."""
    hit_rows = [r for r in rows if r["label"] == "hit"]
    miss_rows = [r for r in rows if r["label"] == "miss"]
    false = [r for r in rows if r["verdict"] == "false_hit"]
    served = [r for r in rows if r["outcome"] == "hit"]

    def by_style(group: list[dict[str, Any]], counted: str) -> dict[str, dict[str, Any]]:
        styles: dict[str, dict[str, Any]] = {}
        for style in sorted({r["style"] for r in group}):
            mine = [r for r in group if r["style"] == style]
            n = sum(1 for r in mine if r["verdict"] == counted)
            share = "recall" if counted == "correct_hit" else "false_hit_rate"
            styles[style] = {"turns": len(mine), counted + "s": n, share: n / len(mine)}
        return styles

    correct = sum(1 for r in hit_rows if r["verdict"] == "correct_hit")
    summary: dict[str, Any] = {
        "turns": len(rows),
        "hit_turns": len(hit_rows),
        "miss_turns": len(miss_rows),
        "correct_hits": correct,
        "recall": correct / len(hit_rows) if hit_rows else 0.0,
        "recall_by_style": by_style(hit_rows, "correct_hit"),
        "false_hits": len(false),
        "false_hit_rate": len(false) / len(rows) if rows else 0.0,
        "false_hits_on_miss_turns": sum(1 for r in miss_rows if r["verdict"] == "false_hit"),
        "wrong_claim_hits": sum(1 for r in hit_rows if r["verdict"] == "false_hit"),
        "false_hits_by_miss_style": by_style(miss_rows, "false_hit"),
        "strict_hits": sum(1 for r in served if not r["second_look"]),
        "second_look_hits": sum(1 for r in served if r["second_look"]),
        "correct_strict_hits": sum(
            1 for r in served if not r["second_look"] and r["verdict"] == "correct_hit"
        ),
        "correct_second_look_hits": sum(
            1 for r in served if r["second_look"] and r["verdict"] == "correct_hit"
        ),
        "miss_reasons": dict(
            sorted(Counter(r["reason"] for r in rows if r["outcome"] == "miss").items())
        ),
    }
    if listing:
        summary["false_hit_turns"] = [
            {key: r[key] for key in ("turn", "claim", "label", "style", "text", "served",
                                     "score", "second_look")}
            for r in false
        ]  # fmt: skip
    return summary


async def play_dev_set(
    path: Path,
    out: Path | None = None,
    *,
    budgets: list[float] | None = None,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Play a workday_dev-style file at each budget (default: every calibrated one); write and
    return the ledger. `progress` is told the turns played."""
    data = read_dev_set(path)
    scheme = split_scheme([claim.id for claim in data.claims])
    model = default_model()
    chosen = sorted(set(model.budgets) | {DEFAULT_BUDGET}) if budgets is None else budgets
    if not chosen:
        raise InputError("no error budget to play at")
    rows: dict[float, list[dict[str, Any]]] = {budget: [] for budget in chosen}
    with tempfile.TemporaryDirectory(prefix="staffstore-workday-dev-") as scratch:
        async with StaffStore.open(Path(scratch) / "workday_dev.db") as store:
            stored = await store.ensure_claims(
                [
                    NewClaim(
                        owner=OWNER, question=c.question, answer=c.answer, agent=c.agent,
                        repository=c.repository, revision=c.revision,
                    )
                    for c in data.claims
                ],
                now=_CLOCK,
            )  # fmt: skip
            claim_ids = {
                claim.id: source.id
                for (claim, _new), source in zip(stored, data.claims, strict=True)
            }
            questions = {c.id: c.question for c in data.claims}
            for played, turn in enumerate(data.turns, start=1):
                split = scheme.of(turn.claim, turn.id)
                for budget in chosen:
                    decision = await query_first(
                        store, Turn(owner=OWNER, text=turn.text, now=_CLOCK, gate_budget=budget)
                    )
                    served = claim_ids.get(decision.claim_id or "") if decision.hit else None
                    rows[budget].append(
                        {
                            "turn": turn.id, "claim": turn.claim, "label": turn.label,
                            "style": turn.style, "text": turn.text, "split": split,
                            "outcome": decision.outcome, "reason": decision.reason,
                            "score": decision.score,
                            "second_look": decision.hit and decision.threshold is not None,
                            "served": served,
                            "served_question": questions.get(served or ""),
                            "verdict": _verdict(turn, decision, claim_ids),
                        }
                    )  # fmt: skip
                if progress is not None:
                    progress(played, len(data.turns))
    claims_by_split = Counter(scheme.of(c.id) for c in data.claims)
    ledger: dict[str, Any] = {
        "name": "workday_dev" if scheme.splits == SPLITS else path.stem,
        "file": path.name,
        "sha256": file_sha256(path),
        "splits": {
            split: {
                "what": scheme.what[split],
                "used_for_fitting": split in LISTED,
                "claims": claims_by_split[split],
                "turns": sum(1 for r in rows[chosen[0]] if r["split"] == split),
            }
            for split in scheme.splits
        },
        "store": f"all {len(data.claims)} claims under one owner; every turn asked against "
        "the whole store",
        "scoring": "a hit turn is correct only when its own claim is served; serving any claim "
        "to a miss turn, or another claim to a hit turn, is a false hit; rates are shares of "
        "the split's turns (recall: of its hit turns)",
        "test_listing": "withheld: only a split the gate may be fitted on lists its false "
        "hits; the others are reported as counts only",
        "default_budget": DEFAULT_BUDGET,
        "budgets": [
            {
                "budget": budget,
                **model.thresholds(budget),
                "default": budget == DEFAULT_BUDGET,
                **{
                    split: _split_summary(
                        [r for r in rows[budget] if r["split"] == split],
                        listing=split in LISTED,
                    )
                    for split in scheme.splits
                },
            }
            for budget in chosen
        ],
    }
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(ledger, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return ledger
