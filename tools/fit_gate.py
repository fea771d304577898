"""Fit the gate's score and calibrate its error budgets (staffstore/gate/data/gate_params.json).

    python tools/fit_gate.py [--eval ../shared/eval] [--train ../shared/train]
    python tools/fit_gate.py --keep-trees    # recalibrate only: how a slot change is measured

What is fitted on what (and never on the test splits):

- filler: the words a paraphrase adds or drops freely ("remind", "explain"), learned from the
  hit turns of workday_dev's tuning split (claims D001-D100) and of the fit thirds of
  workday_train_{a,b,c}.jsonl against their claims;
- the score, gradient-boosted trees (scikit-learn, `pip install -e '.[fit]'`; exported to plain
  arrays, so running the gate needs no scikit-learn): on workday_dev's tuning split and the
  training files' fit thirds (each turn against its own claim and its four nearest other
  claims, weight 10), STS-B train (label 1 = score >= 4) and the fitting half of PAWS-Wiki dev.
  Quora text is not fitted on: its terms allow measurement and calibration, not shipping a
  model trained on it;
- the calibration (budget -> threshold): on the whole calibration halves of Quora's qqp_pool
  and of PAWS-Wiki dev, each pair alone (isolated), the strict test included, and on the
  calibrate thirds of the training files, each turn asked of its file's fit and calibrate
  claims (its own and its four nearest), counted once however many wrong claims pass. A set is
  within a budget when its added false hits k of n turns meet (k + 1) / (n + 1) <= budget
  (within_budget).

The training files are cut in thirds by a SHA-256 of each claim's id (splits.workday_third),
as their README says, before anything in them was read: 0 fit, 1 calibrate, 2 test. The test
splits, reported by `staffstore replay` and audited in the gate card, are workday_dev
D101-D150 with the even unrelated turns, the training files' test thirds, and the other half
of qqp_pool. Halves are chosen by a SHA-256 of each pair's id, so they never depend on file
order.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import random
import subprocess
import sys
from collections import Counter
from importlib.metadata import version
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from staffstore.gate.query_first import strict_match_difference  # noqa: E402
from staffstore.gate.scoring import Form, GateModel, text_form  # noqa: E402
from staffstore.replays.splits import (  # noqa: E402
    THIRDS,
    half,
    workday_split,
    workday_third,
)
from staffstore.text.alignment import FEATURES, align, features, subject_words  # noqa: E402
from staffstore.text.matching import compare, normalize  # noqa: E402
from staffstore.text.respelling import respelled  # noqa: E402
from staffstore.text.similarity import text_cosine  # noqa: E402

OUT = ROOT / "staffstore" / "gate" / "data" / "gate_params.json"
BUDGETS = (0.001, 0.002, 0.005, 0.01, 0.02, 0.05)
#: Candidate thresholds: every 0.005, and every 0.001 above 0.9, where the strict budgets fall
#: (a grid of 0.005 there left up to 0.004 of the score unused: held out within the tuning
#: split, 128 -> 140 of 400 paraphrases served at the 0.1% budget, no near miss more).
THRESHOLDS = sorted(
    {round(t, 3) for t in np.arange(0.30, 0.90, 0.005)}
    | {round(t, 3) for t in np.arange(0.90, 1.0001, 0.001)}
)
#: How much a workday_dev tuning pair weighs against one of STS-B or PAWS. Chosen by
#: `--cross-validate` (paraphrases held out within the tuning split served at the 0.1% / 0.2% /
#: 0.5% budgets, of 400; near misses served at 0.2%, of 300): with the features and slots of
#: December 2026, 6.0 gave 184 / 206 / 235 (1), 10.0 gave 196 / 220 / 247 (1) and 15.0 gave
#: 190 / 218 / 252 (1). (Earlier, before names were counted: 3.0 gave 116 / 164 / 204, 6.0
#: 128 / 184 / 219 and 10.0 120 / 203 / 237; fitting on the workday pairs and STS-B alone, or
#: with PAWS alone, served fewer at every budget: 52 and 22 of 400 at 0.1%, weight 3.0.)
WORKDAY_WEIGHT = 10.0


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def workday_tuning(path: Path) -> tuple[dict[str, dict[str, Any]], list[dict[str, Any]]]:
    """Claims D001-D100, their turns and the odd-numbered unrelated turns."""
    claims: dict[str, dict[str, Any]] = {}
    turns: list[dict[str, Any]] = []
    for row in read_jsonl(path):
        if row["kind"] == "claim":
            if workday_split(row["id"]) == "tune":
                claims[row["id"]] = row
        elif workday_split(row["claim"], row["id"]) == "tune":
            turns.append(row)
    return claims, turns


def subject_text(text: str) -> str:
    return " ".join(w.surface for w in subject_words(text))


def workday_pairs(
    claims: dict[str, dict[str, Any]], turns: list[dict[str, Any]], nearest: int = 4
) -> list[tuple[str, str, int]]:
    """Each turn against its own claim (labelled) and its nearest other claims (label 0)."""
    return workday_turn_pairs(claims, turns, nearest)[0]


def workday_turn_pairs(
    claims: dict[str, dict[str, Any]], turns: list[dict[str, Any]], nearest: int = 4
) -> tuple[list[tuple[str, str, int]], list[int]]:
    """workday_pairs, and the turn (its index in `turns`) each pair belongs to."""
    rows: list[tuple[str, str, int]] = []
    owners: list[int] = []
    subjects = {cid: subject_text(c["question"]) for cid, c in claims.items()}
    for index, turn in enumerate(turns):
        mine = subject_text(turn["text"])
        ranked = sorted(subjects, key=lambda cid: -text_cosine(mine, subjects[cid]))
        if turn["claim"] is not None:
            own = claims[turn["claim"]]["question"]
            rows.append((turn["text"], own, int(turn["label"] == "hit")))
        others = [cid for cid in ranked if cid != turn["claim"]][:nearest]
        rows.extend((turn["text"], claims[cid]["question"], 0) for cid in others)
        owners.extend([index] * (len(rows) - len(owners)))
    return rows, owners


def workday_thirds(
    path: Path,
) -> dict[str, tuple[dict[str, dict[str, Any]], list[dict[str, Any]]]]:
    """A workday training file's claims and turns by third (fit, calibrate, test), split as its
    README says before anything is read (staffstore.replays.splits.workday_third)."""
    thirds: dict[str, tuple[dict[str, dict[str, Any]], list[dict[str, Any]]]] = {
        name: ({}, []) for name in THIRDS
    }
    for row in read_jsonl(path):
        if row["kind"] == "claim":
            thirds[workday_third(row["id"])][0][row["id"]] = row
        else:
            thirds[workday_third(row["claim"], row["id"])][1].append(row)
    return thirds


def learn_filler(positives: list[tuple[str, str]]) -> dict[str, float]:
    """Words present in several hit turns (or their claims) and mostly without a counterpart
    on the other side: the wrappers and padding a paraphrase adds or drops."""
    present: Counter[str] = Counter()
    unaligned: Counter[str] = Counter()
    for asked, stored in positives:
        a = align(asked, stored)
        for words, best in ((a.turn, a.turn_best), (a.stored, a.stored_best)):
            for word, score in zip(words, best, strict=True):
                present[word.key] += 1
                unaligned[word.key] += score < 0.5
    filler = {}
    for key, n in sorted(present.items()):
        if n >= 4:
            factor = 1.0 - unaligned[key] / (n + 2)
            if factor < 0.5:
                filler[key] = round(factor, 3)
    return filler


#: The trees' shape: shallow, many, slow to learn; chosen by `--cross-validate` between the two
#: halves of workday_dev's tuning split (claims by parity), never on its test split. With
#: scikit-learn 1.9.1, the workday weight at 3.0 and before names were counted, of 400
#: held-out paraphrases at the 0.1% / 0.2% / 0.5% budgets (none of 300 held-out near misses
#: served at 0.1% and 0.2%, 2 at 0.5% for each shape): depth 2 with 300 trees served
#: 92 / 127 / 199, with 500 trees 105 / 144 / 205, with 800 trees 109 / 135 / 202; depth 3
#: with 300 trees 80 / 107 / 198 (no near miss at 0.5%). Neither a stronger L2 penalty (5.0:
#: 107 / 138 / 203) nor monotonic constraints (each coverage, similarity and order measure may
#: only raise the score, each unaligned measure only lower it: 64 / 93 / 158) did better.
#: With the workday weight at 6.0 and the name rules: 500 trees 147 / 191 / 224, 800 trees
#: 160 / 182 / 222, depth 3 with 300 trees 142 / 178 / 225; none better beyond the noise of
#: about 10 either way. With the workday weight at 10.0 (December 2026): 500 trees 196 / 220 /
#: 247, 800 trees 184 / 214 / 241, depth 3 with 300 trees 178 / 205 / 243. Monotonic
#: constraints on a few measures only, tried again then because Quora negatives with a moved
#: word score 0.99 and more: order, order_all and min_cov may only raise the score and
#: max_unal only lower it, 166 / 189 / 221; order and order_all alone, 157 / 195 / 221.
#: With questions and statements calibrated apart (December 4 2026): 500 trees 225 / 243 /
#: 261, 1,000 trees 216 / 231 / 256, depth 3 with 500 trees 211 / 230 / 258. Tried the same
#: day with one threshold for both forms, against 220 / 239 / 258, and not kept: the stored
#: side's length in words as one more measure (198 / 229 / 262), the rarity-weighted unaligned
#: words summed and their share beside the aligned (215 / 237 / 261), fitting on no PAWS pairs
#: (125 / 154 / 203) and on PAWS's whole fitting half rather than 3,000 of it (204 / 239 /
#: 266).
TREES = {"max_depth": 2, "max_iter": 500, "learning_rate": 0.05, "l2_regularization": 1.0}


def fit_trees(
    x: np.ndarray, y: np.ndarray, w: np.ndarray, shape: dict[str, float]
) -> dict[str, Any]:
    """Fit gradient-boosted trees and export them as flat arrays (scoring.Trees reads them)."""
    from sklearn.ensemble import HistGradientBoostingClassifier

    model = HistGradientBoostingClassifier(**shape, early_stopping=False, random_state=0)
    model.fit(x, y, sample_weight=w)
    spec: dict[str, Any] = {
        "baseline": float(np.ravel(model._baseline_prediction)[0]),
        "roots": [], "feature": [], "threshold": [], "left": [], "right": [], "value": [],
    }  # fmt: skip
    for (predictor,) in model._predictors:
        offset = len(spec["feature"])
        spec["roots"].append(offset)
        for node in predictor.nodes:
            leaf = bool(node["is_leaf"])
            spec["feature"].append(0 if leaf else int(node["feature_idx"]))
            spec["threshold"].append(0.0 if leaf else float(node["num_threshold"]))
            spec["left"].append(-1 if leaf else offset + int(node["left"]))
            spec["right"].append(-1 if leaf else offset + int(node["right"]))
            spec["value"].append(float(node["value"]) if leaf else 0.0)
    # The exported arrays must score exactly as scikit-learn does, or the file is wrong.
    from staffstore.gate.scoring import Trees

    trees = Trees(spec)
    ours = np.array([trees.log_odds(list(row)) for row in x])
    theirs = model.decision_function(x)
    if not np.allclose(ours, theirs, atol=1e-6):
        raise SystemExit("the exported trees do not score as scikit-learn does")
    return spec


#: One calibration pair as scored: (label, strict test matched, probability or 0, the form of
#: the stored text), and optionally the turn it belongs to: a turn asked of a store is read
#: against several stored questions, and it is served a wrong answer if any of them wrongly
#: passes, so its pairs are counted together (a pair without a turn is a turn of its own).
Scored = tuple[int, bool, float, Form] | tuple[int, bool, float, Form, int]
FORMS: tuple[Form, ...] = ("question", "statement")


def isolated_scores(
    model: GateModel, pairs: list[tuple[str, str, int]], turns: list[int] | None = None
) -> list[Scored]:
    """How the gate scores each (asked, stored, label), each pair alone; `turns` names the turn
    each pair belongs to, when several pairs are one turn's candidates."""
    # As query_first serves: a strict match that differs in time or in who did what is refused.
    strict = [
        compare(normalize(a), normalize(s)).same_question
        and strict_match_difference(a, s, frozenset()) is None
        for a, s, _label in pairs
    ]
    # A turn's candidates go to the model together, as the gate sends them.
    by_turn: dict[str, list[int]] = {}
    for index, (asked, _stored, _label) in enumerate(pairs):
        if not strict[index]:
            by_turn.setdefault(asked, []).append(index)
    probability = [0.0] * len(pairs)
    for asked, indices in by_turn.items():
        found = model.assess_many(asked, [pairs[i][1] for i in indices])
        for i, assessment in zip(indices, found, strict=True):
            probability[i] = assessment.probability or 0.0
    return [
        (label, strict[i], probability[i], text_form(stored), i if turns is None else turns[i])
        for i, (_asked, stored, label) in enumerate(pairs)
    ]


def is_served(row: Scored, thresholds: dict[Form, float]) -> bool:
    _label, strict, probability, form = row[:4]
    return strict or probability >= thresholds[form]


def _turn_of(index: int, row: Scored) -> int:
    return row[4] if len(row) == 5 else -1 - index


def rates(scored: list[Scored], thresholds: dict[Form, float]) -> tuple[float, float, float]:
    """(recall, false-hit rate, false hits the second look adds) at each form's threshold, as
    shares of the turns (a pair alone is a turn). A turn counts as a false hit when any of its
    wrong candidates is served. The strict test's own false hits on Quora are nearly all label
    errors ("What are the most haunted place in delhi?" / "...places in delhi?" labelled
    different), so a budget is spent by what the second look adds; the total is reported
    beside it."""
    turns: dict[int, list[Scored]] = {}
    for index, row in enumerate(scored):
        turns.setdefault(_turn_of(index, row), []).append(row)
    asking = [rows for rows in turns.values() if any(row[0] == 1 for row in rows)]
    hits = sum(1 for rows in asking if any(r[0] == 1 and is_served(r, thresholds) for r in rows))
    false = sum(
        1 for rows in turns.values() if any(r[0] == 0 and is_served(r, thresholds) for r in rows)
    )
    added = sum(
        1
        for rows in turns.values()
        if any(r[0] == 0 and not r[1] and is_served(r, thresholds) for r in rows)
        # a turn the strict test already served wrongly adds no false hit of its own
        and not any(r[0] == 0 and r[1] for r in rows)
    )
    count = len(turns) or 1
    return hits / (len(asking) or 1), false / count, added / count


def fit_score(
    wd: list[tuple[str, str, int]],
    others: list[list[tuple[str, str, int]]],
    shape: dict[str, float],
) -> tuple[dict[str, Any], int]:
    """The filler words (from `wd`'s hits) and the trees, fitted on `wd` (weight
    WORKDAY_WEIGHT) and the other labelled pairs, and how many pairs reached the trees; the
    parameters carry no calibration yet."""
    filler = learn_filler([(a, s) for a, s, label in wd if label == 1])
    no_trees = {"baseline": 0.0, "roots": [0], "feature": [0], "threshold": [0.0],
                "left": [-1], "right": [-1], "value": [0.0]}  # fmt: skip
    blank = {
        "features": list(FEATURES), "filler": filler, "trees": no_trees,
        "calibration": [{"budget": 1.0, "threshold": 1.0}],
    }  # fmt: skip
    judge = GateModel(blank)

    xs: list[list[float]] = []
    ys: list[int] = []
    ws: list[float] = []
    for pairs, weight in ((wd, WORKDAY_WEIGHT), *((o, 1.0) for o in others)):
        for asked, stored, label in pairs:
            if judge.assess(asked, stored).reason is not None:
                continue
            # The pair as written, also where the gate scores a reading of it (a topic put in
            # place, a possessive unfolded). Fitting on the readings instead, December 3 2026,
            # served fewer paraphrases at the 0.1% budget: held out within workday_dev's
            # tuning split 219 of 400 against 220, Quora's and PAWS's calibration halves 8.8%
            # and 17.9% against 9.2% and 19.8%.
            # The turn as the second look reads it against this stored question
            # (text/respelling.py: misspelt words, a repository's owner); unlike the readings
            # above, that is what the trees are given when the gate serves.
            reading = respelled(asked, stored)
            xs.append(features(reading, stored, align(reading, stored), filler))
            ys.append(label)
            ws.append(weight)
    trees = fit_trees(np.array(xs), np.array(ys, float), np.array(ws), shape)
    params = {
        "features": list(FEATURES),
        "filler": filler,
        "trees": trees,
        "trees_shape": shape,
        "calibration": [{"budget": 1.0, "threshold": 1.0}],
    }
    return params, len(xs)


def turn_count(scored: list[Scored]) -> int:
    """How many turns a calibration set's pairs are (a pair alone is a turn)."""
    return len({_turn_of(i, row) for i, row in enumerate(scored)})


def within_budget(added: float, turns: int, budget: float) -> bool:
    """Whether `added` false hits per turn, measured on `turns` calibration turns at the
    threshold being chosen, keep new turns within the budget.

    The threshold is chosen on these very turns, so the rate on new ones runs above the rate
    measured (the lowest threshold that passes is the one whose measured errors happened to
    fall low). Counting one false hit more, (k + 1) / (n + 1) <= budget bounds the expected
    rate on new turns drawn like these (conformal risk control, Angelopoulos et al. 2022, for
    a loss in [0, 1]). A set too small for even k = 0 to meet that (n + 1 < 1 / budget: the
    workday calibrate thirds' 846 turns at 0.1%) can promise nothing at that budget alone; it
    allows no false hit of its own there, and the larger sets beside it carry the bound."""
    false_hits = round(added * turns)
    if (turns + 1) * budget < 1:
        return false_hits == 0
    return (false_hits + 1) / (turns + 1) <= budget


def lowest_threshold(sets: list[list[Scored]], budget: float) -> float:
    """The lowest threshold on the grid that keeps each set's added false hits within the
    budget (within_budget), or 1.01 (the second look never serves) when none does."""
    turns = [turn_count(s) for s in sets]
    within = (
        t
        for t in THRESHOLDS
        if all(
            within_budget(rates(s, dict.fromkeys(FORMS, t))[2], n, budget)
            for s, n in zip(sets, turns, strict=True)
        )
    )
    return next(within, 1.01)


def calibrate(scored: dict[str, list[Scored]]) -> list[dict[str, Any]]:
    """For each budget and each form of stored text, the lowest threshold that keeps every
    calibration set's added false hits among its pairs of that form within the budget; then a
    set's false hits as a whole stay within it too. Above 1.0 the second look never serves (the
    strict test alone may already spend the budget).

    The forms are calibrated apart because the sets differ in kind: PAWS-Wiki's sentences,
    every one a statement, are word swaps built to look alike, and with one threshold for all
    its few highest-scoring negatives set the threshold for questions as well, which are what a
    cache stores. Held out within workday_dev's tuning split (paraphrases served at the 0.1% /
    0.2% / 0.5% budgets, of 400; near misses in brackets, of 300), December 4 2026: 225 / 243 /
    261 (0 / 1 / 2) with the forms apart, 220 / 239 / 258 (0 / 0 / 2) with one threshold.
    Setting the questions that name an identifier or a number apart as a third form served 163
    / 206 / 254: Quora's such questions ("iPhone 7", "Windows 10", "JEE 2016") have more
    high-scoring negatives than the rest (0.987 and 0.991 at 0.1% in the two folds, against
    0.958 and 0.948 for the other questions), and 104 of workday_dev's 150 claims are such."""
    calibration = []
    of_form = {
        name: {form: rows for form in FORMS if (rows := [r for r in pairs if r[3] == form])}
        for name, pairs in scored.items()
    }
    for budget in BUDGETS:
        # What each set alone allows, for each form it holds. A set's added false hits only
        # fall as the threshold rises, so the lowest threshold that keeps every set within the
        # budget is the highest of these, and the card can say which set sets it.
        alone = {
            name: {form: lowest_threshold([rows], budget) for form, rows in forms.items()}
            for name, forms in of_form.items()
        }
        thresholds: dict[Form, float] = {}
        for form in FORMS:
            own = [allowed[form] for allowed in alone.values() if form in allowed]
            # No calibration pair of this form: it gets what every pair together allows.
            thresholds[form] = max(own) if own else lowest_threshold(list(scored.values()), budget)
        measured = {}
        for name, pairs in scored.items():
            recall, false, added = rates(pairs, thresholds)
            measured[name] = {
                "recall": round(recall, 4),
                "false_hit_rate": round(false, 4),
                "added_false_hit_rate": round(added, 4),
                "pairs": len(pairs),
                "turns": turn_count(pairs),
                "questions": sum(1 for row in pairs if row[3] == "question"),
                "threshold_alone": alone[name],
            }
        calibration.append(
            {
                "budget": budget,
                "threshold": thresholds["question"],
                "statement_threshold": thresholds["statement"],
                "measured": measured,
            }
        )
    return calibration


#: A calibration set: its pairs and, when several pairs are one turn's, each pair's turn.
CalibrationSet = tuple[list[tuple[str, str, int]], list[int] | None]


def train_files(folder: Path) -> list[Path]:
    """The workday training files (workday_train_a.jsonl ...), in name order."""
    return sorted(folder.glob("workday_train_*.jsonl"))


def in_domain_sets(
    files: list[Path],
) -> tuple[list[tuple[str, str, int]], CalibrationSet, dict[str, tuple[int, int]]]:
    """From the workday training files: the fit thirds' pairs (as workday_pairs makes them),
    and the calibrate thirds as turns of a store: each calibrate turn (paraphrases, near misses
    and unrelated turns) against its own claim and its four nearest other claims of the fit and
    calibrate thirds of its file. The test thirds are not read. Also each file's (fit pairs,
    calibration pairs)."""
    fit: list[tuple[str, str, int]] = []
    pairs: list[tuple[str, str, int]] = []
    turns: list[int] = []
    counts: dict[str, tuple[int, int]] = {}
    for file in files:
        thirds = workday_thirds(file)
        fit_claims, fit_turns = thirds["fit"]
        fitted = workday_pairs(fit_claims, fit_turns)
        fit += fitted
        cal_claims, cal_turns = thirds["calibrate"]
        rows, owners = workday_turn_pairs({**fit_claims, **cal_claims}, cal_turns)
        offset = (turns[-1] + 1) if turns else 0
        pairs += rows
        turns += [offset + owner for owner in owners]
        counts[file.name] = (len(fitted), len(rows))
    return fit, (pairs, turns), counts


def cross_validate(
    claims: dict[str, dict[str, Any]],
    turns: list[dict[str, Any]],
    others: list[list[tuple[str, str, int]]],
    calibration_sets: dict[str, CalibrationSet],
    shapes: list[dict[str, float]],
    train_fit: list[tuple[str, str, int]],
) -> None:
    """Choose the trees' shape without the test split: fit on the tuning claims of one parity,
    calibrate as the shipped model is calibrated, and count what the other parity's turns get
    (each against its own claim, alone) at each budget; then the other way round."""
    for shape in shapes:
        served: Counter[float] = Counter()  # held-out paraphrases served, by budget
        false: Counter[float] = Counter()  # held-out near misses served, by budget
        hits = misses = 0
        for parity in (0, 1):
            fitted = {cid: c for cid, c in claims.items() if int(cid[1:]) % 2 == parity}
            held = [t for t in turns if t["claim"] is not None and t["claim"] not in fitted]
            own = [t for t in turns if t["claim"] is None or t["claim"] in fitted]
            wd = workday_pairs(fitted, own) + train_fit
            model = GateModel(fit_score(wd, others, shape)[0])
            points = calibrate(
                {n: isolated_scores(model, p, t) for n, (p, t) in calibration_sets.items()}
            )
            asked = [(t["text"], claims[t["claim"]]["question"], int(t["label"] == "hit"))
                     for t in held]  # fmt: skip
            scored = isolated_scores(model, asked)
            hits += sum(row[0] for row in scored)
            misses += sum(1 - row[0] for row in scored)
            for point in points:
                limits: dict[Form, float] = {
                    "question": point["threshold"],
                    "statement": point["statement_threshold"],
                }
                labels = [row[0] for row in scored if is_served(row, limits)]
                served[point["budget"]] += sum(labels)
                false[point["budget"]] += len(labels) - sum(labels)
        for budget in BUDGETS:
            print(
                f"{json.dumps(shape, sort_keys=True)} budget {budget:.3f}: held-out paraphrases "
                f"served {served[budget]}/{hits}, near misses served {false[budget]}/{misses}"
            )


#: How the pair model's probability joins the trees' (scoring.PairSpec), and which of the
#: alignment's refusals it may overrule (never a slot's). Chosen on the calibration sets, before
#: any test figure of the pair model was read (December 4 2026, the shipped pair model; the
#: workday_train calibrate thirds' recall / Quora's (a sample of 8,000 of its calibration half)
#: / PAWS's, at the 0.1% / 0.5% budgets, each policy calibrated as below): the trees alone
#: 16.4% / 7.9% / 16.2% and 30.6% / 8.7% / 23.3%; the larger of the two probabilities the
#: same (the trees' highest-scoring near misses set its threshold); their mean 35.4% / 8.4% /
#: 16.2% and 41.0% / 12.1% / 23.0%; the pair model alone, behind the slots and the alignment's
#: refusals, 33.1% / 8.4% / 16.6% and 38.5% / 11.2% / 18.1%; the pair model alone, behind the
#: slots only (it reads word order itself), 43.2% / 8.4% / 16.1% and 50.4% / 10.8% / 16.6%;
#: behind the slots and the refusal of two words that traded places, 43.0% / 8.4% / 16.1% and
#: 49.8% / 10.8% / 17.2% (kept: a change of roles, "the scheduler blocked the webserver" /
#: "the webserver blocked the scheduler", stays refused, and 1,078 of PAWS's 1,195 such pairs
#: are different). The float model it was quantized from served 39.4% / 8.2% / 16.0% at 0.1%.
#: The substitution refusal is kept as well (38.7% / 8.5% at 0.1% with word-order overruled
#: alone, December 4 2026): overruling it, the store benchmark's synthetic turns that change
#: one unknown word of a stored question and wrap it in a request ("Could you tell me where is
#: the oxtri miru defined in talinqua?" / "Where is the oxtri miru defined in linpol?") were
#: served 34 times in 200, the pair model scoring them 0.92-0.95; the alignment refuses every
#: such swap of a word for an unrelated one. A swap in which every word swapped is a common
#: English word ("locked" / "pinned", "retired" / "shut down", "availability" / "uptime" is
#: not one: "uptime" is not in the list) is overruled since December 5 2026: 55 of the fit
#: thirds' 340 paraphrases were refused as substitutions, nearly all synonyms the word
#: embedding did not pair. On the calibrate thirds, pair model scores as shipped and each
#: policy calibrated as below, at the 0.1% / 0.2% / 0.5% / 1% budgets: refusing every
#: substitution served 39.4% / 43.0% / 46.6% / 50.0%; overruling every substitution 45.3% /
#: 48.4% / 52.9% / 57.2%; overruling it where the swapped words are all in the common-word
#: list 43.5% / 46.6% / 50.9% / 54.9%, at the same 0.1% threshold and within 0.1 point of
#: Quora's recall each way. The list keeps names and made-up words refused, which the pair
#: model has no reading of.
#: Since December 6 2026, with the model reading each question without its frame (PAIR_READS),
#: the score is the mean of the trees' probability and the pair model's, and every
#: substitution between questions that share a subject is overruled. Read bare, the store
#: benchmark's request-wrapped swaps of made-up words score low (0.303 and 0.093 for the two
#: in tests/test_pair_model.py, 0.979 and 0.980 read whole): it was the frame's lift that
#: served them. On the calibrate thirds at the 0.1% budget, each policy recalibrated, by rules
#: written before each run (issue 37's note of December 6): the pair model alone 37.2%; the
#: mean 43.5%; the mean in log-odds 23.9%; the pair model alone reading the slots'
#: spelled-out shorthand 38.1%; alone, overruling every substitution, 39.0%; the mean,
#: overruling every substitution, 45.3%, and 49.6% once the lead-ins that narrow a question
#: were kept in the model's text (Quora's calibration recall 8.9% for the last three).
#: bench_store at 10,000 claims served one false hit in 5,000 turns with each mean.
PAIR_COMBINE = "mean"
PAIR_OVERRULES: list[str] = ["reordering", "common_swap", "substitution"]
#: The pair model reads each text without its frame (text/framing.py) since December 6 2026.
#: As written, it read a frame as a sign of a paraphrase: on the fit thirds and workday_dev's
#: tuning split, each turn against its own claim and its four nearest, wrapped in six frames
#: ("hey, ", "for the postmortem: ", "could you tell me ", ...), it served 181 of 36,786
#: framed negative pairs at the 0.1% threshold (0.49%), 0 of them unframed; read bare, with
#: the score and thresholds as shipped, 2. Unframed paraphrases scored alike both ways;
#: framed ones lost the frame's lift (170 -> 60 of 184 served by the model alone).
PAIR_READS = "bare"


#: What a run with --keep-trees takes from the shipped file: everything the fit made.
FITTED = ("features", "filler", "trees", "trees_shape", "fitted_on", "fitted_with")


def kept_fit(shipped: dict[str, Any]) -> dict[str, Any]:
    """The shipped file's filler and trees, and what they were fitted on and with, for a run
    that redoes only the calibration.

    A change to the slots changes the trees' training set only by the pairs it newly refuses,
    but the trees bin every measure by quantiles of their training set, so one pair fewer
    changes every tree: in December 2026 a new slot that refused one more negative fitting pair
    (and no paraphrase) moved the calibrate thirds by two turns at the 0.1% budget, as much as
    most slot changes move them. With the trees held, what is measured is the change itself:
    the pairs it refuses and the thresholds that follow. The trees are grown again only in a
    trial of their own. `trees_kept_since` names the commit whose file holds the last full
    fit: check it out and run this script without --keep-trees to grow the same trees."""
    if shipped.get("features") != list(FEATURES):
        raise SystemExit("the shipped trees read other measures than FEATURES: fit them again")
    committed = json.loads(_git("show", f"HEAD:{OUT.relative_to(ROOT)}"))
    if committed["trees"] != shipped["trees"]:
        raise SystemExit(f"the trees in {OUT.name} are not HEAD's: commit the fit to keep first")
    kept = {key: shipped[key] for key in FITTED}
    kept["calibration"] = [{"budget": 1.0, "threshold": 1.0}]  # redone by the caller
    kept["trees_kept_since"] = shipped.get("trees_kept_since") or _git("rev-parse", "HEAD")
    return kept


def _git(*args: str) -> str:
    """What git prints for `args` in this repository, without its last newline."""
    done = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=True)
    return done.stdout.rstrip("\n")


def pair_spec() -> dict[str, Any]:
    """The gate parameters' pair entry for the pair model shipped in the package."""
    from staffstore.gate.pair_model import default_pair_model

    return {
        "sha256": default_pair_model().sha256,
        "combine": PAIR_COMBINE,
        "overrules": PAIR_OVERRULES,
        "reads": PAIR_READS,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--eval", type=Path, default=ROOT.parent / "shared" / "eval")
    parser.add_argument(
        "--no-pair",
        action="store_true",
        help="calibrate the trees alone, without the shipped pair model",
    )
    parser.add_argument("--train", type=Path, default=ROOT.parent / "shared" / "train")
    parser.add_argument(
        "--cross-validate",
        metavar="SHAPES.json",
        help="instead of fitting: a JSON list of tree shapes to compare by cross-validation "
        'within the tuning split, e.g. \'[{"max_depth": 2}, {"max_depth": 3}]\'',
    )
    parser.add_argument(
        "--keep-trees",
        action="store_true",
        help="keep the shipped filler and trees and redo only the calibration: how a change to "
        "the slots is measured (kept_fit says why)",
    )
    args = parser.parse_args()
    workday_file = args.eval / "workday_dev.jsonl"
    paws_file = args.eval / "paws_wiki_dev.jsonl"
    stsb_file = args.train / "stsb_train.jsonl"
    qqp_file = args.train / "qqp_pool.jsonl.gz"

    claims, turns = workday_tuning(workday_file)
    paws = [(r["b"], r["a"], int(r["label"])) for r in read_jsonl(paws_file)]
    paws_ids = [r["id"] for r in read_jsonl(paws_file)]
    paws_fit = [p for p, i in zip(paws, paws_ids, strict=True) if half(i) == 0]
    paws_cal = [p for p, i in zip(paws, paws_ids, strict=True) if half(i) == 1]
    stsb = [(r["b"], r["a"], int(r["label"])) for r in read_jsonl(stsb_file)]
    qqp = read_jsonl(qqp_file)
    # The whole calibration half. A sample of 6,000 Quora pairs put the default budget on 6
    # false hits; the whole half (31,257 pairs; the fit still takes about a minute) puts it on
    # 31, and moved the thresholds by at most 0.005 (0.1%: 0.98 -> 0.981; 1%: 0.845 -> 0.85).
    # Held out within the tuning split it served 151 / 186 / 223 of 400 paraphrases at the
    # 0.1% / 0.2% / 0.5% budgets, against 147 / 191 / 224 with the sample: within the noise.
    qqp_cal = [(r["b"], r["a"], int(r["label"])) for r in qqp if half(r["id"]) == 0]
    random.Random(7).shuffle(paws_fit)
    paws_fit = paws_fit[:3000]
    # The engineering questions this product serves, written by other authors: their fit
    # thirds are fitted on beside workday_dev's tuning split, their calibrate thirds set the
    # thresholds beside the public halves (a budget calibrated on Quora and Wikipedia alone was
    # exceeded three to nine times on such questions), their test thirds are never read here.
    trains = train_files(args.train)
    if not trains:
        raise SystemExit(f"no workday_train_*.jsonl in {args.train}")
    train_fit, in_domain, train_counts = in_domain_sets(trains)
    calibration_sets: dict[str, CalibrationSet] = {
        "qqp_pool calibration half": (qqp_cal, None),
        "paws_wiki_dev calibration half": (paws_cal, None),
        "workday_train calibrate thirds": in_domain,
    }
    if args.cross_validate:
        shapes = [{**TREES, **shape} for shape in json.loads(args.cross_validate)]
        cross_validate(claims, turns, [stsb, paws_fit], calibration_sets, shapes, train_fit)
        return

    dev_pairs = workday_pairs(claims, turns)
    if args.keep_trees:
        params = kept_fit(json.loads(OUT.read_text(encoding="utf-8")))
    else:
        params, scored_pairs = fit_score(dev_pairs + train_fit, [stsb, paws_fit], TREES)
        params["fitted_on"] = {
            "workday_dev.jsonl tuning split (D001-D100, odd unrelated turns)": {
                "sha256": sha256(workday_file), "pairs": len(dev_pairs)},
            **{
                f"{file.name} fit third (sha256(claim id) % 3 == 0)": {
                    "sha256": sha256(file), "pairs": train_counts[file.name][0]}
                for file in trains
            },
            "stsb_train.jsonl": {"sha256": sha256(stsb_file), "pairs": len(stsb)},
            "paws_wiki_dev.jsonl fitting half (first 3000 after a seeded shuffle)": {
                "sha256": sha256(paws_file), "pairs": len(paws_fit)},
            "scored_pairs": scored_pairs,
        }  # fmt: skip
        # Another release of these grows other trees from the same data and code (scikit-learn
        # 1.9.1 with numpy 2.4.6 did not reproduce the file an earlier set fitted): name them.
        params["fitted_with"] = {
            name: version(name) for name in ("scikit-learn", "numpy", "wordllama", "tokenizers")
        }
    if not args.no_pair:
        params["pair"] = pair_spec()
    model = GateModel(params)
    calibration = calibrate(
        {n: isolated_scores(model, p, t) for n, (p, t) in calibration_sets.items()}
    )
    params["calibration"] = calibration
    params["calibrated_on"] = {
        "qqp_pool.jsonl.gz calibration half (sha256(id) even)": {
            "sha256": sha256(qqp_file), "pairs": len(qqp_cal)},
        "paws_wiki_dev.jsonl calibration half (sha256(id) odd)": {
            "sha256": sha256(paws_file), "pairs": len(paws_cal)},
        **{
            f"{file.name} calibrate third (sha256(claim id) % 3 == 1), each turn against its "
            "own claim and its 4 nearest": {
                "sha256": sha256(file), "pairs": train_counts[file.name][1]}
            for file in trains
        },
        "workday_train calibrate thirds, turns": len(set(in_domain[1] or [])),
    }  # fmt: skip
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(params, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    for point in calibration:
        print(point["budget"], point["threshold"], point["measured"])
    print(f"-> {OUT}")


if __name__ == "__main__":
    main()
