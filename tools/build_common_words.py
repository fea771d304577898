"""Build staffstore/text/data/common_words.txt.gz: the English words common enough that a slip
of the keyboard is unlikely to land on one ("house" and "horse" are two words, "cahce" is a slip).

The source is the English word-frequency list that pyspellchecker ships
(spellchecker/resources/en.json.gz, pyspellchecker 0.9.1, MIT licence, Tyler Barrus), built
from subtitle word counts. Run it again only to change the cut:

    pip download --no-deps pyspellchecker==0.9.1 && unzip pyspellchecker-*.whl 'spellchecker/*'
    python tools/build_common_words.py spellchecker/resources/en.json.gz
"""

from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path

#: Words seen at least this often in the source's counts; below it the list is mostly names,
#: rare inflections and misspellings that would keep real slips from being forgiven.
MIN_COUNT = 100

OUT = Path(__file__).resolve().parents[1] / "staffstore" / "text" / "data" / "common_words.txt.gz"

HEADER = """\
# Common English words, one a line: the words of pyspellchecker 0.9.1's English frequency list
# (spellchecker/resources/en.json.gz; MIT licence, copyright Tyler Barrus) counted at least
# {min_count} times, lower-case letters only. Built by tools/build_common_words.py.
"""


def main(source: str) -> None:
    with gzip.open(source, "rt", encoding="utf-8") as handle:
        counts: dict[str, int] = json.load(handle)
    words = sorted(w for w, n in counts.items() if n >= MIN_COUNT and w.isalpha() and w.islower())
    text = HEADER.format(min_count=MIN_COUNT) + "\n".join(words) + "\n"
    # mtime=0: the same list gives the same bytes, so a rebuild shows no change in git.
    with OUT.open("wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as handle:
        handle.write(text.encode("utf-8"))
    print(f"{len(words)} words -> {OUT}")


if __name__ == "__main__":
    main(sys.argv[1])
