"""tools/fit_gate.py's calibration: the budget -> threshold table the gate ships."""

from __future__ import annotations

import importlib.util
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
            "a": scored_set([0.995, 0.96, 0.96]),
            "b": scored_set([0.98, 0.98]),
        }
    )
    # At 0.1% of 1,000 pairs one added false hit is allowed: "a" alone would settle for 0.961,
    # "b" needs a threshold above its two at 0.98, the next on the grid (every 0.001 up here).
    assert point(table, 0.001)["threshold"] == pytest.approx(0.981)
    assert point(table, 0.001)["measured"]["a"]["added_false_hit_rate"] == pytest.approx(0.001)
    # At 0.5% both sets' false hits fit: the lowest threshold on the grid.
    assert point(table, 0.005)["threshold"] == pytest.approx(fit_gate.THRESHOLDS[0])
    assert point(table, 0.005)["measured"]["b"]["recall"] == pytest.approx(1.0)


def test_the_strict_tests_own_false_hits_do_not_spend_the_budget() -> None:
    table = fit_gate.calibrate({"a": scored_set([0.97], strict_false=40)})
    found = point(table, 0.001)
    assert found["threshold"] == pytest.approx(fit_gate.THRESHOLDS[0])
    assert found["measured"]["a"]["false_hit_rate"] == pytest.approx(0.041)
    assert found["measured"]["a"]["added_false_hit_rate"] == pytest.approx(0.001)


def test_a_budget_no_threshold_can_keep_turns_the_second_look_off() -> None:
    table = fit_gate.calibrate({"a": scored_set([1.0, 1.0])})
    assert point(table, 0.001)["threshold"] > 1.0
    assert point(table, 0.001)["measured"]["a"]["recall"] == pytest.approx(0.0)
    # Two in 1,000 is within 0.2%: then every score counts.
    assert point(table, 0.002)["threshold"] == pytest.approx(fit_gate.THRESHOLDS[0])


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
    assert found["statement_threshold"] == pytest.approx(0.991)
    # Each set stays within the budget, measured at the threshold of each of its pairs' form.
    assert found["measured"]["questions"]["added_false_hit_rate"] <= 0.001
    assert found["measured"]["statements"]["added_false_hit_rate"] <= 0.001
    assert found["measured"]["statements"]["questions"] == 0


def test_one_sets_pairs_of_a_form_are_held_to_the_budget_as_a_share_of_that_form() -> None:
    # 500 questions and 500 statements in one set: one added false hit is 0.1% of the whole
    # set but 0.2% of its questions, so the question threshold must leave it out.
    rows = scored_set([0.97], size=500) + scored_set([], size=500, form="statement")
    found = point(fit_gate.calibrate({"mixed": rows}), 0.001)
    assert found["threshold"] == pytest.approx(0.971)
    assert found["statement_threshold"] == pytest.approx(fit_gate.THRESHOLDS[0])


def test_a_form_no_set_holds_gets_the_threshold_all_pairs_allow() -> None:
    table = fit_gate.calibrate({"a": scored_set([0.98, 0.98])})
    found = point(table, 0.001)
    assert found["statement_threshold"] == found["threshold"] == pytest.approx(0.981)
