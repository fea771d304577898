"""When two typed words are one word: a slip of the keyboard, or two spellings of it.

A slip is forgiven only on words long enough to survive one, and only when it makes no common
English word: "cahce" is "cache", but "horse" is not "house" and "prize" is not "price". The
common words are a list of 44,419 (data/common_words.txt.gz; tools/build_common_words.py says
where it comes from). British and American spellings of one word ("colour" / "color",
"travelled" / "traveled") are one word even when both are common.
"""

from __future__ import annotations

import gzip
import unicodedata
from functools import cache
from importlib import resources

from rapidfuzz.distance import OSA


@cache
def _common_words() -> frozenset[str]:
    data = resources.files("staffstore.text") / "data" / "common_words.txt.gz"
    text = gzip.decompress(data.read_bytes()).decode("utf-8")
    return frozenset(line for line in text.splitlines() if line and not line.startswith("#"))


def is_common_word(word: str) -> bool:
    """True for a common English word as typed ("house", "horse"): a slip of the keyboard
    seldom makes one, so two of them that differ by a letter are two words, not a typo."""
    return word in _common_words()


# British and American spellings of one word: (British, American, shortest word it applies
# to). The length keeps real pairs apart: "four" / "for", "filled" / "filed".
_SPELLINGS = (
    ("our", "or", 5),  # colour, favourite, behaviour
    ("tre", "ter", 5),  # theatre, centres, metre
    ("ence", "ense", 7),  # licence, defence, offence
    ("ll", "l", 7),  # travelled, cancelling, labelled, traveller
    ("ae", "e", 7),  # mediaeval, paediatric, encyclopaedia
)


def spelling_variants(a: str, b: str) -> bool:
    """True when `a` and `b` are the British and American spellings of one word.

    Both may be common words ("travelled", "traveled"), so the slip rule would keep them apart.
    """
    if a == b or abs(len(a) - len(b)) > 1:  # each spelling adds or drops one letter at most
        return False
    for british, american, shortest in _SPELLINGS:
        for one, other in ((a, b), (b, a)):
            if len(other) < shortest:
                continue
            at = one.find(british)
            while at != -1:
                if one[:at] + american + one[at + len(british) :] == other:
                    return True
                at = one.find(british, at + 1)
    return False


def typo_close(a: str, b: str) -> bool:
    """One slip of the keyboard, on words long enough that a slip cannot make another word."""
    if a == b:
        return True
    if not (a.isalpha() and b.isalpha()):
        return False  # numbers, versions and hashes must match exactly
    shortest = min(len(a), len(b))
    if shortest < 5 or a[0] != b[0] or a[-1] != b[-1]:
        return False  # short words, first and last letters: a slip there makes another word
    if len(a) != len(b) and shortest < 7:
        return False  # a dropped or doubled letter, in a word long enough to survive it
    return OSA.distance(a, b, score_cutoff=1) <= 1


def misspells(typed: str, word: str) -> bool:
    """Whether `typed` (no English word) reads as a misspelling of the common word `word`, both
    lower case: the first letter kept, one slip from a word of four letters or more ("ofen" /
    "often", "budgt" / "budget"), two from one of eight with its first two letters kept
    ("trigerred" / "triggered"). Looser than typo_close: it is for the second look's reading
    of a turn (text/respelling.py), whose score a calibrated threshold still stands behind."""
    if len(word) < 4 or len(typed) < 3 or typed[0] != word[0]:
        return False
    allowed = 2 if len(word) >= 8 and len(typed) >= 7 and typed[:2] == word[:2] else 1
    return OSA.distance(typed, word, score_cutoff=allowed) <= allowed


def without_accents(word: str) -> str:
    """The word with its letters' accents dropped ("Pokémon" -> "Pokemon")."""
    return "".join(c for c in unicodedata.normalize("NFKD", word) if not unicodedata.combining(c))


def same_word(
    folded: str, typed: str, claim_folded: str, claim_typed: str, *, slip: bool = True
) -> bool:
    """A turn word and a claim word that are one word: a slip of the keyboard that makes no
    other common word ("cahce" / "cache", but not "house" / "horse"), or one word's British and
    American spellings ("colour" / "color", "travelled" / "traveled"). Without `slip`, only
    two spellings of one word count: those, and of the slips, one that only drops or adds an
    accent ("Pokémon" / "pokemon")."""
    if spelling_variants(typed, claim_typed):
        return True
    if not slip and without_accents(typed).casefold() != without_accents(claim_typed).casefold():
        return False
    if not (typo_close(folded, claim_folded) or typo_close(typed, claim_typed)):
        return False
    return typed == claim_typed or not (is_common_word(typed) and is_common_word(claim_typed))
