"""Charts and the results section, drawn from real ledgers written by quick replays.

The replays and a 20-pair evaluation run once per module into a temporary folder, through the
real gate and store; each test then states one fact about the charts, the report or the CLI.
"""

from __future__ import annotations

import asyncio
import json
import runpy
import shutil
from pathlib import Path
from typing import Any

import pytest
from cli_helpers import ok, one_line_error
from typer.testing import CliRunner, Result

from staffstore.cli import app
from staffstore.errors import InputError
from staffstore.replays import run_all
from staffstore.replays.charts import CHARTS, draw_charts
from staffstore.replays.pairs import run_pairs
from staffstore.replays.report import END, START, read_ledgers, results_markdown, splice_results

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
ROOT = Path(__file__).resolve().parent.parent

PAIRS = [
    ("What port does the api listen on?", "What port does the api listen on?", 1),
    ("How do I rotate the staging password?", "How do I rotate the staging password?", 1),
    ("Why is the nightly build slow?", "why is the nightly build so slow", 1),
    ("Which alerts paged on-call most last month?", "Which alerts paged on-call the most?", 1),
    ("What is the pool size on staging?", "What's the size of the pool on staging?", 1),
    ("How do I restart the ingest worker?", "Best way to restart the ingest worker?", 1),
    ("Where are the deploy logs kept?", "Where do we keep the deploy logs?", 1),
    ("Who owns the billing service?", "Who is the owner of the billing service?", 1),
    ("What does the retry policy of the mailer look like?", "How does the mailer retry?", 1),
    ("How large is the cache on production?", "How large is the production cache?", 1),
    ("What port does the api listen on?", "What port does the admin panel listen on?", 0),
    ("How do I rotate the staging password?", "How do I rotate the production certificate?", 0),
    ("Why is the nightly build slow?", "Why is the nightly build failing?", 0),
    ("Who owns the billing service?", "Who owns the search service?", 0),
    ("Where are the deploy logs kept?", "Where is the holiday calendar?", 0),
    ("How do I restart the ingest worker?", "How do I scale the ingest worker?", 0),
    ("What is the pool size on staging?", "What is the disk size on staging?", 0),
    ("How large is the cache on production?", "What colour is the logo?", 0),
    ("Flights from Paris to Rome", "Flights from Rome to Paris", 0),
    ("Which team runs the on-call rota?", "When does the on-call rota change?", 0),
]


def write_pairs(path: Path) -> Path:
    lines = [
        json.dumps({"a": a, "b": b, "label": label, "source": "tiny", "id": str(number)})
        for number, (a, b, label) in enumerate(PAIRS, start=1)
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def ledgers(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder holding every quick replay's ledger and one pairs ledger."""
    folder = tmp_path_factory.mktemp("ledgers")
    pairs = write_pairs(tmp_path_factory.mktemp("eval") / "tiny.jsonl")
    asyncio.run(run_all(folder, quick=True))
    asyncio.run(run_pairs(pairs, folder / "pairs-tiny-ledger.json"))
    return folder


@pytest.fixture(scope="module")
def drawn(ledgers: Path, tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    return draw_charts(ledgers, tmp_path_factory.mktemp("charts"))


def load(folder: Path, name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((folder / f"{name}-ledger.json").read_text("utf-8"))
    return data


def assert_png(path: Path) -> None:
    data = path.read_bytes()
    assert len(data) > 1000 and data.startswith(PNG_MAGIC), path


def copy_ledgers(source: Path, target: Path, *names: str) -> Path:
    target.mkdir()
    for name in names:
        shutil.copy(source / f"{name}-ledger.json", target)
    return target


# -- charts ------------------------------------------------------------------------------------


def test_every_chart_is_drawn_as_a_valid_png(drawn: list[Path]) -> None:
    assert [path.name for path in drawn] == list(CHARTS)
    for path in drawn:
        assert_png(path)


def test_a_chart_whose_ledger_is_missing_is_skipped_with_a_note(
    ledgers: Path, tmp_path: Path
) -> None:
    only_workday = copy_ledgers(ledgers, tmp_path / "ledgers", "workday")
    notes: list[str] = []
    written = draw_charts(only_workday, tmp_path / "charts", note=notes.append)
    assert [path.name for path in written] == ["avoidance_vs_novel.png", "workday_windows.png"]
    assert [text.split(":")[0] for text in notes] == [
        "skipped hostile_mix.png",
        "skipped pairs_recall_vs_false_hits.png",
        "skipped jobs_decisions.png",
        "skipped gate_budgets.png",
        "skipped long_session.png",
    ]


def test_a_damaged_ledger_is_an_input_error_that_names_it(tmp_path: Path) -> None:
    (tmp_path / "hostile-ledger.json").write_text('{"name": "hostile"}', encoding="utf-8")
    with pytest.raises(InputError, match=r"hostile-ledger\.json is not a ledger"):
        draw_charts(tmp_path, tmp_path / "charts")


def test_no_ledgers_at_all_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no ledgers in"):
        draw_charts(tmp_path, tmp_path / "charts")


# -- report ------------------------------------------------------------------------------------


def test_report_rows_hold_the_replay_figures_of_the_ledgers(ledgers: Path) -> None:
    text = results_markdown(read_ledgers(ledgers))
    for name in ("single", "hostile"):
        s = load(ledgers, name)["summary"]
        row = (
            f"| {name} (quick) | {s['turns']} | {s['hits']} | {s['avoidance']:.1%} | "
            f"{s['gold_hit_recall']:.1%} | {s['false_hits']} | {s['stale_hits']} | "
            f"{s['conflict_picks']} | {s['known_cost_usd']:.6f} |"
        )
        assert row in text
    for s in load(ledgers, "workday")["summaries"]:
        assert f"| workday, F={s['novel_fraction']:.0%} (quick) | {s['turns']} | " in text
        assert f"| {s['avoidance']:.1%} | {s['gold_hit_recall']:.1%} |" in text


def test_report_rows_hold_the_pairs_figures_of_the_ledger(ledgers: Path) -> None:
    text = results_markdown(read_ledgers(ledgers))
    ledger = load(ledgers, "pairs-tiny")
    for mode in ("shared", "isolated"):
        s = ledger["modes"][mode]["summary"]
        row = (
            f"| tiny.jsonl | {mode} | {s['queries']} | {s['recall']:.1%} | "
            f"{s['correct_hits']}/{s['positives']} | {s['false_hits']} | "
            f"{s['false_hit_rate']:.2%} | {s['identical_text_hits']} | "
            f"{s['labelled_paraphrase_hits']} | {s['false_hits_strict']} | "
            f"{s['false_hit_rate_strict']:.2%} |"
        )
        assert row in text


def test_report_shows_the_hostile_mix_of_the_ledger(ledgers: Path) -> None:
    text = results_markdown(read_ledgers(ledgers))
    for name, mix in load(ledgers, "hostile")["categories"].items():
        assert (
            f"| {name.replace('_', ' ')} | {' or '.join(mix['gold'])} | {mix['turns']} | "
            f"{mix['hits']} | {mix['misses']} | {mix['false_hits']} | {mix['stale_hits']} |"
        ) in text


def test_splicing_twice_gives_the_text_of_splicing_once() -> None:
    once = splice_results("# staffstore\n\nIntro.\n", "## Results\n\nA\n")
    assert once == f"# staffstore\n\nIntro.\n\n{START}\n## Results\n\nA\n{END}\n"
    assert splice_results(once, "## Results\n\nA\n") == once


def test_splicing_replaces_only_the_block() -> None:
    text = f"before\n{START}\nold\n{END}\nafter\n"
    assert splice_results(text, "new") == f"before\n{START}\nnew\n{END}\nafter\n"


def test_markers_out_of_order_are_an_input_error() -> None:
    with pytest.raises(InputError, match="markers are damaged"):
        splice_results(f"{END}\n{START}\n", "new")


# -- the command line --------------------------------------------------------------------------


def invoke(*args: str) -> Result:
    return CliRunner().invoke(app, list(args))


def test_cli_replay_single_prints_the_summary_it_writes(tmp_path: Path) -> None:
    result = ok(invoke("replay", "single", "--quick", "--out", str(tmp_path)))
    s = load(tmp_path, "single")["summary"]
    header, row = result.stdout.splitlines()
    assert header.split() == [
        "NAME", "TURNS", "HITS", "AVOIDANCE", "GOLD_HIT_RECALL", "FALSE_HITS", "STALE_HITS",
        "CONFLICT_PICKS", "KNOWN_COST_USD",
    ]  # fmt: skip
    assert row.split() == [
        "single", "(quick)", str(s["turns"]), str(s["hits"]), f"{s['avoidance']:.1%}",
        f"{s['gold_hit_recall']:.1%}", str(s["false_hits"]), str(s["stale_hits"]),
        str(s["conflict_picks"]), f"{s['known_cost_usd']:.6f}",
    ]  # fmt: skip


def test_cli_replay_all_writes_a_pairs_ledger_for_each_pairs_file(tmp_path: Path) -> None:
    (tmp_path / "eval").mkdir()
    write_pairs(tmp_path / "eval" / "tiny.jsonl")
    out = tmp_path / "ledgers"
    args = ["replay", "all", "--quick", "--out", str(out), "--pairs-dir", str(tmp_path / "eval")]
    # An empty $STAFFSTORE_EVAL_DATA: no Quora files, whatever lies beside this checkout.
    env = {"STAFFSTORE_EVAL_DATA": str(tmp_path / "eval")}
    result = ok(CliRunner().invoke(app, args, env=env))
    assert sorted(path.name for path in out.glob("*-ledger.json")) == [
        "hostile-ledger.json", "jobs-ledger.json", "kept-paraphrase-ledger.json",
        "long-session-ledger.json", "pairs-tiny-ledger.json", "single-ledger.json",
        "wakeups-ledger.json", "workday-ledger.json", "workflow-runs-ledger.json",
    ]  # fmt: skip
    assert [line.split()[0] for line in result.stdout.splitlines()] == [
        "NAME", "single", "workday,", "hostile", "NAME", "jobs", "NAME", "wakeups",
        "NAME", "workflow-runs", "workflow-runs", "NAME", "workflow-runs", "REPLAY",
        "long-session", "REPLAY", "kept-paraphrase", "FILE", "tiny.jsonl", "tiny.jsonl",
    ]  # fmt: skip


def test_cli_replay_pairs_prints_recall_and_false_hits(tmp_path: Path) -> None:
    pairs = write_pairs(tmp_path / "tiny.jsonl")
    out = tmp_path / "tiny-ledger.json"
    result = ok(invoke("replay", "pairs", str(pairs), "--isolated", "--out", str(out)))
    s = json.loads(out.read_text("utf-8"))["modes"]["isolated"]["summary"]
    assert list(json.loads(out.read_text("utf-8"))["modes"]) == ["isolated"]
    row = result.stdout.splitlines()[1].split()
    assert row[:4] == ["tiny.jsonl", "isolated", "20", f"{s['recall']:.1%}"]
    assert row[5:] == [
        str(s["false_hits"]), f"{s['false_hit_rate']:.2%}", str(s["identical_text_hits"]),
        str(s["labelled_paraphrase_hits"]), str(s["false_hits_strict"]),
        f"{s['false_hit_rate_strict']:.2%}",
    ]  # fmt: skip


def test_cli_replay_pairs_of_a_missing_file_is_one_line_error(tmp_path: Path) -> None:
    assert "no pairs file" in one_line_error(invoke("replay", "pairs", str(tmp_path / "x.jsonl")))


def test_cli_charts_prints_the_pngs_it_draws(ledgers: Path, tmp_path: Path) -> None:
    result = ok(invoke("charts", "--ledgers", str(ledgers), "--out", str(tmp_path)))
    assert result.stdout.splitlines() == [str(tmp_path / name) for name in CHARTS]
    for name in CHARTS:
        assert_png(tmp_path / name)


def test_cli_charts_without_ledgers_is_one_line_error(tmp_path: Path) -> None:
    line = one_line_error(invoke("charts", "--ledgers", str(tmp_path / "none")))
    assert "no ledgers folder" in line


def test_cli_report_fills_the_readme_once(ledgers: Path, tmp_path: Path) -> None:
    readme = tmp_path / "README.md"
    readme.write_text("# staffstore\n", encoding="utf-8")
    args = ["report", "--ledgers", str(ledgers), "--readme", str(readme)]
    first = ok(invoke(*args, "--charts", str(tmp_path / "no-charts")))
    text = readme.read_text("utf-8")
    assert text == f"# staffstore\n\n{START}\n{first.stdout.strip()}\n{END}\n"
    assert "updated" in first.stderr
    second = ok(invoke(*args, "--charts", str(tmp_path / "no-charts")))
    assert "unchanged" in second.stderr
    assert readme.read_text("utf-8") == text


def test_cli_report_links_the_charts_relative_to_the_readme(
    ledgers: Path, drawn: list[Path], tmp_path: Path
) -> None:
    charts = tmp_path / "charts"
    shutil.copytree(drawn[0].parent, charts)
    readme = tmp_path / "README.md"
    readme.write_text("", encoding="utf-8")
    ok(
        invoke(
            "report", "--ledgers", str(ledgers), "--readme", str(readme), "--charts", str(charts)
        )
    )
    text = readme.read_text("utf-8")
    for name, title in CHARTS.items():
        assert f"![{title}](charts/{name})" in text


def test_render_script_draws_the_charts_of_the_ledgers_given(
    ledgers: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    hostile = copy_ledgers(ledgers, tmp_path / "ledgers", "hostile")
    script = runpy.run_path(str(ROOT / "charts" / "render.py"), run_name="render")
    assert script["main"](["--ledgers", str(hostile), "--out", str(tmp_path)]) == 0
    assert capsys.readouterr().out.splitlines() == [str(tmp_path / "hostile_mix.png")]


def test_report_quotes_the_store_benchmark_ledger(tmp_path: Path) -> None:
    folder = tmp_path / "bench-ledgers"
    folder.mkdir()
    (folder / "bench-store.json").write_text(
        json.dumps(
            {
                "results": [
                    {
                        "claims": 100000,
                        "import_seconds": 12.345,
                        "import_peak_rss_mib": 250.4,
                        "import_helper_peak_rss_mib": 87.2,
                        "query_first_ms": {"p50": 1.234, "p99": 4.321},
                        "full_collections": {"count": 3, "max_ms": 211.6},
                        "batch_jsonl": {"queries_per_second": 777.0},
                        "strict_hit_ms": {"count": 2500, "p50": 0.526, "p99": 1.1},
                        "hit_ms": {"count": 2500, "p50": 0.53, "p99": 1.234},
                        "pair_model_turn_ms": {"count": 82, "p50": 5.0, "p99": 9.951},
                        "other_turn_ms": {"count": 4918, "p50": 0.9, "p99": 3.456},
                        "gc_pauses": {"all": {"count": 900, "max_ms": 2.34, "p99_ms": 1.0}},
                        "queries": 5000,
                        "false_hits": {"count": 7, "first": []},
                    }
                ],
                "pair_model_ms": {"count": 1000, "p50": 3.69, "p99": 4.461},
                "targets": {
                    "query_first_p99_ms_at_100k": 2.0,
                    "gc_pause_ms_at_100k": 5.0,
                    "hit_p99_ms_at_100k": 2.0,
                },
                "meets_targets": {
                    "query_first_p99_ms_at_100k": False,
                    "gc_pause_ms_at_100k": True,
                    "hit_p99_ms_at_100k": True,
                },
            }
        ),
        encoding="utf-8",
    )
    # read_ledgers wants at least one replay or pairs ledger beside the benchmarks
    (folder / "pairs-x-ledger.json").write_text(
        json.dumps({"file": "x.jsonl", "modes": {}}), encoding="utf-8"
    )
    text = results_markdown(read_ledgers(folder))
    row = (
        "| 100,000 | 12.35 s | 250 MiB + 87 MiB helper | 1.23 ms | 4.32 ms | 0.53 ms | 1.23 ms |"
        " 9.95 ms | 3.46 ms | 7 of 5,000 |"
        " 3; longest 2.3 ms | 777/s |"
    )
    assert row in text
    assert "The pair model alone, one pair: p50 3.69 ms, p99 4.46 ms" in text
    assert (
        "Targets (issue 41): query_first p99 at 100,000 claims <= 2 ms: not met;"
        " no collection pause over 5 ms at 100,000: met;"
        " a hit's query_first p99 at 100,000 <= 2 ms: met." in text
    )
    assert "The hit targets are the issue's rule for a learned scorer" in text


def test_a_store_ledger_written_before_the_paths_were_timed_apart_shows_dashes(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "old-bench"
    folder.mkdir()
    result = {
        "claims": 1000, "import_seconds": 0.1, "query_first_ms": {"p50": 1.0, "p99": 2.0},
        "full_collections": {"count": 0, "max_ms": 0.0}, "batch_jsonl": {"queries_per_second": 9.0},
    }  # fmt: skip
    # measured before imports had a keying helper, and an import that keyed its claims itself
    later = {**result, "claims": 2000, "import_peak_rss_mib": 75.2}
    keyed_here = {**result, "claims": 3000, "import_peak_rss_mib": 80.0}
    keyed_here["import_helper_peak_rss_mib"] = 0.0
    (folder / "bench-store.json").write_text(
        json.dumps({"results": [result, later, keyed_here]}), encoding="utf-8"
    )
    (folder / "pairs-x-ledger.json").write_text(
        json.dumps({"file": "x.jsonl", "modes": {}}), encoding="utf-8"
    )
    text = results_markdown(read_ledgers(folder))
    assert (
        "| 1,000 | 0.10 s | - | 1.00 ms | 2.00 ms | - | - | - | - | - | 0; longest - | 9/s |"
        in text
    )
    assert "| 2,000 | 0.10 s | 75 MiB | 1.00 ms |" in text
    assert "| 3,000 | 0.10 s | 80 MiB | 1.00 ms |" in text
    assert "Targets (issue 41)" not in text
    assert "The hit targets" not in text
    assert "The pair model alone" not in text


def test_report_quotes_the_proxy_benchmark_ledger(tmp_path: Path) -> None:
    folder = tmp_path / "bench-ledgers"
    folder.mkdir()
    written = json.loads((ROOT / "ledgers" / "bench-proxy.json").read_text(encoding="utf-8"))
    (folder / "bench-proxy.json").write_text(json.dumps(written), encoding="utf-8")
    (folder / "pairs-x-ledger.json").write_text(
        json.dumps({"file": "x.jsonl", "modes": {}}), encoding="utf-8"
    )
    text = results_markdown(read_ledgers(folder))
    miss = written["miss_with_lookup"]
    assert (
        f"| miss through the proxy (with lookup) | {miss['proxy_p50_ms']:.2f} ms "
        f"| {miss['proxy_p99_ms']:.2f} ms |"
    ) in text
    assert f"| miss overhead (with lookup) | {miss['overhead_p50_ms']:.2f} ms |  |" in text
    assert f"| claim hit | {written['hit_claim']['p50_ms']:.2f} ms |" in text


def _latency(p50: float, p99: float, p999: float, worst: float, rate: float) -> dict[str, float]:
    return {"p50_ms": p50, "p99_ms": p99, "p999_ms": p999, "max_ms": worst, "per_second": rate}


def _open_hits(latency: dict[str, float], service_p999: float, lag_p99: float) -> dict[str, Any]:
    """The open loop's hits at 200 a second: their latency, from the write and the send lag."""
    return {
        **latency,
        "offered_per_second": 200.0,
        "service": {"p999_ms": service_p999},
        "send_lag_ms": {"p99": lag_p99},
    }


def _closed_loop() -> dict[str, dict[str, float]]:
    return {
        "claim_hit": _latency(1.234, 2.5, 9.876, 12.0, 700.0),
        "bare_starlette": _latency(0.31, 0.5, 0.9, 1.0, 3000.0),
        "miss": _latency(8.0, 20.0, 40.0, 41.0, 90.0),
        "direct_to_upstream": _latency(0.4, 0.8, 1.0, 1.1, 2500.0),
    }


def _bench_markdown(tmp_path: Path, name: str, ledger: dict[str, Any]) -> str:
    """The results' markdown from one benchmark's ledger, bench-`name`.json (and one pairs
    ledger, without which the report finds nothing to read)."""
    folder = tmp_path / "bench-ledgers"
    folder.mkdir()
    (folder / f"bench-{name}.json").write_text(json.dumps(ledger), encoding="utf-8")
    (folder / "pairs-x-ledger.json").write_text(
        json.dumps({"file": "x.jsonl", "modes": {}}), encoding="utf-8"
    )
    return results_markdown(read_ledgers(folder))


def _scale_markdown(tmp_path: Path, result: dict[str, Any]) -> str:
    """The results' markdown from a proxy-at-scale ledger of one size."""
    return _bench_markdown(
        tmp_path, "proxy-scale", {"benchmark": "proxy-scale", "results": [result]}
    )


def _proxy_ledger(**extra: Any) -> dict[str, Any]:
    miss = {"proxy_p50_ms": 6.85, "proxy_p99_ms": 9.91, "overhead_p50_ms": 6.45}
    return {
        "benchmark": "proxy",
        "hit_claim": _latency(1.475, 3.349, 5.0, 6.0, 900.0),
        "hit_exact_repeat": _latency(1.285, 3.044, 4.0, 5.0, 1400.0),
        "bare_starlette": _latency(0.214, 0.358, 0.5, 0.6, 17000.0),
        "miss_with_lookup": miss,
        "miss_forward_only": {**miss, "overhead_p50_ms": 2.63},
        **extra,
    }


def test_report_says_how_much_of_a_miss_the_pair_model_took(tmp_path: Path) -> None:
    (tmp_path / "older").mkdir()
    (tmp_path / "newer").mkdir()
    ledger = _proxy_ledger()
    older = _bench_markdown(tmp_path / "older", "proxy", ledger)
    assert "pair model" not in older
    model = {"pairs_per_miss": 2.5, "model_ms_per_miss": 3.214}
    ledger["miss_with_lookup"] = {**ledger["miss_with_lookup"], "pair_model": model}
    text = _bench_markdown(tmp_path / "newer", "proxy", ledger)
    lines = text.splitlines()
    row = "| of which the gate's pair model, mean per miss (2.5 pairs) | 3.21 ms |  |"
    # Right under the overhead it is part of.
    assert lines[lines.index(row) - 1] == "| miss overhead (with lookup) | 6.45 ms |  |"


def test_report_quotes_the_bare_app_that_commits_a_row_beside_the_proxy(tmp_path: Path) -> None:
    floor = _latency(0.617, 1.482, 2.0, 2.5, 1500.0)
    text = _bench_markdown(tmp_path, "proxy", _proxy_ledger(bare_starlette_committing_a_row=floor))
    assert "| bare starlette app | 0.21 ms | 0.36 ms |" in text
    assert (
        "| bare starlette app, committing a row to SQLite before it answers | 0.62 ms | 1.48 ms |"
    ) in text


def test_an_older_proxy_ledger_without_that_floor_still_reports(tmp_path: Path) -> None:
    text = _bench_markdown(tmp_path, "proxy", _proxy_ledger())
    assert "| claim hit | 1.48 ms | 3.35 ms |" in text
    assert "committing a row" not in text


def test_report_quotes_the_proxy_at_scale_ledger(tmp_path: Path) -> None:
    one = _closed_loop()
    result = {
        "claims": 1_000_000,
        "by_clients": {"1": one, "50": one},
        "database_mib": {"imported": 495.4, "after_series": 512.6},
        "proxy_startup_seconds": 3.25,
        "open_loop": {
            "clients": 50,
            "claim_hit": _open_hits(_latency(1.5, 4.0, 8.25, 9.5, 200.0), 7.5, 1.25),
            "bare_starlette": _latency(0.5, 1.0, 2.0, 2.5, 200.0),
            "miss": {**_latency(10.0, 30.0, 60.0, 70.0, 25.0), "offered_per_second": 25.0},
        },
        "open_loop_mixed": {
            "clients": 50,
            "miss_connections": 20,
            "claim_hit": _open_hits(_latency(2.5, 6.0, 12.5, 14.0, 200.0), 11.0, 1.5),
            "miss": {**_latency(12.0, 35.0, 65.0, 75.0, 25.0), "offered_per_second": 25.0},
        },
        "resident_mib": {
            "before_first_request": 250.2,
            "after_series": 330.0,
            "peak": 331.0,
            "split": {
                "before_first_request": {"anon": 180.4, "file": 69.8, "shmem": 0.0},
                "after_series": {"anon": 250.0, "file": 80.0, "shmem": 0.0},
            },
        },
        "chat_requests_to_proxy": 10_000,
        "gc_pauses": {
            "all": {"count": 40, "over_5_ms": 2, "longest_ms": {"over": 25.0, "at_most": 50.0}}
        },
        "meets_targets": {
            "claim-hit p99.9 <= 10 ms, 50 clients, open loop at 200/s": True,
            "resident memory (VmRSS) after 10,000 requests <= 100 MiB": False,
        },
    }
    text = _scale_markdown(tmp_path, result)
    assert (
        "| 1,000,000 | 50 | 1.23 / 2.50 / 9.88 / 12.00 ms | 0.31 / 0.90 ms "
        "| 8.00 / 20.00 / 40.00 ms | 0.40 / 0.80 ms | 700 / 90 |"
    ) in text
    assert (
        "| 1,000,000 | 50, 200 / 25, each alone | 1.50 / 4.00 / 8.25 / 9.50 ms | 0.50 / 2.00 ms "
        "| 10.00 / 30.00 / 60.00 / 70.00 ms | 7.50 ms, 1.25 ms |"
    ) in text
    assert (
        "| 1,000,000 | 50 + 20, 200 / 25, at once | 2.50 / 6.00 / 12.50 / 14.00 ms | - "
        "| 12.00 / 35.00 / 65.00 / 75.00 ms | 11.00 ms, 1.50 ms |"
    ) in text
    assert (
        "| 1,000,000 | 495 MiB / 513 MiB | 3.25 s | 250 MiB / 330 MiB after 10,000 requests "
        "| 180 / 70 / 0 -> 250 / 80 / 0 MiB | 40 (2, 25-50 ms) |"
    ) in text
    assert "| claim-hit p99.9 <= 10 ms, 50 clients, open loop at 200/s | met |" in text
    assert "| resident memory (VmRSS) after 10,000 requests <= 100 MiB | not met |" in text


def _closed_loop_only(by_clients: dict[str, Any]) -> dict[str, Any]:
    """A proxy-at-scale result of 100,000 claims as a ledger written before the open loop and
    the memory split were measured holds it."""
    return {
        "claims": 100_000,
        "by_clients": by_clients,
        "database_mib": {"imported": 49.6, "after_series": 51.0},
        "proxy_startup_seconds": 1.5,
        "resident_mib": {"before_first_request": 250.2, "after_series": 330.0, "peak": 331.0},
        "chat_requests_to_proxy": 10_000,
        "gc_pauses": {"all": {"count": 0, "over_5_ms": 0, "longest_ms": None}},
        "meets_targets": {},
    }


def test_report_shows_the_pair_model_s_share_of_a_miss_where_the_ledger_has_it(
    tmp_path: Path,
) -> None:
    one, many = _closed_loop(), _closed_loop()
    one["miss_pair_model"] = {
        "pairs_per_miss": 4.5,
        "model_ms_per_miss": 22.57,
        "miss_mean_ms": 36.36,
        "miss_mean_ms_less_model": 13.79,
    }
    text = _scale_markdown(tmp_path, _closed_loop_only({"1": one, "50": many}))
    assert "| 100,000 | 1 | 4.50 | 22.57 ms | 36.36 ms | 13.79 ms |" in text
    # The series without the figure (as an older ledger's) has no row.
    assert "| 100,000 | 50 | " not in text.split("pairs scored a miss")[1].split("\n\n")[0]


def test_report_reads_a_proxy_at_scale_ledger_without_the_open_loop(tmp_path: Path) -> None:
    # A ledger written before the open loop and the memory split were measured still reads.
    one = _closed_loop()
    text = _scale_markdown(tmp_path, _closed_loop_only({"1": one}))
    assert "Open loop" not in text
    assert "| 100,000 | 50 MiB / 51 MiB | 1.50 s | 250 MiB / 330 MiB after 10,000 requests " in text
    assert "| - -> - MiB | 0 (0, none) |" in text


def test_report_quotes_the_postgresql_benchmark_ledgers(tmp_path: Path) -> None:
    folder = tmp_path / "bench-ledgers"
    folder.mkdir()
    for name in ("bench-backends.json", "bench-replicas.json"):
        written = (ROOT / "ledgers" / name).read_text(encoding="utf-8")
        (folder / name).write_text(written, encoding="utf-8")
    (folder / "pairs-x-ledger.json").write_text(
        json.dumps({"file": "x.jsonl", "modes": {}}), encoding="utf-8"
    )
    text = results_markdown(read_ledgers(folder))
    backends = json.loads((folder / "bench-backends.json").read_text(encoding="utf-8"))
    for result in backends["results"]:
        postgres = result["query_first_ms"]["postgresql"]
        assert (
            f"| {result['claims']:,} | " in text
            and f"| {postgres['p50']:.2f} / {postgres['p99']:.2f} ms |" in text
            and f"| {result['decisions_differing']} of {result['queries']:,} |" in text
        )
    replicas = json.loads((folder / "bench-replicas.json").read_text(encoding="utf-8"))
    several = replicas["postgresql_replicas"]
    assert f"| {several['replicas']} replicas on one PostgreSQL | " in text
    assert f"| {several['crowd']['receipts']} of {several['crowd']['clients']} |" in text
