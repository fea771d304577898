"""Claims files: validated whole, rejected whole by default, stored in batches, idempotent."""

from __future__ import annotations

import io
import json
import sqlite3
from collections.abc import AsyncIterator
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from staffstore.errors import ImportFileError, InputError
from staffstore.gate import query_first
from staffstore.models import Turn
from staffstore.store import StaffStore
from staffstore.store.importer import (
    COMPACT_AFTER,
    describe_bad_lines,
    import_claims,
    new_claim,
    parse_claims,
    read_claims,
    store_claims,
)


def claim_line(number: int, **extra: Any) -> str:
    fields = {"owner": "acme", "question": f"what does job {number} report", "answer": "ok"}
    return json.dumps({**fields, **extra})


def lines_of(*lines: str | bytes) -> list[bytes]:
    return [(line if isinstance(line, bytes) else line.encode()) + b"\n" for line in lines]


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[StaffStore]:
    async with StaffStore.open(tmp_path / "staffstore.db") as opened:
        yield opened


def test_blank_lines_are_ignored_but_still_numbered() -> None:
    with parse_claims(lines_of(claim_line(1), "", "   ", "not json")) as parsed:
        assert parsed.count == 1
        assert [bad.number for bad in parsed.bad] == [4]


def test_a_leading_byte_order_mark_is_accepted() -> None:
    with parse_claims(lines_of(b"\xef\xbb\xbf" + claim_line(1).encode())) as parsed:
        assert parsed.count == 1 and not parsed.bad


def test_crlf_line_endings_are_accepted() -> None:
    with parse_claims(io.BytesIO(f"{claim_line(1)}\r\n{claim_line(2)}\r\n".encode())) as parsed:
        assert parsed.count == 2 and not parsed.bad


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        (b"{not json", "malformed JSON"),
        (b"[1, 2]", "got an array"),
        (b"null", "got null"),
        (b'{"owner": "acme", "question": "q"}', "answer: Field required"),
        (claim_line(1, colour="red").encode(), "colour: Extra inputs are not permitted"),
        (claim_line(1, source="rumour").encode(), "source:"),
        (claim_line(1, expires_at="next tuesday").encode(), "expires_at:"),
        (b'{"owner": "acme", "question": "  ", "answer": "a"}', "must not be blank"),
        (b'{"owner": "acme", "question": "caf\xe9", "answer": "a"}', "not valid UTF-8"),
    ],
)
def test_a_bad_line_gets_a_reason(line: bytes, reason: str) -> None:
    with parse_claims(lines_of(claim_line(1), line)) as parsed:
        assert [bad.number for bad in parsed.bad] == [2]
        assert reason in parsed.bad[0].reason


def test_optional_fields_are_read() -> None:
    line = claim_line(
        1, agent="kernel", source="job", job_id="J-17", repository="acme/api",
        profile="ci", revision="3f2a9c1", inputs_fingerprint="f00d",
        expires_at="2030-01-01T00:00:00Z",
    )  # fmt: skip
    with parse_claims(lines_of(line)) as parsed:
        (claim,) = parsed.claims()
    assert (claim.agent, claim.source, claim.job_id) == ("kernel", "job", "J-17")
    assert (claim.repository, claim.profile, claim.revision) == ("acme/api", "ci", "3f2a9c1")
    assert claim.inputs_fingerprint == "f00d"
    assert claim.expires_at is not None and claim.expires_at.year == 2030


def test_new_claim_explains_what_is_wrong() -> None:
    with pytest.raises(InputError, match="answer: Field required"):
        new_claim({"owner": "acme", "question": "q"})


async def test_a_bad_line_rejects_the_whole_file(store: StaffStore) -> None:
    with parse_claims(
        lines_of(claim_line(1), "oops", claim_line(3)), name="claims.jsonl"
    ) as parsed:
        with pytest.raises(ImportFileError) as raised:
            await store_claims(store, parsed)
        assert raised.value.bad_lines == [2]
        assert "claims.jsonl" in str(raised.value) and "line 2" in str(raised.value)
        assert await store.count_claims() == 0


async def test_the_error_names_the_first_five_bad_lines_and_counts_the_rest(
    store: StaffStore,
) -> None:
    with parse_claims(lines_of(*["oops"] * 8)) as parsed:
        with pytest.raises(ImportFileError) as raised:
            await store_claims(store, parsed)
        message = str(raised.value)
        assert "8 bad lines" in message
        assert "line 5:" in message and "line 6:" not in message
        assert "and 3 more" in message
        assert raised.value.bad_lines == list(range(1, 9))


def test_describe_bad_lines_without_overflow_has_no_tail() -> None:
    with parse_claims(lines_of("oops")) as parsed:
        assert (
            describe_bad_lines(parsed.bad) == "line 1: malformed JSON (Expecting value at column 1)"
        )


async def test_skip_bad_stores_the_good_lines_and_counts_the_bad(store: StaffStore) -> None:
    with parse_claims(lines_of(claim_line(1), "oops", claim_line(3), "[]")) as parsed:
        report = await store_claims(store, parsed, skip_bad=True)
        assert (report.added, report.present, report.skipped) == (2, 0, 2)
        assert [bad.number for bad in report.bad] == [2, 4]
        assert await store.count_claims("acme") == 2


async def test_importing_the_same_file_twice_adds_nothing(
    store: StaffStore, tmp_path: Path
) -> None:
    path = tmp_path / "claims.jsonl"
    path.write_text("\n".join(claim_line(n) for n in range(50)) + "\n")
    first = await import_claims(store, path)
    second = await import_claims(store, path)
    assert (first.added, first.present) == (50, 0)
    assert (second.added, second.present) == (0, 50)
    assert await store.count_claims() == 50


async def test_a_claim_repeated_in_one_file_is_stored_once(store: StaffStore) -> None:
    with parse_claims(lines_of(claim_line(1), claim_line(1))) as parsed:
        report = await store_claims(store, parsed)
    assert (report.added, report.present) == (1, 1)


async def test_claims_are_stored_across_many_batches(store: StaffStore) -> None:
    with parse_claims(
        io.BytesIO("".join(claim_line(n) + "\n" for n in range(3_000)).encode())
    ) as parsed:
        report = await store_claims(store, parsed, batch_size=700)
        assert report.added == 3_000
        assert await store.count_claims("acme") == 3_000


def fts_segments(db: Path) -> int:
    """How many segments the claims' FTS5 index is in (each holds at least one idx row)."""
    with closing(sqlite3.connect(db)) as connection:
        return int(
            connection.execute("SELECT count(DISTINCT segid) FROM claims_fts_idx").fetchone()[0]
        )


async def test_a_bulk_import_leaves_the_index_in_one_segment(
    store: StaffStore, tmp_path: Path
) -> None:
    lines = "".join(claim_line(n) + "\n" for n in range(COMPACT_AFTER)).encode()
    with parse_claims(io.BytesIO(lines)) as parsed:
        assert (await store_claims(store, parsed, batch_size=1_000)).added == COMPACT_AFTER
    assert fts_segments(tmp_path / "staffstore.db") == 1
    found = await query_first(store, Turn(owner="acme", text="What does job 4321 report?"))
    assert found.hit and found.claim is not None
    assert found.claim.question == "what does job 4321 report"


async def test_a_small_import_leaves_the_index_as_it_is(store: StaffStore, tmp_path: Path) -> None:
    lines = "".join(claim_line(n) + "\n" for n in range(3_000)).encode()
    with parse_claims(io.BytesIO(lines)) as parsed:
        await store_claims(store, parsed, batch_size=300)
    assert fts_segments(tmp_path / "staffstore.db") > 1  # a segment per transaction, merged by 4


async def test_a_batch_size_below_one_is_refused(store: StaffStore) -> None:
    with pytest.raises(ValueError, match="batch_size"), parse_claims([]) as parsed:
        await store_claims(store, parsed, batch_size=0)


def test_a_missing_file_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no such file"):
        read_claims(tmp_path / "absent.jsonl")


def test_a_directory_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="is a directory"):
        read_claims(tmp_path)


def test_a_stream_can_be_read() -> None:
    with read_claims(io.BytesIO(claim_line(1).encode())) as parsed:
        assert parsed.count == 1


async def test_bad_lines_past_the_first_thousand_are_counted_not_kept(store: StaffStore) -> None:
    with parse_claims(lines_of(claim_line(1), *["oops"] * 1_500)) as parsed:
        report = await store_claims(store, parsed, skip_bad=True)
    assert (report.added, report.skipped, len(report.bad)) == (1, 1_500, 1_000)
    assert describe_bad_lines(report.bad, total=report.skipped).endswith("; and 1495 more")


async def test_a_stream_is_imported_through_the_temporary_file(store: StaffStore) -> None:
    lines = b"".join(line.encode() + b"\n" for line in map(claim_line, range(5)))
    report = await import_claims(store, io.BytesIO(lines), batch_size=2)
    assert (report.added, report.present, report.skipped) == (5, 0, 0)
    assert await store.count_claims("acme") == 5
