"""Reproduce the committed results in a scratch folder, and say whether they match.

    python tools/results.py prepare build/results     # before the replays (make run does it)
    python tools/results.py compare build/results [--strict]
    python tools/results.py update build/results      # make report: the reproduced files over
                                                      # the tracked ones

`make run` writes every ledger, chart and the README into build/results/ and never touches a
tracked file; it ends by comparing them with the committed ones, byte for byte. `prepare`
seeds the folder with the committed ledgers and README first, so what this machine cannot
reproduce (Quora's evaluations without Quora's data; the benchmarks, which `make bench`
measures) keeps its committed figures and is listed as not reproduced, not as a difference.
A file counts as reproduced when this run wrote it (newer than the folder's start mark).

`make report` is the one command that rewrites tracked files: it runs `make run`, then
`update` copies the files this run reproduced over the committed ones.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: What a run writes, as (folder or file under the results folder, pattern).
PRODUCTS = (("ledgers", "*.json"), ("charts", "*.png"), (".", "README.md"))
START_MARK = ".started"


def _products(base: Path) -> dict[str, Path]:
    """The files a run produces under `base`, by their path relative to it."""
    found: dict[str, Path] = {}
    for folder, pattern in PRODUCTS:
        for path in sorted((base / folder).glob(pattern)):
            found[path.relative_to(base).as_posix()] = path
    return found


def prepare(out: Path) -> None:
    """Empty `out`, then seed it with the committed ledgers and README and mark the start."""
    if out.exists():
        shutil.rmtree(out)
    (out / "ledgers").mkdir(parents=True)
    (out / "charts").mkdir()
    for path in sorted((ROOT / "ledgers").glob("*.json")):
        shutil.copy2(path, out / "ledgers" / path.name)
    shutil.copy2(ROOT / "README.md", out / "README.md")
    # The mark is written last, so every seeded file is older than it.
    (out / START_MARK).write_text("results folder of tools/results.py\n", encoding="utf-8")


def _reproduced(out: Path, path: Path) -> bool:
    mark = out / START_MARK
    return mark.exists() and path.stat().st_mtime_ns > mark.stat().st_mtime_ns


def compare(out: Path) -> tuple[list[str], list[str], list[str], list[str]]:
    """(same, different, new, not reproduced here) among the run's files against the
    committed ones."""
    if not (out / START_MARK).exists():
        raise SystemExit(f"error: {out} is not a results folder (run: make run)")
    same: list[str] = []
    different: list[str] = []
    new: list[str] = []
    kept: list[str] = []
    committed = _products(ROOT)
    for name, path in _products(out).items():
        # The report leaves a README it would not change alone: it is always compared.
        if name != "README.md" and not _reproduced(out, path):
            kept.append(name)
        elif name not in committed:
            new.append(name)
        elif path.read_bytes() == committed[name].read_bytes():
            same.append(name)
        else:
            different.append(name)
    return same, different, new, kept


def update(out: Path) -> list[str]:
    """Copy the files this run reproduced over the tracked ones; return their names."""
    _, different, new, _ = compare(out)
    for name in different + new:
        target = ROOT / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(out / name, target)
    return sorted(different + new)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("action", choices=("prepare", "compare", "update"))
    parser.add_argument("out", type=Path, help="the results folder (make run: build/results)")
    parser.add_argument(
        "--strict", action="store_true", help="compare: exit 1 when a reproduced file differs"
    )
    args = parser.parse_args()
    out = args.out if args.out.is_absolute() else Path.cwd() / args.out
    if args.action == "prepare":
        prepare(out)
        return 0
    if args.action == "update":
        changed = update(out)
        print(f"updated {len(changed)} tracked file(s)" + "".join(f"\n  {n}" for n in changed))
        return 0
    same, different, new, kept = compare(out)
    print(f"results in {args.out}: {len(same)} file(s) reproduced byte for byte")
    for label, names in (("DIFFERS from the committed file", different),
                         ("new (not committed)", new)):  # fmt: skip
        for name in names:
            print(f"  {label}: {name}")
    if kept:
        print(f"  not reproduced here, committed figures kept: {', '.join(kept)}")
    if different or new:
        print("the committed results do not match this run; `make report` writes them")
        return 1 if args.strict else 0
    print("the committed results match this run")
    return 0


if __name__ == "__main__":
    sys.exit(main())
