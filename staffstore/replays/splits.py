"""Which part of an evaluation set a pair or turn belongs to: defined once, used everywhere.

tools/fit_gate.py fits and calibrates the gate on one part of each set and the replays report
the other. Both read the split from here, so a figure called "test" is always measured on data
the fitting never saw. A pair file's halves come from a SHA-256 of each pair's id, so they never
depend on file order; workday_dev.jsonl's split is the one its README suggests, and every other
workday-style file (workday_train_{a,b,c}.jsonl) is cut in thirds by a SHA-256 of each claim's
id, as the training data's README says: fit, calibrate, test. The rule is fixed here before
anyone read the thirds' errors, and a test split's errors are never listed in a ledger.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from typing import Literal

Half = Literal["calibration", "test", "all"]
HALVES: tuple[Half, ...] = ("calibration", "test", "all")

#: The hash half each named half of Quora's qqp_pool is: calibration 0, test 1. (PAWS-Wiki dev
#: is split by the same hash, half 0 for fitting and half 1 for calibration: it has no test half.)
HALF_NUMBER: dict[str, int] = {"calibration": 0, "test": 1}

HALF_RULE = "int(sha256(str(id)).hexdigest(), 16) % 2: 0 = calibration half, 1 = test half"

Split = Literal["tune", "fit", "calibrate", "test"]

#: What each part of workday_dev.jsonl is, as the ledgers and the gate card say it.
WORKDAY_SPLITS: dict[Split, str] = {
    "tune": "tuning split: claims D001-D100, their turns U0001-U0700 and the odd-numbered "
    "unrelated turns; tools/fit_gate.py fitted the gate on it, so its figures are not a test",
    "test": "TEST split: claims D101-D150, their turns U0701-U1050 and the even-numbered "
    "unrelated turns; never tuned on",
}

#: The last claim number of workday_dev's tuning split.
WORKDAY_TUNE_LAST_CLAIM = 100


def half(pair_id: object) -> int:
    """0 or 1, from a SHA-256 of the id: the split never depends on file order."""
    return int(hashlib.sha256(str(pair_id).encode()).hexdigest(), 16) % 2


def in_half(pair_id: object, wanted: Half) -> bool:
    """Whether a pair with this id is in the named half ("all" holds every pair)."""
    return wanted == "all" or half(pair_id) == HALF_NUMBER[wanted]


def workday_split(claim: str | None, turn: str | None = None) -> Split:
    """The split of a workday_dev claim (by its id) or turn (by its claim, or, for an unrelated
    turn whose claim is None, by whether its own id is odd)."""
    if claim is not None:
        return "tune" if int(claim.lstrip("D")) <= WORKDAY_TUNE_LAST_CLAIM else "test"
    if turn is None:
        raise ValueError("an unrelated turn needs its own id to be split")
    return "tune" if int(turn.lstrip("U")) % 2 == 1 else "test"


#: The thirds of a workday-style training file, by `int(sha256(id), 16) % 3`.
THIRDS: tuple[Split, ...] = ("fit", "calibrate", "test")

THIRDS_RULE = (
    "int(sha256(claim id).hexdigest(), 16) % 3: 0 = fit, 1 = calibrate, 2 = test; a turn goes "
    "with its claim, an unrelated turn by its own id"
)

#: What each third is, as the ledgers and the gate card say it.
THIRD_SPLITS: dict[Split, str] = {
    "fit": "fitting third (" + THIRDS_RULE + "); the gate may be fitted on it",
    "calibrate": "calibration third: the error budgets' thresholds are chosen on it",
    "test": "TEST third: never fitted or calibrated on; counts only",
}


def workday_third(claim: str | None, turn: str | None = None) -> Split:
    """The third of a workday-style training file a claim (by its id) or a turn (by its claim,
    or, for an unrelated turn, by its own id) belongs to."""
    key = claim if claim is not None else turn
    if key is None:
        raise ValueError("an unrelated turn needs its own id to be split")
    return THIRDS[int(hashlib.sha256(key.encode()).hexdigest(), 16) % 3]


_DEV_CLAIM = re.compile(r"D\d+")


def is_workday_dev(claim_ids: Iterable[str]) -> bool:
    """Whether a workday-style file is laid out as workday_dev (claims D001, D002, ..., split
    tune/TEST by number) rather than as a training file (A001, B001, ...) cut in thirds."""
    ids = list(claim_ids)
    return bool(ids) and all(_DEV_CLAIM.fullmatch(cid) for cid in ids)
