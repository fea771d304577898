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


def scored_set(negatives: list[float], *, strict_false: int = 0, size: int = 1000):
    """`size` pairs as (label, strict matched, probability): the given negatives the second
    look scored, `strict_false` negatives the strict test served, and positives at 0.9."""
    rows = [(0, False, p) for p in negatives]
    rows += [(0, True, 0.0)] * strict_false
    rows += [(1, False, 0.9)] * (size - len(rows))
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
