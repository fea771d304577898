"""The proxy-at-scale benchmark's ledger (bench-proxy-scale.json) as the report reads it.

Five tables' rows, each read from the ledger as `benchmarks/bench_proxy_scale.py` wrote it:
the closed loop's latency and throughput by store size and number of clients (under many
clients, latency at saturation), the gate's pair model's share of those misses, the open loop's
latency at a fixed offered rate (on which the hits' p99.9 target is judged, by the p99.9 and
by the interval its sample bounds it by: replays/quantiles.py), what each size's
store and server weigh (resident memory split into anonymous, file-backed and shared), and
whether each of issue 41's targets held at each size. report.py lays them out.
"""

from __future__ import annotations

from typing import Any

LATENCY_HEADINGS = [
    "claims", "clients (closed loop)", "claim hit p50 / p99 / p99.9 / worst",
    "bare app p50 / p99.9", "miss p50 / p99 / p99.9", "straight to the upstream p50 / p99",
    "hits / misses per second",
]  # fmt: skip
LATENCY_ALIGN = "rrrrrrr"
OPEN_HEADINGS = [
    "claims", "connections, hits / misses offered a second",
    "claim hit p50 / p99 / p99.9 / worst", "bare app p50 / p99.9",
    "miss p50 / p99 / p99.9 / worst", "claim hit p99.9 from the write, client's send lag p99",
    "claim hit p99.9, 95% interval",
]  # fmt: skip
OPEN_ALIGN = "rrrrrrr"
PAIR_MODEL_HEADINGS = [
    "claims", "clients (closed loop)", "pairs scored a miss", "pair model a miss",
    "miss mean", "miss mean less the pair model",
]  # fmt: skip
PAIR_MODEL_ALIGN = "rrrrrr"
SIZE_HEADINGS = [
    "claims", "database imported / after", "proxy start-up",
    "resident memory (VmRSS) before / after", "anonymous / file / shared, before -> after",
    "collections (over 5 ms, longest)",
]  # fmt: skip
SIZE_ALIGN = "rrrrrr"


def _ms(figures: dict[str, Any], *keys: str) -> str:
    return " / ".join(f"{figures[key]:.2f}" for key in keys) + " ms"


def latency_rows(ledger: dict[str, Any]) -> list[list[str]]:
    """One row per store size and number of clients."""
    rows = []
    for result in ledger["results"]:
        for clients, f in result["by_clients"].items():
            rows.append(
                [
                    f"{result['claims']:,}",
                    clients,
                    _ms(f["claim_hit"], "p50_ms", "p99_ms", "p999_ms", "max_ms"),
                    _ms(f["bare_starlette"], "p50_ms", "p999_ms"),
                    _ms(f["miss"], "p50_ms", "p99_ms", "p999_ms"),
                    _ms(f["direct_to_upstream"], "p50_ms", "p99_ms"),
                    f"{f['claim_hit']['per_second']:,.0f} / {f['miss']['per_second']:,.0f}",
                ]
            )
    return rows


def pair_model_rows(ledger: dict[str, Any]) -> list[list[str]]:
    """One row per store size and number of clients: the gate's pair model's work for the
    closed loop's misses (none for a ledger written before the proxy counted it)."""
    rows = []
    for result in ledger["results"]:
        for clients, f in result["by_clients"].items():
            paired = f.get("miss_pair_model")
            if paired is None:
                continue
            rows.append(
                [
                    f"{result['claims']:,}",
                    clients,
                    f"{paired['pairs_per_miss']:.2f}",
                    f"{paired['model_ms_per_miss']:.2f} ms",
                    f"{paired['miss_mean_ms']:.2f} ms",
                    f"{paired['miss_mean_ms_less_model']:.2f} ms",
                ]
            )
    return rows


def open_rows(ledger: dict[str, Any]) -> list[list[str]]:
    """Rows per store size: the open loop's latency at its offered rates, hits and misses each
    alone and (where measured) both at once; none for a ledger written before the open loop
    was measured."""
    rows = []
    for result in ledger["results"]:
        alone, mixed = result.get("open_loop"), result.get("open_loop_mixed")
        tail = result.get("open_loop_tail")
        for when, f in (("each alone", alone), ("at once", mixed), ("hits alone", tail)):
            if f is None:
                continue
            hit, miss = f["claim_hit"], f.get("miss")
            bare = f.get("bare_starlette")
            # At once, the misses have connections of their own beside the hits'.
            apart = f" + {f['miss_connections']}" if "miss_connections" in f else ""
            offered = "-" if miss is None else f"{miss['offered_per_second']:g}"
            rows.append(
                [
                    f"{result['claims']:,}",
                    f"{f['clients']}{apart}, {hit['offered_per_second']:g} / {offered}, {when}"
                    + ("" if miss is not None else f" ({hit['count']:,} hits)"),
                    _ms(hit, "p50_ms", "p99_ms", "p999_ms", "max_ms"),
                    "-" if bare is None else _ms(bare, "p50_ms", "p999_ms"),
                    "-" if miss is None else _ms(miss, "p50_ms", "p99_ms", "p999_ms", "max_ms"),
                    f"{hit['service']['p999_ms']:.2f} ms, {hit['send_lag_ms']['p99']:.2f} ms",
                    interval_text(hit.get("p999_interval_ms")),
                ]
            )
    return rows


def shown_by_interval(interval: dict[str, Any], target: float) -> str:
    """Whether a p99.9's interval shows a target of at most `target` met ("met": its high end
    is within it), missed ("not met": its low end is above it), or neither ("not shown")."""
    if interval["high"] is not None and interval["high"] <= target:
        return "met"
    if interval["low"] is not None and interval["low"] > target:
        return "not met"
    return "not shown"


def interval_text(interval: dict[str, Any] | None) -> str:
    """A p99.9's confidence interval as the tables show it ("-" for a ledger without one)."""
    if interval is None:
        return "-"
    low, high = interval["low"], interval["high"]
    if low is None and high is None:
        return "unbounded"
    if high is None:  # too few requests for the slowest to bound it
        return f"at least {low:.2f} ms"
    if low is None:
        return f"at most {high:.2f} ms"
    return f"{low:.2f} to {high:.2f} ms"


def _mib(value: float | None) -> str:
    return "-" if value is None else f"{value:.0f} MiB"


def _parts(split: dict[str, float | None] | None) -> str:
    if split is None:
        return "-"
    return " / ".join(
        "-" if split[k] is None else f"{split[k]:.0f}" for k in ("anon", "file", "shmem")
    )


def longest_pause(bucket: dict[str, float | None] | None) -> str:
    """The histogram's bucket the longest pause fell in."""
    if bucket is None:
        return "none"
    if bucket["at_most"] is None:
        return f"over {bucket['over']:g} ms"
    return f"{bucket['over']:g}-{bucket['at_most']:g} ms"


def size_rows(ledger: dict[str, Any]) -> list[list[str]]:
    """One row per store size: its database, the proxy's start-up, memory and pauses."""
    rows = []
    for result in ledger["results"]:
        disk, memory, pauses = result["database_mib"], result["resident_mib"], result["gc_pauses"]
        every = pauses["all"]
        rows.append(
            [
                f"{result['claims']:,}",
                f"{_mib(disk['imported'])} / {_mib(disk['after_series'])}",
                f"{result['proxy_startup_seconds']:.2f} s",
                f"{_mib(memory['before_first_request'])} / {_mib(memory['after_series'])}"
                f" after {result['chat_requests_to_proxy']:,} requests",
                f"{_parts(memory.get('split', {}).get('before_first_request'))} ->"
                f" {_parts(memory.get('split', {}).get('after_series'))} MiB",
                f"{every['count']} ({every['over_5_ms']}, {longest_pause(every['longest_ms'])})",
            ]
        )
    return rows


def target_headings(ledger: dict[str, Any]) -> list[str]:
    return ["target", *(f"{result['claims']:,} claims" for result in ledger["results"])]


def _met(flag: bool | None) -> str:
    return "-" if flag is None else "met" if flag else "not met"


def target_rows(ledger: dict[str, Any]) -> list[list[str]]:
    """One row per target as the benchmark judged it, and whether it held at each size."""
    results = ledger["results"]
    names = list(results[0]["meets_targets"]) if results else []
    rows = [[name, *(_met(r["meets_targets"].get(name)) for r in results)] for name in names]
    # The p99.9 targets again, as the p99.9's interval shows them (ledgers since December 2026).
    shown = list(results[0].get("p999_targets_by_interval", {})) if results else []
    rows += [
        [
            f"{name}, by the p99.9's 95% interval",
            *(r.get("p999_targets_by_interval", {}).get(name, "-") for r in results),
        ]
        for name in shown
    ]
    return rows
