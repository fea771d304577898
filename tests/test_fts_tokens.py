"""fts_tokens.py against SQLite FTS5 itself: the tokens it indexes, and the rows it matches.

The PostgreSQL store finds the gate's candidates with these functions where SQLite asks FTS5,
so they must agree with FTS5 exactly: for every code point (alone, and inside a token), for
random text from many scripts, and for random fts_all queries.
"""

from __future__ import annotations

import random
import sqlite3
from collections.abc import Callable, Iterator, Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from staffstore.store.fts_tokens import fts_tokens, holds_all, holds_phrase
from staffstore.store.rows import fts_all


class Fts5:
    """An in-memory FTS5 table (unicode61, defaults) and what it makes of text."""

    def __init__(self) -> None:
        self.db = sqlite3.connect(":memory:")
        self.db.execute("CREATE VIRTUAL TABLE t USING fts5(x, tokenize='unicode61')")
        self.db.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, 'instance')")
        # The gate's column, so fts_all's "search_key : (...)" runs as the store runs it.
        self.db.execute("CREATE VIRTUAL TABLE k USING fts5(search_key, tokenize='unicode61')")

    def tokens_of(self, texts: Sequence[str]) -> list[list[str]]:
        """Each text's tokens as FTS5 indexes them, in order: one row per text."""
        self.db.execute("DELETE FROM t")
        self.db.executemany(
            "INSERT INTO t (rowid, x) VALUES (?, ?)", [(i + 1, x) for i, x in enumerate(texts)]
        )
        found: list[list[str]] = [[] for _ in texts]
        for term, doc in self.db.execute("SELECT term, doc FROM v ORDER BY doc, offset"):
            found[doc - 1].append(term)
        return found

    def tokens(self, text: str) -> list[str]:
        return self.tokens_of([text])[0]

    def matches(self, search_key: str, words: Sequence[str]) -> bool | None:
        """Whether a row with this search key matches fts_all(words); None if SQLite rejects
        the expression."""
        self.db.execute("DELETE FROM k")
        self.db.execute("INSERT INTO k (rowid, search_key) VALUES (1, ?)", (search_key,))
        try:
            row = self.db.execute("SELECT count(*) FROM k WHERE k MATCH ?", (fts_all(words),))
            return bool(row.fetchone()[0])
        except sqlite3.OperationalError:
            return None


@pytest.fixture(scope="module")
def fts5() -> Iterator[Fts5]:
    table = Fts5()
    yield table
    table.db.close()


def test_sqlite_is_the_one_measured() -> None:
    # fts_tokens.py ports 3.40.1's tables; a later SQLite may bring new ones, which these
    # tests would then catch. FTS5 must be there to compare with at all.
    assert sqlite3.sqlite_version_info >= (3, 40, 1)


# --- Examples ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        (
            "i upgrad to python 3.11 on node.js",
            ("i", "upgrad", "to", "python", "3", "11", "on", "node", "js"),
        ),
        (
            "c++ Résumé café # 123 foo bar v2.0.1",
            ("c", "resume", "cafe", "123", "foo", "bar", "v2", "0", "1"),
        ),
        ("", ()),
        ("# ++ --", ()),
        ("a\x00b", ("a", "b")),  # NUL separates
        # A diacritic continues a token and is dropped; before a token it separates, and
        # U+0310 is no diacritic to unicode61, so it separates anywhere.
        ("e\u0301t \u0301e a\u0310b", ("et", "e", "a", "b")),
        ("\u0301\u0302", ()),
        # U+FFFE and U+FFFF read as U+FFFD, a symbol.
        ("x\ufffey\uffffz", ("x", "y", "z")),
        # Missing from SQLite's (Unicode 6) table, so a token character; U+1F600 is a symbol.
        ("\U0001f90c \U0001f600", ("\U0001f90c",)),
        ("\u212a\u0130\u1e9e", ("ki\u00df",)),  # Kelvin, I with dot, capital sharp s
        ("\U00010400\U00010428", ("\U00010428\U00010428",)),  # Deseret folds
        # U+1D400 (bold A), U+2460 (circled 1), U+00B2 (superscript 2) are L* and N*, and
        # U+1D400 is not folded (astral); U+00A9 (the copyright sign) is a symbol.
        ("\U0001d400\u2460\u00b2\u00a9x", ("\U0001d400\u2460\u00b2", "x")),
    ],
)
def test_examples(fts5: Fts5, text: str, tokens: tuple[str, ...]) -> None:
    assert fts_tokens(text) == tokens
    assert fts5.tokens(text) == list(tokens)


def test_long_tokens_are_cut_where_fts5_cuts_them(fts5: Fts5) -> None:
    for text in ["a" * 40000 + " B", "Ж" * 20000, "é" * 20000, "x" * 32768]:
        assert list(fts_tokens(text)) == fts5.tokens(text)
    assert len(fts_tokens("a" * 40000)[0]) == 32768
    # A cut inside a character: FTS5 keeps the character's first byte, which is no text;
    # fts_tokens drops it (the one place it differs, for tokens over 32 KB).
    text = "a" + "ж" * 20000
    fts5.db.text_factory = bytes
    try:
        (kept,) = fts5.tokens(text)
    finally:
        fts5.db.text_factory = str
    assert isinstance(kept, bytes) and len(kept) == 32768
    assert fts_tokens(text) == (kept[:-1].decode(),)


def test_holds_phrase() -> None:
    tokens = ["a", "a", "b", "c", "a"]
    assert holds_phrase(tokens, ("a", "b"))
    assert holds_phrase(tuple(tokens), ["b", "c", "a"])
    assert holds_phrase(tokens, ("a",))
    assert holds_phrase(tokens, tokens)
    assert not holds_phrase(tokens, ("a", "c"))
    assert not holds_phrase(tokens, ("c", "a", "a"))
    assert not holds_phrase(tokens, [*tokens, "a"])
    assert not holds_phrase(tokens, ())
    assert not holds_phrase((), ())


def test_empty_phrases_match_nothing_as_in_fts5(fts5: Fts5) -> None:
    for words in (["#"], [""], ["a", ""], ["a", "..."]):
        assert fts5.matches("a b", words) is False
        assert holds_all(fts_tokens("a b"), words) is False


def test_what_sqlite_rejects_raises(fts5: Fts5) -> None:
    assert fts5.matches("a b", []) is None
    with pytest.raises(ValueError):
        holds_all(fts_tokens("a b"), [])
    # FTS5 reads MATCH as a C string: the NUL ends it, inside the quoted phrase.
    assert fts5.matches("a b", ["a\x00"]) is None
    with pytest.raises(ValueError):
        holds_all(fts_tokens("a b"), ["b", "a\x00"])


# --- Every code point -------------------------------------------------------------------------


def _blocks() -> Iterator[list[str]]:
    """Every code point Python's sqlite3 can send (not the surrogates), 256 at a time."""
    for start in range(0, 0x110000, 256):
        chars = [chr(c) for c in range(start, start + 256) if not 0xD800 <= c <= 0xDFFF]
        if chars:
            yield chars


def test_every_code_point() -> None:
    """Each code point alone (a token character or not, and its fold) and inside a token (a
    separator, a token character or a diacritic to drop), as FTS5 has it.

    A table of its own for each: FTS5 keeps the terms of deleted rows until it merges, so a
    shared table would make every later lookup walk a million dead terms.
    """
    blocks = list(_blocks())
    patterns: dict[str, Callable[[str], str]] = {
        "alone": lambda c: c,
        "inside a token": lambda c: "x" + c + "x",
    }
    for name, pattern in patterns.items():
        fts5 = Fts5()
        texts = [" ".join(pattern(c) for c in block) for block in blocks]
        expected = fts5.tokens_of(texts)
        for block, text, theirs in zip(blocks, texts, expected, strict=True):
            if list(fts_tokens(text)) != theirs:
                wrong = [
                    f"U+{ord(c):04X}: {fts_tokens(pattern(c))} != {fts5.tokens(pattern(c))}"
                    for c in block
                    if list(fts_tokens(pattern(c))) != fts5.tokens(pattern(c))
                ]
                pytest.fail(f"{name}: " + "; ".join(wrong[:10]))
        fts5.db.close()


# --- Random text ------------------------------------------------------------------------------


def _span(first: int, last: int) -> st.SearchStrategy[str]:
    return st.characters(min_codepoint=first, max_codepoint=last)


_ALPHABET = st.one_of(
    _span(0x20, 0x7E),  # ASCII printable
    st.sampled_from(" \t\n\x00\x1f\x7f\u00a0\u3000\ufffd\ufffe\uffff\u212a\u0130\u1e9e\u01c5"),
    _span(0x80, 0xFF),  # Latin-1 Supplement
    _span(0x100, 0x24F),  # Latin Extended-A and -B
    _span(0x250, 0x2FF),  # IPA, spacing modifiers
    _span(0x300, 0x36F),  # combining diacritical marks
    _span(0x370, 0x3FF),  # Greek
    _span(0x400, 0x4FF),  # Cyrillic
    _span(0x1E00, 0x1FFF),  # Latin Extended Additional, Greek Extended
    _span(0x3040, 0x30FF),  # kana
    _span(0x4E00, 0x4E40),  # CJK
    _span(0x9FC0, 0x9FFF),  # CJK past SQLite's table's end (U+9FCC)
    st.sampled_from(
        [chr(c) for c in range(0x660, 0x66A)]  # Arabic-Indic digits
        + [chr(c) for c in range(0x966, 0x970)]  # Devanagari digits
        + [chr(c) for c in range(0xFF10, 0xFF1A)]  # fullwidth digits
        + [chr(c) for c in range(0xE50, 0xE5A)]  # Thai digits
        # superscripts, a vulgar fraction, a Roman numeral, circled and parenthesized digits
        + list("\u00b2\u00b3\u00b9\u00bc\u216b\u2460\u2474")
    ),
    _span(0xFF01, 0xFF5E),  # fullwidth ASCII
    _span(0xE000, 0xE020),  # private use (Co)
    _span(0xF0000, 0xF0010),  # supplementary private use A
    _span(0x10FFF0, 0x10FFFF),  # supplementary private use B, past SQLite's table
    _span(0x1F300, 0x1FAFF),  # emoji, old and new
    _span(0x10400, 0x1044F),  # Deseret
    _span(0x1D400, 0x1D420),  # mathematical letters
    _span(0xFE00, 0xFE0F),  # variation selectors
    _span(0xE0000, 0xE0130),  # tags, variation selectors supplement
    _span(0x30000, 0x30010),  # plane 3
)
_TEXT = st.text(_ALPHABET, max_size=40)


@settings(max_examples=800, deadline=None)
@given(text=_TEXT)
def test_tokens_are_fts5s(fts5: Fts5, text: str) -> None:
    assert list(fts_tokens(text)) == fts5.tokens(text)


@st.composite
def _text_and_words(draw: st.DrawFn) -> tuple[str, list[str]]:
    """A search key (pieces of text between spaces) and words to look for in it: runs of its
    pieces (as they are, or upper-cased), slices of it (parts of tokens, tokens' ends) or
    text of their own."""
    pieces = draw(st.lists(st.text(_ALPHABET, min_size=1, max_size=8), max_size=8))
    text = " ".join(pieces)
    words = []
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["pieces", "upper", "slice", "own"] if text else ["own"]))
        if kind in ("pieces", "upper"):
            first = draw(st.integers(0, len(pieces) - 1))
            word = " ".join(pieces[first : first + draw(st.integers(1, 3))])
            words.append(word.upper() if kind == "upper" else word)
        elif kind == "slice":
            start = draw(st.integers(0, len(text) - 1))
            words.append(text[start : draw(st.integers(start, min(len(text), start + 12)))])
        else:
            words.append(draw(st.text(_ALPHABET, max_size=6)))
    return text, words


@settings(max_examples=800, deadline=None)
@given(case=_text_and_words())
def test_holds_all_is_fts5s_match(fts5: Fts5, case: tuple[str, list[str]]) -> None:
    text, words = case
    expected = fts5.matches(text, words)
    if expected is None:
        with pytest.raises(ValueError):
            holds_all(fts_tokens(text), words)
    else:
        assert holds_all(fts_tokens(text), words) is expected


def test_long_texts(fts5: Fts5) -> None:
    """Texts past fts_tokens' cache (over 512 characters), drawn from the same scripts."""
    pools = [
        [chr(c) for c in range(first, last + 1) if not 0xD800 <= c <= 0xDFFF]
        for first, last in [
            (0x20, 0x7E), (0x80, 0x24F), (0x300, 0x36F), (0x370, 0x4FF), (0x1E00, 0x1FFF),
            (0x4E00, 0x4E40), (0xE000, 0xE020), (0x1F300, 0x1FAFF), (0xFFF0, 0xFFFF),
        ]
    ]  # fmt: skip
    chosen = random.Random(61)
    texts = [
        "".join(chosen.choice(chosen.choice(pools)) for _ in range(chosen.randint(513, 3000)))
        for _ in range(50)
    ]
    assert [list(fts_tokens(text)) for text in texts] == fts5.tokens_of(texts)
