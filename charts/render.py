"""Draw the charts from the committed ledgers, as `staffstore charts` does.

    python charts/render.py [--ledgers DIR] [--out DIR]

The folders default to this checkout's ledgers/ and charts/, wherever the script is run from.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from staffstore.errors import StaffstoreError
from staffstore.replays.charts import draw_charts

ROOT = Path(__file__).resolve().parent.parent


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ledgers", type=Path, default=ROOT / "ledgers", metavar="DIR")
    parser.add_argument("--out", type=Path, default=ROOT / "charts", metavar="DIR")
    args = parser.parse_args(argv)

    def note(text: str) -> None:
        print(f"note: {text}", file=sys.stderr)

    try:
        written = draw_charts(args.ledgers, args.out, note=note)
    except StaffstoreError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    for path in written:
        print(path)
    return 0 if written else 1


if __name__ == "__main__":
    sys.exit(main())
