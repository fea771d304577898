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
import math
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


#: Words seen fewer times than this are left out of the frequency table: at that count the
#: estimate is noise, and a word missing from the table is weighed as rare anyway.
ZIPF_MIN_COUNT = 5
ZIPF_OUT = OUT.with_name("word_zipf.tsv.gz")
ZIPF_HEADER = """\
# Word frequencies on the Zipf scale (log10 of occurrences per billion words), from pyspellchecker
# 0.9.1's English frequency list (spellchecker/resources/en.json.gz; MIT licence, copyright Tyler
# Barrus), words counted at least {min_count} times. Built by tools/build_common_words.py.
"""


def write_zipf(counts: dict[str, int]) -> None:
    """The gate weighs a word by how rare it is: "the" says little, "terraform" a lot."""
    total = sum(counts.values())
    rows = [
        f"{word}\t{math.log10(n * 1e9 / total):.2f}"
        for word, n in sorted(counts.items())
        if n >= ZIPF_MIN_COUNT and word.isalpha() and word.islower()
    ]
    text = ZIPF_HEADER.format(min_count=ZIPF_MIN_COUNT) + "\n".join(rows) + "\n"
    with ZIPF_OUT.open("wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as handle:
        handle.write(text.encode("utf-8"))
    print(f"{len(rows)} word frequencies -> {ZIPF_OUT}")


def main(source: str) -> None:
    with gzip.open(source, "rt", encoding="utf-8") as handle:
        counts: dict[str, int] = json.load(handle)
    write_zipf(counts)
    words = sorted(w for w, n in counts.items() if n >= MIN_COUNT and w.isalpha() and w.islower())
    text = HEADER.format(min_count=MIN_COUNT) + "\n".join(words) + "\n"
    # mtime=0: the same list gives the same bytes, so a rebuild shows no change in git.
    with OUT.open("wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as handle:
        handle.write(text.encode("utf-8"))
    print(f"{len(words)} words -> {OUT}")


if __name__ == "__main__":
    main(sys.argv[1])
