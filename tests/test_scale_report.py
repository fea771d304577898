"""The proxy-at-scale tables read a p99.9's confidence interval and judge its target by it
(replays/scale_report.py)."""

from __future__ import annotations

from typing import Any

from staffstore.replays.scale_report import (
    interval_text,
    open_rows,
    shown_by_interval,
    target_rows,
)


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


def _latency(p50: float, count: int, offered: float) -> dict[str, Any]:
    return {
        "p50_ms": p50, "p99_ms": 2 * p50, "p999_ms": 3 * p50, "max_ms": 4 * p50,
        "count": count, "offered_per_second": offered,
        "service": {"p999_ms": 3 * p50}, "send_lag_ms": {"p99": 0.5},
        "p999_interval_ms": {"confidence": 0.95, "low": 2 * p50, "high": 4 * p50},
    }  # fmt: skip


def test_the_open_loop_table_shows_the_long_series_of_hits_alone_in_a_row_of_its_own() -> None:
    hit, miss = _latency(1.0, 3_200, 200), _latency(20.0, 400, 25)
    ledger = {
        "results": [
            {
                "claims": 100_000,
                "open_loop": {"clients": 50, "claim_hit": hit, "miss": miss},
                "open_loop_mixed": None,
                "open_loop_tail": {"clients": 50, "claim_hit": _latency(1.5, 10_000, 200)},
            }
        ]
    }
    first, tail = open_rows(ledger)
    assert first[1] == "50, 200 / 25, each alone"
    assert tail[1] == "50, 200 / -, hits alone (10,000 hits)"
    assert tail[2] == "1.50 / 3.00 / 4.50 / 6.00 ms" and tail[4] == "-"
    assert tail[-1] == "3.00 to 6.00 ms"
