"""What `replay all` evaluates besides the replays, and where it finds the data.

The repository carries what may be shipped (replays/pairs/: PAWS-Wiki dev and workday_dev, with
their licence notes in replays/README.md). Quora's text is for research use only and is not in
the repository: it is looked for in $STAFFSTORE_EVAL_DATA when that is set, else in
../shared/eval and ../shared/train; when it is absent those evaluations are skipped and their
committed ledgers stay as they were (each names the SHA-256 of the data it measured).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..gate.scoring import DEFAULT_BUDGET, default_model
from ..models import Progress
from .data import DATA_DIR
from .pairs import default_ledger_path, run_pairs
from .splits import Half
from .workday_dev import is_dev_set, ledger_name, play_dev_set

#: The folder of the pair and dev sets the repository carries.
REPO_PAIRS_DIR = DATA_DIR / "pairs"
EVAL_DATA_ENV = "STAFFSTORE_EVAL_DATA"
#: Where the Quora files are looked for when $STAFFSTORE_EVAL_DATA is not set (from the
#: working directory: a checkout beside the shared evaluation folders).
DEFAULT_EVAL_DIRS = (Path("../shared/eval"), Path("../shared/train"))
QUORA_TUNE = "qqp_tune6k.jsonl"
QUORA_POOL = "qqp_pool.jsonl.gz"
#: A quick run plays at most this many pairs of each file, at the default budget only.
QUICK_SAMPLE = 200
QUORA_HOW_TO = (
    f"Quora evaluations skipped: no {QUORA_TUNE} or {QUORA_POOL} in "
    "{where}. They are research-use only and not shipped; put them in a folder named by "
    f"${EVAL_DATA_ENV} (a qqp_tune6k-style file can be made from GPTCache's "
    "examples/benchmark/similiar_qqp_full.json.gz); the committed Quora ledgers are kept as "
    "they were"
)


@dataclass(frozen=True)
class Evaluation:
    """One data file to play and the ledger it writes."""

    file: Path
    ledger: Path
    kind: str  # "workday_dev" or "pairs"
    budgets: tuple[float, ...]
    modes: tuple[str, ...] = ("shared", "isolated")
    half: Half = "all"
    sample: int | None = None

    def describe(self) -> str:
        if self.kind == "workday_dev":
            return f"workday-dev: {self.file} at {len(self.budgets)} budgets -> {self.ledger}"
        part = "" if self.half == "all" else f", {self.half} half"
        sampled = "" if self.sample is None else f", sample of {self.sample:,}"
        return (
            f"pairs: {self.file} ({', '.join(self.modes)}{part}{sampled}, "
            f"{len(self.budgets)} budgets) -> {self.ledger}"
        )


@dataclass
class Plan:
    evaluations: list[Evaluation] = field(default_factory=list)
    #: One line for each evaluation left out, and why.
    skipped: list[str] = field(default_factory=list)


def eval_dirs(environ: Mapping[str, str] | None = None) -> list[Path]:
    """The folders the Quora files are looked for in: $STAFFSTORE_EVAL_DATA alone when set."""
    env = os.environ if environ is None else environ
    chosen = env.get(EVAL_DATA_ENV)
    return [Path(chosen)] if chosen else list(DEFAULT_EVAL_DIRS)


def find(name: str, folders: list[Path]) -> Path | None:
    return next((folder / name for folder in folders if (folder / name).is_file()), None)


def all_budgets() -> tuple[float, ...]:
    """The default budget first (its rows go into the ledger), then every calibrated one."""
    others = sorted(b for b in default_model().budgets if b != DEFAULT_BUDGET)
    return (DEFAULT_BUDGET, *others)


def plan(
    out: Path, *, pairs_dir: Path = REPO_PAIRS_DIR, folders: list[Path], quick: bool = False
) -> Plan:
    """Every evaluation `replay all` plays: each .jsonl in `pairs_dir` (a workday_dev-style file
    as the workday-dev replay, any other as pairs), then Quora's files when found."""
    budgets = (DEFAULT_BUDGET,) if quick else all_budgets()
    sample = QUICK_SAMPLE if quick else None
    found = Plan()
    for file in sorted(pairs_dir.glob("*.jsonl")):
        if is_dev_set(file):
            ledger = out / ledger_name(file)
            found.evaluations.append(Evaluation(file, ledger, "workday_dev", budgets))
        else:
            ledger = default_ledger_path(file, out)
            found.evaluations.append(Evaluation(file, ledger, "pairs", budgets, sample=sample))
    tune, pool = find(QUORA_TUNE, folders), find(QUORA_POOL, folders)
    planned = {evaluation.ledger for evaluation in found.evaluations}
    if tune is not None and default_ledger_path(tune, out) not in planned:
        ledger = default_ledger_path(tune, out)
        found.evaluations.append(Evaluation(tune, ledger, "pairs", budgets, sample=sample))
    if pool is not None:
        ledger = default_ledger_path(pool, out, "test")
        # Whole, unless quick: its 31,089 pairs made `replay all` take 13 minutes on a 2-core
        # machine, against 4 with a sample of 6,000, but that sample put the false-hit rate on
        # 15 pairs.
        found.evaluations.append(
            Evaluation(pool, ledger, "pairs", budgets, half="test", sample=sample)
        )
    if tune is None and pool is None:
        where = " or ".join(str(folder) for folder in folders)
        found.skipped.append(QUORA_HOW_TO.format(where=where))
    return found


async def run_evaluation(
    evaluation: Evaluation, *, progress: Progress | None = None
) -> dict[str, Any]:
    """Play one evaluation and write its ledger; `progress` is told how far it has come."""
    if evaluation.kind == "workday_dev":
        return await play_dev_set(
            evaluation.file, evaluation.ledger, budgets=list(evaluation.budgets),
            progress=progress,
        )  # fmt: skip
    return await run_pairs(
        evaluation.file,
        evaluation.ledger,
        modes=evaluation.modes,
        budgets=evaluation.budgets,
        half=evaluation.half,
        sample=evaluation.sample,
        progress=progress,
    )
