"""`claims import` reads a file of any length in bounded memory: the peak resident size of a
real import process does not grow with the file."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from staffstore.store import StaffStore
from staffstore.store.importer import import_claims
from staffstore.text.matching import normalize

#: Runs the command given in argv as its only child and reports the child's peak RSS (in KiB,
#: as Linux gives ru_maxrss).
_MEASURE = """
import json, resource, subprocess, sys
done = subprocess.run(sys.argv[1:], capture_output=True)
print(json.dumps({"code": done.returncode, "err": done.stderr.decode(errors="replace"),
                  "peak_kib": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss}))
"""


def import_peak(db: Path, path: Path) -> dict[str, object]:
    """Run `staffstore claims import PATH` as a real process; its exit code, stderr, peak RSS."""
    env = {k: v for k, v in os.environ.items() if k != "STAFFSTORE_DB"}
    command = [sys.executable, "-m", "staffstore", "--db", str(db), "claims", "import", str(path)]
    done = subprocess.run(
        [sys.executable, "-c", _MEASURE, *command], capture_output=True, env=env, timeout=300
    )
    assert done.returncode == 0, done.stderr
    measured: dict[str, object] = json.loads(done.stdout)
    return measured


def write_claims(path: Path, count: int, answer_bytes: int, bad_last: bool) -> int:
    filler = "lorem ipsum dolor sit amet " * (answer_bytes // 27)
    with path.open("w") as out:
        for n in range(count):
            claim = {"owner": "acme", "question": f"what does job {n} report", "answer": filler}
            out.write(json.dumps(claim) + "\n")
        if bad_last:
            out.write('{"owner": "acme", "question": "no answer"}\n')
    return path.stat().st_size


def test_validating_a_large_claims_file_takes_memory_that_does_not_grow_with_it(
    tmp_path: Path,
) -> None:
    # The last line is bad, so the whole file is read and checked, then nothing is stored:
    # the reading pass alone, on a file far larger than the memory it may take.
    small, large = tmp_path / "small.jsonl", tmp_path / "large.jsonl"
    write_claims(small, 10, 5_000, bad_last=True)
    size = write_claims(large, 10_000, 5_000, bad_last=True)
    assert size > 45 << 20
    baseline = import_peak(tmp_path / "a.db", small)
    measured = import_peak(tmp_path / "b.db", large)
    for run in (baseline, measured):
        assert run["code"] == 1 and "nothing was stored" in str(run["err"]), run["err"]
    grown_kib = int(measured["peak_kib"]) - int(baseline["peak_kib"])  # type: ignore[call-overload]
    assert grown_kib < 20 * 1024, f"peak grew by {grown_kib >> 10} MiB for a {size >> 20} MiB file"


async def test_storing_claims_leaves_the_matchers_cache_to_the_turns(tmp_path: Path) -> None:
    # Each stored question is normalised once; through the cache, an import of 65,536 claims
    # or more held some 240 MB of entries no turn would reuse.
    path = tmp_path / "claims.jsonl"
    write_claims(path, 300, 100, bad_last=False)
    misses = normalize.cache_info().misses
    async with StaffStore.open(tmp_path / "s.db") as store:
        report = await import_claims(store, path)
    assert report.added == 300
    assert normalize.cache_info().misses == misses
