"""The gate's evaluations: the workday-dev replay, pair halves, Quora left out, the gate card.

Every file here is a tiny fixture written by the test; the stores are real SQLite files in
temporary folders, and the gate is the real one.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from cli_helpers import ok
from typer.testing import CliRunner, Result

from staffstore.cli import app
from staffstore.gate.scoring import DEFAULT_BUDGET, default_model
from staffstore.replays.gate_card import gate_card_markdown
from staffstore.replays.report import CARD_START, START, read_ledgers
from staffstore.replays.workday_dev import play_dev_set

CLAIMS = {
    "D001": "Why did the orders_daily load fail on March 4?",
    "D101": "Which team owns the globex/billing repository?",
}
# (id, claim, label, style, text)
TURNS = [
    # tuning split: D001's turns, and an odd unrelated turn
    ("U0001", "D001", "hit", "typo_lowercase", "why did the orders_daily load fail on march 4"),
    ("U0002", "D001", "hit", "synonyms", "What made the daily orders job blow up on 3/4?"),
    ("U0003", "D001", "miss", "changed_entity", CLAIMS["D101"]),  # served D101: a false hit
    ("U1051", None, "miss", "unrelated", "What colour is the company logo?"),
    # TEST split: D101's turns, and an even unrelated turn
    ("U0701", "D101", "hit", "filler", "Which team owns the globex/billing repository?"),
    ("U0702", "D101", "hit", "terse", CLAIMS["D001"]),  # served D001: another claim
    ("U0703", "D101", "miss", "changed_number", "Which team owned globex/billing in 2019?"),
    ("U1052", None, "miss", "unrelated", CLAIMS["D001"]),  # served D001: a false hit
]


def write_dev_set(path: Path) -> Path:
    lines = [
        {"kind": "claim", "id": cid, "question": q, "answer": f"answer {cid}", "agent": "a",
         "repository": None, "revision": None}
        for cid, q in CLAIMS.items()
    ] + [
        {"kind": "turn", "id": tid, "claim": claim, "label": label, "style": style, "text": text}
        for tid, claim, label, style, text in TURNS
    ]  # fmt: skip
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n", encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def dev_ledger(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    folder = tmp_path_factory.mktemp("dev")
    source = write_dev_set(folder / "dev.jsonl")
    out = folder / "ledgers" / "workday_dev-ledger.json"
    ledger = asyncio.run(play_dev_set(source, out, budgets=[DEFAULT_BUDGET, 0.05]))
    return out, ledger


def test_workday_dev_counts_recall_and_false_hits_per_split(
    dev_ledger: tuple[Path, dict[str, Any]],
) -> None:
    _, ledger = dev_ledger
    default = ledger["budgets"][0]
    assert (default["budget"], default["default"]) == (DEFAULT_BUDGET, True)
    assert default["threshold"] == default_model().threshold(DEFAULT_BUDGET)
    tune, test = default["tune"], default["test"]
    assert (tune["turns"], tune["hit_turns"], tune["correct_hits"]) == (4, 2, 1)
    assert tune["recall_by_style"]["typo_lowercase"]["correct_hits"] == 1
    assert (tune["false_hits"], tune["false_hits_on_miss_turns"]) == (1, 1)
    assert tune["false_hits_by_miss_style"]["changed_entity"]["false_hits"] == 1
    assert tune["false_hits_by_miss_style"]["unrelated"]["false_hits"] == 0
    assert (test["turns"], test["correct_hits"], test["recall"]) == (4, 1, 0.5)
    assert (test["false_hits"], test["wrong_claim_hits"]) == (2, 1)
    assert test["false_hits_by_miss_style"]["unrelated"]["false_hits"] == 1
    assert test["false_hits_by_miss_style"]["changed_number"]["false_hits"] == 0
    assert ledger["splits"]["tune"]["used_for_fitting"] is True
    assert ledger["splits"]["test"]["used_for_fitting"] is False


def test_workday_dev_lists_false_hits_for_tuning_only(
    dev_ledger: tuple[Path, dict[str, Any]],
) -> None:
    path, ledger = dev_ledger
    for entry in ledger["budgets"]:
        assert [t["turn"] for t in entry["tune"]["false_hit_turns"]] == ["U0003"]
        assert "false_hit_turns" not in entry["test"]
    written = path.read_text("utf-8")
    for tid, claim, *_ in TURNS:
        if claim == "D101" or tid == "U1052":
            assert f'"{tid}"' not in written
    assert "what colour" not in written.lower() and "2019" not in written


def test_workday_dev_records_the_data_files_sha256(
    dev_ledger: tuple[Path, dict[str, Any]],
) -> None:
    path, ledger = dev_ledger
    source = path.parent.parent / "dev.jsonl"
    assert ledger["sha256"] == hashlib.sha256(source.read_bytes()).hexdigest()


def invoke(*args: str, env: dict[str, str] | None = None) -> Result:
    return CliRunner().invoke(app, list(args), env=env)


def write_halved_pairs(path: Path) -> Path:
    lines = [
        {"a": f"Which port does service number {n} listen on?",
         "b": f"Which port does service number {n} listen on?", "label": 1, "id": n}
        for n in range(1, 13)
    ]  # fmt: skip
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n", encoding="utf-8")
    return path


def test_pairs_half_plays_the_pairs_whose_id_hash_falls_in_it(tmp_path: Path) -> None:
    pairs = write_halved_pairs(tmp_path / "pool.jsonl")
    odd = [n for n in range(1, 13) if int(hashlib.sha256(str(n).encode()).hexdigest(), 16) % 2]
    for half, expected in (("test", len(odd)), ("calibration", 12 - len(odd))):
        out = tmp_path / f"{half}.json"
        ok(invoke("replay", "pairs", str(pairs), "--isolated", "--half", half, "--out", str(out)))
        ledger = json.loads(out.read_text("utf-8"))
        assert ledger["half"] == half
        assert ledger["modes"]["isolated"]["summary"]["queries"] == expected
        assert ledger["threshold"] == default_model().threshold(DEFAULT_BUDGET)
    test = json.loads((tmp_path / "test.json").read_text("utf-8"))
    assert test["rows_withheld"] is True and "rows" not in test["modes"]["isolated"]


def test_pairs_gate_budget_is_recorded_with_its_threshold(tmp_path: Path) -> None:
    pairs = write_halved_pairs(tmp_path / "pool.jsonl")
    out = tmp_path / "ledger.json"
    args = ["replay", "pairs", str(pairs), "--shared", "--out", str(out)]
    ok(invoke(*args, "--gate-budget", "0.05", "--gate-budget", "0.01"))
    ledger = json.loads(out.read_text("utf-8"))
    model = default_model()
    assert [(b["budget"], b["threshold"]) for b in ledger["budgets"]] == [
        (0.05, model.threshold(0.05)), (0.01, model.threshold(0.01)),
    ]  # fmt: skip
    assert (ledger["budget"], ledger["half"]) == (0.05, "all")
    assert len(ledger["modes"]["shared"]["rows"]) == 12


def test_replay_all_skips_quora_with_one_line_and_plays_the_dev_set(tmp_path: Path) -> None:
    folder = tmp_path / "pairs"
    folder.mkdir()
    write_halved_pairs(folder / "tiny.jsonl")
    write_dev_set(folder / "workday_dev.jsonl")
    (tmp_path / "no-quora").mkdir()
    out = tmp_path / "ledgers"
    result = ok(
        invoke(
            "replay", "all", "--quick", "--out", str(out), "--pairs-dir", str(folder),
            env={"STAFFSTORE_EVAL_DATA": str(tmp_path / "no-quora")},
        )
    )  # fmt: skip
    skipped = [line for line in result.stderr.splitlines() if "Quora" in line]
    assert len(skipped) == 1 and "skipped" in skipped[0]
    assert "similiar_qqp_full.json.gz" in skipped[0]
    assert sorted(path.name for path in out.glob("*-ledger.json")) == [
        "hostile-ledger.json", "jobs-ledger.json", "kept-paraphrase-ledger.json",
        "long-session-ledger.json",
        "pairs-tiny-ledger.json",
        "single-ledger.json", "wakeups-ledger.json", "workday-ledger.json",
        "workday_dev-ledger.json", "workflow-runs-ledger.json",
    ]  # fmt: skip


def test_report_puts_the_gate_card_from_the_ledgers_before_the_results(
    dev_ledger: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    path, ledger = dev_ledger
    card = gate_card_markdown(read_ledgers(path.parent), default_model().params, DEFAULT_BUDGET)
    assert card is not None
    test = ledger["budgets"][0]["test"]
    expected = f"{test['recall']:.1%} / {test['false_hit_rate']:.2%}"
    (row,) = [line for line in card.splitlines() if line.startswith("| workday_dev | TEST")]
    assert row.split(" | ")[3] == expected
    # The releases that fitted the shipped trees are named: another release grows other trees.
    releases = default_model().params["fitted_with"]
    assert releases and all(f"{name} {v}" in card for name, v in releases.items())
    # Trees held while the calibration was redone name the commit whose fit grew them.
    params = default_model().params
    held = [line for line in card.splitlines() if line.startswith("- held since commit")]
    assert bool(held) == ("trees_kept_since" in params)
    assert all(params["trees_kept_since"][:12] in line for line in held)
    # The pair model decides: the card names the file the thresholds were calibrated with, and
    # leaves out the trees' short-question bias, which is no longer the gate's.
    assert default_model().params["pair"]["sha256"][:12] in card
    assert not [line for line in card.splitlines() if line.startswith("- **Short questions.**")]
    readme = tmp_path / "README.md"
    readme.write_text("# x\n", encoding="utf-8")
    ok(invoke("report", "--ledgers", str(path.parent), "--readme", str(readme)))
    text = readme.read_text("utf-8")
    assert text.index(CARD_START) < text.index(START)
    assert "## Gate card" in text and expected in text


def test_the_gate_card_names_the_calibration_sets_that_set_each_threshold(
    dev_ledger: tuple[Path, dict[str, Any]],
) -> None:
    path, _ = dev_ledger
    params = default_model().params
    card = gate_card_markdown(read_ledgers(path.parent), params, DEFAULT_BUDGET)
    assert card is not None
    lines = card.splitlines()
    start = lines.index("| budget | stored text | threshold | set by | each set alone |")
    rows = []
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        rows.append(line.strip("| ").split(" | "))
    key = {"question": "threshold", "statement": "statement_threshold"}
    points = {f"{p['budget']:.1%}": p for p in params["calibration"]}
    assert {(budget.split()[0], form) for budget, form, *_ in rows} == {
        (budget, form) for budget in points for form in key
    }
    for budget, form, threshold, set_by, alone in rows:
        point = points[budget.split()[0]]
        assert float(threshold) == pytest.approx(point[key[form]])
        each = dict(item.rsplit(" ", 1) for item in alone.split("; "))
        # The sets named are those whose own threshold is the highest, and that is the
        # threshold shipped: no set could keep its false hits within the budget below it.
        highest = max(float(t) for t in each.values())
        assert highest == pytest.approx(point[key[form]])
        assert set_by.split(", ") == sorted(n for n, t in each.items() if float(t) == highest)
    # A file calibrated before the sets' own thresholds were recorded shows no such table.
    older = json.loads(json.dumps(params))
    for point in older["calibration"]:
        for measured in point["measured"].values():
            measured.pop("threshold_alone")
    old_card = gate_card_markdown(read_ledgers(path.parent), older, DEFAULT_BUDGET)
    assert old_card is not None and "set by" not in old_card


def test_the_gate_card_marks_a_ledger_measured_at_other_thresholds_stale(
    dev_ledger: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    _, ledger = dev_ledger
    # A copy of the ledger, as if measured when statements were held to another threshold.
    other = json.loads(json.dumps(ledger))
    other["budgets"][0]["statement_threshold"] += 0.01

    def test_row(measured: dict[str, Any]) -> str:
        folder = tmp_path / str(measured["budgets"][0]["statement_threshold"])
        folder.mkdir()
        (folder / "workday_dev-ledger.json").write_text(json.dumps(measured), encoding="utf-8")
        card = gate_card_markdown(read_ledgers(folder), default_model().params, DEFAULT_BUDGET)
        assert card is not None
        (row,) = [line for line in card.splitlines() if "| TEST |" in line]
        return row

    assert "stale" not in test_row(ledger)
    assert test_row(other).startswith("| workday_dev (stale: other thresholds) | TEST")


def test_the_gate_card_says_how_the_pair_model_reads_and_scores_as_the_parameters_say(
    dev_ledger: tuple[Path, dict[str, Any]],
) -> None:
    path, _ = dev_ledger
    ledgers = read_ledgers(path.parent)
    params = default_model().params

    def card_of(pair: dict[str, Any]) -> str:
        card = gate_card_markdown(ledgers, {**params, "pair": pair}, DEFAULT_BUDGET)
        assert card is not None
        return card

    shipped = card_of(params["pair"])
    assert "given each question without its frame" in shipped
    assert "The score is the mean of their two probabilities" in shipped
    assert "- **A frame the gate does not know.**" in shipped
    assert "a name or a made-up word swapped stays refused" not in shipped
    written = card_of(
        {**params["pair"], "reads": "as_written", "combine": "pair", "overrules": ["common_swap"]}
    )
    assert "without its frame" not in written
    assert "Its probability is the score." in written
    assert "- **A frame around a near miss.**" in written
    assert "a name or a made-up word swapped stays refused" in written
