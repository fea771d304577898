"""Properties over any input (Hypothesis): the gate's normaliser never raises, and the command
line's input paths (arguments, `query --jsonl` lines, `claims import` lines) end in output or
one `error: ...` line with exit code 0, 1 or 2, never a traceback."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from staffstore.cli import main
from staffstore.text.matching import normalize
from staffstore.text.slots import differences, time_difference


@st.composite
def _any_text(draw: st.DrawFn) -> str:
    text = draw(st.text(max_size=40))
    # Drawn as part of an alphabet, a surrogate turns up once in hundreds of strings.
    if draw(st.booleans()):
        at = draw(st.integers(0, len(text)))
        text = text[:at] + draw(st.characters(categories=["Cs"])) + text[at:]
    return text


#: Text as Python can hold it, lone surrogates included (what a bad escape or argv gives).
any_text = _any_text()
json_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(), any_text,
    st.sampled_from([10**400, -(10**30), 1e308]),
)  # fmt: skip
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(any_text, inner, max_size=3),
    max_leaves=8,
)


def _encode(value: Any, ascii_only: bool) -> bytes:
    # ensure_ascii writes a lone surrogate as a \ud800 escape; without it, "surrogatepass"
    # writes it as the three bytes no UTF-8 decoder accepts. Both reach the parser.
    text = json.dumps(value, ensure_ascii=ascii_only)  # NaN and Infinity come out as such
    return text.encode("utf-8", "surrogatepass")


@st.composite
def json_lines(draw: st.DrawFn, fields: dict[str, st.SearchStrategy[Any]]) -> bytes:
    """One line: most often an object of the given fields with hostile values, else anything."""
    kind = draw(st.integers(0, 9))
    if kind == 0:
        return draw(st.binary(max_size=60)).replace(b"\n", b" ")
    if kind == 1:
        depth = draw(st.integers(1, 3000))
        return b'{"text": ' + b"[" * depth + b"]" * depth + b"}"
    if kind == 2:
        return draw(json_values.map(lambda value: _encode(value, True)))
    obj = {
        name: draw(st.one_of(strategy, json_values))
        for name, strategy in fields.items()
        if draw(st.integers(0, 5))  # each field is sometimes left out
    }
    return _encode(obj, draw(st.booleans())).replace(b"\n", b" ")


query_lines = json_lines(
    {"owner": st.just("acme"), "text": any_text, "id": json_values, "session": any_text}
)
claim_lines = json_lines(
    {"owner": st.just("acme"), "question": any_text, "answer": any_text, "agent": any_text,
     "expires_at": st.one_of(st.floats(), any_text, st.integers())}
)  # fmt: skip
FAST = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("properties") / "s.db"
    code, _out, err = run_main(
        ["--db", str(path), "claims", "add", "--owner", "acme", "--question",
         "What port does the api listen on?", "--answer", "8080"]
    )  # fmt: skip
    assert code == 0, err
    return path


def run_main(argv: Sequence[str], stdin: bytes = b"") -> tuple[int, str, str]:
    """Run `staffstore ARGV...` in this process as the console script does; code, out, err."""
    with CliRunner().isolation(input=stdin) as (out, err, _mixed):
        code = main(list(argv))
        return code, out.getvalue().decode(), err.getvalue().decode()


def nonblank(lines: Sequence[bytes]) -> Iterator[bytes]:
    # The importer drops a byte order mark at the start of the file: a first line that is
    # only a BOM is blank to it.
    first = [lines[0].removeprefix(b"\xef\xbb\xbf"), *lines[1:]] if lines else []
    return (line for line in first if line.strip())


def strict_json(line: str) -> Any:
    def refuse(constant: str) -> Any:
        raise AssertionError(f"{constant} in output")

    return json.loads(line, parse_constant=refuse)


def assert_one_error_line(code: int, err: str) -> None:
    assert code in (1, 2), err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err


# -- normalize ---------------------------------------------------------------------------------


@settings(max_examples=400, deadline=None)
@given(any_text)
@example("⓵")  # a digit that is no decimal digit: int() cannot read it (found by Hypothesis)
def test_normalize_never_raises_and_is_stable(text: str) -> None:
    first = normalize(text)
    assert isinstance(first.key, str)
    assert normalize(text).key == first.key


#: Words the slots' time and number readings turn on, every spelling of a unit among them: a
#: question made of these reaches each rule that rewrites a count, a unit or a period.
TIME_WORDS = (
    "0 1 7 12 24 48 60 120 365 one two a an the every each per last this next past ago in "
    "did was will won't didn't had been currently atm yday tonight today tomorrow "
    "how many how long did will is has ever right now rn so far to date up nite tonite week "
    "ms msec msecs millis millisecond milliseconds sec secs second seconds min mins minute "
    "minutes h hr hrs hour hours day days wk wks week weeks mo mos mth mths month months "
    "yr yrs year years 24h 2hrs 10k 1,000 95th percentile pct p99 v2.1 ?"
).split()


@settings(max_examples=400, deadline=None)
@given(
    st.lists(st.sampled_from(TIME_WORDS), min_size=1, max_size=12),
    st.lists(st.sampled_from(TIME_WORDS), min_size=1, max_size=12),
)
def test_the_slots_read_any_count_unit_and_period_and_agree_on_time_alone(
    asked: list[str], stored: list[str]
) -> None:
    one, other = " ".join(asked), " ".join(stored)
    assert differences(one, one) == []
    found = differences(one, other)
    # The time slot read alone (what the strict test's matches are checked for) is the time
    # slot `differences` reads among the others, also where it skips questions naming no time.
    assert time_difference(one, other) == next((d for d in found if d.slot == "time"), None)


# -- the command line's input paths -------------------------------------------------------------


@FAST
@given(st.lists(query_lines, min_size=1, max_size=6))
def test_query_jsonl_answers_every_line_with_one_json_line(db: Path, lines: list[bytes]) -> None:
    stdin = b"\n".join(lines) + b"\n"
    code, out, err = run_main(["--db", str(db), "query", "--jsonl"], stdin)
    assert code == 0, err
    assert "Traceback" not in err
    answers = [strict_json(line) for line in out.split("\n") if line]
    assert len(answers) == len(list(nonblank(lines)))
    assert all(answer["outcome"] in ("hit", "miss", "error") for answer in answers)
    assert err.splitlines()[-1].startswith("query: ")


@FAST
@given(st.lists(claim_lines, min_size=1, max_size=6), st.booleans())
def test_claims_import_stores_or_refuses_in_one_line(
    db: Path, lines: list[bytes], skip_bad: bool
) -> None:
    stdin = b"\n".join(lines) + b"\n"
    args = ["--db", str(db), "claims", "import", "-", "--json", *(["--skip-bad"] * skip_bad)]
    code, out, err = run_main(args, stdin)
    assert "Traceback" not in err
    if code != 0:
        assert not skip_bad, err
        assert_one_error_line(code, err)
        assert "nothing was stored" in err
        return
    report = strict_json(out)
    assert report["added"] + report["present"] + report["skipped"] == len(list(nonblank(lines)))
    assert all(line.startswith(("skipped ", "note: ")) for line in err.splitlines()), err


#: Commands that take text, with the places a drawn text goes (ARG is replaced by it).
TEXT_COMMANDS = [
    ["query", "--owner", "acme", "--", "ARG"],
    ["query", "--owner", "ARG", "what port"],
    ["query", "--owner", "acme", "--repository", "ARG", "--", "ARG"],
    ["claims", "add", "--owner", "ARG", "--question", "ARG", "--answer", "ARG"],
    ["claims", "search", "--owner", "acme", "--", "ARG"],
    ["claims", "list", "--owner", "ARG"],
    ["claims", "show", "--owner", "acme", "--", "ARG"],
    ["ask", "--owner", "ARG", "--", "ARG"],
    ["receipts", "--owner", "ARG"],
    ["ledger", "--owner", "ARG"],
]


@FAST
@given(st.sampled_from(TEXT_COMMANDS), any_text)
def test_any_text_argument_gives_output_or_one_error_line(
    db: Path, command: list[str], text: str
) -> None:
    argv = ["--db", str(db), *(text if part == "ARG" else part for part in command)]
    code, _out, err = run_main(argv)
    assert "Traceback" not in err
    if code != 0:
        assert_one_error_line(code, err)


def test_query_jsonl_reads_past_a_byte_order_mark(db: Path) -> None:
    # Hypothesis found this one: a first line that is only a BOM was answered as bad JSON.
    for first in (b"\xef\xbb\xbf", b'\xef\xbb\xbf{"owner": "alice", "text": "what is ndots"}'):
        code, out, err = run_main(["--db", str(db), "query", "--jsonl"], first + b"\n")
        assert code == 0, err
        answers = [strict_json(line) for line in out.split("\n") if line]
        assert [a["outcome"] for a in answers] == ([] if first.endswith(b"\xbf") else ["miss"])


def _depth(value: Any) -> int:
    """How deep the lists and dicts of a parsed JSON value nest (a scalar: 0)."""
    if isinstance(value, dict):
        return 1 + max(map(_depth, value.values()), default=0)
    if isinstance(value, list):
        return 1 + max(map(_depth, value), default=0)
    return 0


nested_values = st.recursive(
    st.one_of(st.none(), st.integers(), st.text(alphabet='[]{}"\\,:ab ', max_size=8)),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner),
    max_leaves=40,
)


@settings(max_examples=400, deadline=None)
@given(nested_values, st.integers(0, 12), st.booleans())
def test_json_depth_is_read_before_parsing_exactly_as_parsing_finds_it(
    value: Any, limit: int, ascii_only: bool
) -> None:
    # strict_json reads a deep body's depth from its brackets before handing it to json.loads
    # (which recurses a level at a time): brackets and quotes inside strings must not count.
    from staffstore.state.strict_json import _nests_deeper

    text = json.dumps(value, ensure_ascii=ascii_only)
    assert _nests_deeper(text, limit) == (_depth(value) > limit)
