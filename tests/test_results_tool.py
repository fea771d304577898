"""tools/results.py: `make run` compares what it reproduced with the committed results."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TOOL = ROOT / "tools" / "results.py"


def results(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(TOOL), *args], capture_output=True, text=True, check=False
    )


def _rewrite(path: Path, data: bytes) -> None:
    path.write_bytes(data)
    later = path.stat().st_mtime_ns + 10**9  # written after the start mark, as a run writes
    os.utime(path, ns=(later, later))


def test_a_seeded_folder_matches_and_lists_what_it_did_not_reproduce(tmp_path: Path) -> None:
    out = tmp_path / "results"
    assert results("prepare", str(out)).returncode == 0
    ledger = out / "ledgers" / "single-ledger.json"
    _rewrite(ledger, ledger.read_bytes())  # reproduced, byte for byte
    shown = results("compare", str(out), "--strict")
    assert shown.returncode == 0, shown.stdout
    assert "committed results match" in shown.stdout
    assert "committed figures kept" in shown.stdout and "bench-store.json" in shown.stdout


def test_a_reproduced_file_that_differs_is_named_and_fails_when_strict(tmp_path: Path) -> None:
    out = tmp_path / "results"
    results("prepare", str(out))
    ledger = out / "ledgers" / "single-ledger.json"
    _rewrite(ledger, ledger.read_bytes() + b"\n")
    loose = results("compare", str(out))
    assert loose.returncode == 0
    assert "DIFFERS from the committed file: ledgers/single-ledger.json" in loose.stdout
    assert results("compare", str(out), "--strict").returncode == 1


def test_compare_refuses_a_folder_that_is_no_results_folder(tmp_path: Path) -> None:
    shown = results("compare", str(tmp_path))
    assert shown.returncode != 0 and "not a results folder" in shown.stderr
