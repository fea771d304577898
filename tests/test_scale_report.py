"""The proxy-at-scale tables read a p99.9's confidence interval and judge its target by it
(replays/scale_report.py)."""

from __future__ import annotations

from typing import Any

from staffstore.replays.scale_report import interval_text, shown_by_interval, target_rows


def _interval(low: float | None, high: float | None) -> dict[str, Any]:
    return {"confidence": 0.95, "low": low, "high": high}


def test_a_target_is_shown_met_only_when_the_whole_interval_is_within_it() -> None:
    assert shown_by_interval(_interval(4.0, 9.5), 10.0) == "met"
    assert shown_by_interval(_interval(10.5, 30.0), 10.0) == "not met"
    assert shown_by_interval(_interval(10.5, None), 10.0) == "not met"
    # Too few requests for an upper bound, or an interval across the target: neither.
    assert shown_by_interval(_interval(4.0, None), 10.0) == "not shown"
    assert shown_by_interval(_interval(8.0, 12.0), 10.0) == "not shown"


def test_an_interval_reads_as_its_bounds() -> None:
    assert interval_text(_interval(8.123, 12.5)) == "8.12 to 12.50 ms"
    assert interval_text(_interval(8.0, None)) == "at least 8.00 ms"
    assert interval_text(_interval(None, 3.0)) == "at most 3.00 ms"
    assert interval_text(None) == "-"


def test_the_targets_table_adds_the_interval_s_verdicts_beside_the_p999_s() -> None:
    name = "claim-hit p99.9 <= 10 ms"
    ledger = {
        "results": [
            {"meets_targets": {name: True}, "p999_targets_by_interval": {name: "not shown"}},
            {"meets_targets": {name: False}, "p999_targets_by_interval": {name: "not met"}},
        ]
    }
    assert target_rows(ledger) == [
        [name, "met", "not met"],
        [f"{name}, by the p99.9's 95% interval", "not shown", "not met"],
    ]
    # A ledger written before the intervals has the first rows only.
    older = {"results": [{"meets_targets": {name: True}}]}
    assert target_rows(older) == [[name, "met"]]
