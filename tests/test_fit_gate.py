"""tools/fit_gate.py's calibration: the budget -> threshold table the gate ships."""

from __future__ import annotations

import copy
import importlib.util
import json
import re
from pathlib import Path

import pytest

_PATH = Path(__file__).resolve().parents[1] / "tools" / "fit_gate.py"
_spec = importlib.util.spec_from_file_location("fit_gate", _PATH)
assert _spec is not None and _spec.loader is not None
fit_gate = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(fit_gate)


def scored_set(
    negatives: list[float], *, strict_false: int = 0, size: int = 1000, form: str = "question"
):
    """`size` pairs as (label, strict matched, probability, form of the stored text): the given
    negatives the second look scored, `strict_false` negatives the strict test served, and
    positives at 0.9."""
    rows = [(0, False, p, form) for p in negatives]
    rows += [(0, True, 0.0, form)] * strict_false
    rows += [(1, False, 0.9, form)] * (size - len(rows))
    return rows


def point(table, budget):
    return next(p for p in table if p["budget"] == budget)


def test_the_threshold_is_the_lowest_that_keeps_every_set_within_its_budget() -> None:
    table = fit_gate.calibrate(
        {
            "a": scored_set([0.995, 0.96, 0.96], size=3000),
            "b": scored_set([0.98, 0.98, 0.98], size=3000),
        }
    )
    # At 0.1% of 3,000 turns two added false hits are allowed ((2 + 1) / 3001 <= 0.001): "a"
    # alone would settle for 0.961, "b" needs a threshold above its three at 0.98, the next on
    # the grid (every 0.001 up here).
    assert point(table, 0.001)["threshold"] == pytest.approx(0.981)
    assert point(table, 0.001)["measured"]["a"]["added_false_hit_rate"] == pytest.approx(
        1 / 3000, abs=1e-4
    )
    # At 0.5% every set's false hits fit: the lowest threshold on the grid.
    assert point(table, 0.005)["threshold"] == pytest.approx(fit_gate.THRESHOLDS[0])
    assert point(table, 0.005)["measured"]["b"]["recall"] == pytest.approx(1.0)


def test_each_set_records_the_threshold_it_would_allow_alone() -> None:
    table = fit_gate.calibrate(
        {
            "a": scored_set([0.995, 0.96, 0.96], size=3000),
            "b": scored_set([0.98, 0.98, 0.98], size=3000),
            "s": scored_set([0.97], size=3000, form="statement"),
        }
    )
    found = point(table, 0.001)
    alone = {name: m["threshold_alone"] for name, m in found["measured"].items()}
    # "a" allows two added false hits and leaves its 0.995 out; "b" must clear its three.
    assert alone["a"] == {"question": pytest.approx(0.961)}
    assert alone["b"] == {"question": pytest.approx(0.981)}
    assert alone["s"] == {"statement": pytest.approx(fit_gate.THRESHOLDS[0])}
    # The threshold of a form is the highest its sets allow alone: "b" sets it.
    assert found["threshold"] == max(alone["a"]["question"], alone["b"]["question"])


def test_a_set_counts_one_false_hit_more_than_it_measured() -> None:
    # One in 1,000 is 0.1%, but a threshold chosen on these turns runs above their rate on
    # new ones: (1 + 1) / 1001 is over the budget, so the threshold leaves it out.
    assert point(fit_gate.calibrate({"a": scored_set([0.97])}), 0.001)["threshold"] == (
        pytest.approx(0.971)
    )
    # At 0.5%, (4 + 1) / 1001 is within it and (5 + 1) / 1001 is not.
    four = point(fit_gate.calibrate({"a": scored_set([0.97] * 4)}), 0.005)
    assert four["threshold"] == pytest.approx(fit_gate.THRESHOLDS[0])
    five = point(fit_gate.calibrate({"a": scored_set([0.97] * 5)}), 0.005)
    assert five["threshold"] == pytest.approx(0.971)


def test_a_set_too_small_for_the_budget_allows_no_false_hit_of_its_own() -> None:
    # 500 turns cannot show a rate of 0.1% even with none: no false hit is allowed.
    table = fit_gate.calibrate({"a": scored_set([0.97], size=500)})
    assert point(table, 0.001)["threshold"] == pytest.approx(0.971)
    clean = fit_gate.calibrate({"a": scored_set([], size=500)})
    assert point(clean, 0.001)["threshold"] == pytest.approx(fit_gate.THRESHOLDS[0])


def test_the_strict_tests_own_false_hits_do_not_spend_the_budget() -> None:
    table = fit_gate.calibrate({"a": scored_set([0.97], strict_false=40, size=3000)})
    found = point(table, 0.001)
    assert found["threshold"] == pytest.approx(fit_gate.THRESHOLDS[0])
    assert found["measured"]["a"]["false_hit_rate"] == pytest.approx(41 / 3000, abs=1e-4)
    assert found["measured"]["a"]["added_false_hit_rate"] == pytest.approx(1 / 3000, abs=1e-4)


def test_a_budget_no_threshold_can_keep_turns_the_second_look_off() -> None:
    table = fit_gate.calibrate({"a": scored_set([1.0, 1.0])})
    assert point(table, 0.001)["threshold"] > 1.0
    assert point(table, 0.001)["measured"]["a"]["recall"] == pytest.approx(0.0)
    # Two in 1,000 is within 0.5% ((2 + 1) / 1001): then every score counts.
    assert point(table, 0.005)["threshold"] == pytest.approx(fit_gate.THRESHOLDS[0])


def test_questions_and_statements_are_calibrated_apart() -> None:
    # Statements whose negatives score high (as PAWS-Wiki's word swaps do) set the statement
    # threshold and leave the question threshold to the questions' own negatives.
    table = fit_gate.calibrate(
        {
            "questions": scored_set([0.97, 0.97]),
            "statements": scored_set([0.995, 0.99], form="statement"),
        }
    )
    found = point(table, 0.001)
    assert found["threshold"] == pytest.approx(0.971)
    assert found["statement_threshold"] == pytest.approx(0.996)
    # Each set stays within the budget, measured at the threshold of each of its pairs' form.
    assert found["measured"]["questions"]["added_false_hit_rate"] <= 0.001
    assert found["measured"]["statements"]["added_false_hit_rate"] <= 0.001
    assert found["measured"]["statements"]["questions"] == 0


def test_one_sets_pairs_of_a_form_are_held_to_the_budget_as_a_share_of_that_form() -> None:
    # 2,000 questions and 2,000 statements in one set: two added false hits are within 0.1% of
    # the whole set ((2 + 1) / 4001) but not of its questions ((2 + 1) / 2001), so the question
    # threshold must leave them out.
    rows = scored_set([0.97, 0.97], size=2000) + scored_set([], size=2000, form="statement")
    found = point(fit_gate.calibrate({"mixed": rows}), 0.001)
    assert found["threshold"] == pytest.approx(0.971)
    assert found["statement_threshold"] == pytest.approx(fit_gate.THRESHOLDS[0])


def test_a_form_no_set_holds_gets_the_threshold_all_pairs_allow() -> None:
    table = fit_gate.calibrate({"a": scored_set([0.98, 0.98])})
    found = point(table, 0.001)
    assert found["statement_threshold"] == found["threshold"] == pytest.approx(0.981)


_SHIPPED = json.loads(fit_gate.OUT.read_text(encoding="utf-8"))
_IN_GIT = pytest.mark.skipif(
    not (fit_gate.ROOT / ".git").exists(), reason="--keep-trees reads HEAD's file from git"
)


@_IN_GIT
def test_keeping_the_trees_takes_what_the_fit_made_and_names_the_commit_that_grew_them() -> None:
    kept = fit_gate.kept_fit(copy.deepcopy(_SHIPPED))
    for key in fit_gate.FITTED:
        assert kept[key] == _SHIPPED[key]
    # The calibration is the caller's to redo; the commit is kept from the file, or HEAD's.
    assert kept["calibration"] != _SHIPPED["calibration"]
    since = kept["trees_kept_since"]
    assert since == _SHIPPED.get("trees_kept_since", since)
    assert re.fullmatch(r"[0-9a-f]{40}", since)


@_IN_GIT
def test_trees_that_are_not_heads_or_read_other_measures_are_not_kept() -> None:
    regrown = copy.deepcopy(_SHIPPED)
    regrown["trees"]["value"][-1] += 0.5
    with pytest.raises(SystemExit, match="not HEAD's"):
        fit_gate.kept_fit(regrown)
    other_measures = copy.deepcopy(_SHIPPED)
    other_measures["features"] = other_measures["features"][:-1]
    with pytest.raises(SystemExit, match="other measures"):
        fit_gate.kept_fit(other_measures)
