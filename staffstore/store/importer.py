"""Claims files: JSON Lines in, validated whole, stored in batches, in bounded memory.

A claims file holds one JSON object a line with the fields of a NewClaim (`owner`, `question`
and `answer` required). Reading is a first pass that validates every line before anything is
stored, keeping the valid claims in a temporary file rather than in memory, so a file of any
length is imported in about the memory of two batches (one written while the next is keyed). By
default one bad line (invalid UTF-8, malformed JSON, a failing field) rejects the whole file
with an ImportFileError naming the bad lines; with `skip_bad` they are skipped and counted.
Blank lines are ignored. The second pass stores through `StaffStore.add_claims` (ensure_claims
without the Claims it returns), so identity is by content and importing the same file twice
adds nothing; each batch is keyed while the one before it is written. An import that adds
COMPACT_AFTER claims or more ends by merging the claims' full-text index (search.py compact).
"""

from __future__ import annotations

import asyncio
import json
import math
import tempfile
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from types import TracebackType
from typing import IO, Any, BinaryIO

from pydantic import ValidationError

from ..errors import ImportFileError, InputError
from ..models import NewClaim, Progress
from .async_store import KeyedClaim, StaffStore
from .keying import KEY_APART_FROM, BatchKeyer

#: The fields a claims line may carry; `owner`, `question` and `answer` are required.
CLAIM_FIELDS = tuple(NewClaim.model_fields)
#: Claims stored per transaction on SQLite: big enough to be fast, small enough that a long
#: import does not hold the write lock for minutes (about a second each). Each commit writes
#: every page its batch touched, and a claim's id and search key land at random in their
#: indexes: at a million claims a batch of 5,000 rewrote some 4,000 index pages for 5,000
#: rows, and committing took half of a 2-minute insert; in batches of 20,000 the whole insert
#: took a minute.
BATCH_SIZE = 20_000
#: PostgreSQL's batch: no commit rewrites random pages there, and larger batches were slower
#: (30,000 claims: 6.0 s in batches of 5,000, 10.8 s in batches of 20,000).
POSTGRES_BATCH_SIZE = 5_000
#: An import that adds this many claims merges the full-text index when it ends (at 1,000,000
#: claims 1.8 s more, for lookups that read one segment instead of ten): below it, the index
#: holds too few new segments to be worth rewriting whole.
COMPACT_AFTER = 10_000
#: A batch also ends at this many bytes of claims, so long answers do not make it large.
BATCH_BYTES = 16 * 1024 * 1024
#: How many bad lines an import error names before it only counts them.
NAMED_BAD_LINES = 5
#: How many bad lines a read keeps with their reasons; the rest are only counted.
KEPT_BAD_LINES = 1_000
#: How deep a line's JSON may nest: a claim or a query is one flat object.
MAX_DEPTH = 64
#: The longest integer a line may hold (Python's own limit for reading one).
MAX_INT_DIGITS = 4300
_MAX_REASON = 160
_BOM = b"\xef\xbb\xbf"
_JSON_TYPES: dict[type, str] = {
    list: "an array", str: "a string", int: "a number", float: "a number", bool: "a boolean",
}  # fmt: skip


@dataclass(frozen=True)
class BadLine:
    """A line of a claims file that cannot be stored, and why."""

    number: int
    reason: str

    def __str__(self) -> str:
        return f"line {self.number}: {self.reason}"


class ParsedClaims:
    """A claims file read and validated: its valid claims (kept in a temporary file, read back
    by `claims()`), their count, and the bad lines (the first KEPT_BAD_LINES, and how many).

    Use it as a context manager, or `close()` it, to remove the temporary file.
    """

    def __init__(self, name: str) -> None:
        self.name = name
        self.count = 0
        self.bad: list[BadLine] = []
        self.bad_count = 0
        # Owned for the object's life and closed by close(): no with-block spans it.
        self._spool: IO[bytes] = tempfile.TemporaryFile(prefix="staffstore-import-")  # noqa: SIM115

    def add(self, claim: NewClaim) -> None:
        self._spool.write(claim.model_dump_json().encode() + b"\n")
        self.count += 1

    def add_bad(self, line: BadLine) -> None:
        if len(self.bad) < KEPT_BAD_LINES:
            self.bad.append(line)
        self.bad_count += 1

    def claims(self) -> Iterator[NewClaim]:
        """The valid claims in file order, read back one at a time."""
        for batch in self.batches(BATCH_SIZE):
            yield from batch

    def batches(self, size: int, max_bytes: int = BATCH_BYTES) -> Iterator[list[NewClaim]]:
        """The valid claims in file order, `size` at most a list (and about `max_bytes`)."""
        self._spool.flush()
        self._spool.seek(0)
        batch: list[NewClaim] = []
        held = 0
        for line in self._spool:
            batch.append(NewClaim.model_validate_json(line))
            held += len(line)
            if len(batch) >= size or held >= max_bytes:
                yield batch
                batch, held = [], 0
        if batch:
            yield batch
        self._spool.seek(0, 2)  # back to the end, should more claims be added

    def close(self) -> None:
        self._spool.close()

    def __enter__(self) -> ParsedClaims:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.close()


@dataclass(frozen=True)
class ImportReport:
    """What an import did: claims added, claims already stored, bad lines skipped (and the
    first KEPT_BAD_LINES of them with their reasons)."""

    name: str
    added: int = 0
    present: int = 0
    skipped: int = 0
    bad: list[BadLine] = field(default_factory=list)


def validation_message(error: ValidationError) -> str:
    """One line that says which fields failed and why, without echoing the input back."""
    problems = []
    for item in error.errors(include_url=False, include_input=False):
        where = ".".join(str(part) for part in item["loc"])
        problems.append(f"{where}: {item['msg']}" if where else str(item["msg"]))
    return _short("; ".join(problems))


def new_claim(fields: Mapping[str, Any]) -> NewClaim:
    """A NewClaim from user-given fields, or an InputError that says what is wrong with them."""
    try:
        return NewClaim.model_validate(dict(fields))
    except ValidationError as error:
        raise InputError(f"invalid claim: {validation_message(error)}") from None


#: Called with each valid claim as it is read (the command line counts notes with it).
Inspect = Callable[[NewClaim], object]


def parse_claims(
    lines: Iterable[bytes], *, name: str = "<claims>", inspect: Inspect | None = None
) -> ParsedClaims:
    """Read every line of a claims file: the valid claims, and each bad line with its reason."""
    parsed = ParsedClaims(name)
    try:
        for number, raw in enumerate(lines, start=1):
            if number == 1:
                raw = raw.removeprefix(_BOM)
            if not raw.strip():
                continue
            try:
                claim = _parse_line(raw)
            except InputError as error:
                parsed.add_bad(BadLine(number, str(error)))
                continue
            parsed.add(claim)
            if inspect is not None:
                inspect(claim)
    except BaseException:
        parsed.close()
        raise
    return parsed


def read_claims(source: str | Path | BinaryIO, *, inspect: Inspect | None = None) -> ParsedClaims:
    """Read and validate a claims file, given by path or as an open binary stream."""
    if not isinstance(source, str | Path):
        return parse_claims(source, name=getattr(source, "name", "<stdin>"), inspect=inspect)
    path = Path(source).expanduser()
    try:
        with path.open("rb") as handle:
            return parse_claims(handle, name=str(source), inspect=inspect)
    except FileNotFoundError:
        raise InputError(f"{source}: no such file") from None
    except IsADirectoryError:
        raise InputError(f"{source}: is a directory, not a claims file") from None
    except OSError as error:
        raise InputError(f"{source}: cannot be read ({error.strerror or error})") from None


async def store_claims(
    store: StaffStore,
    parsed: ParsedClaims,
    *,
    skip_bad: bool = False,
    batch_size: int | None = None,
    now: datetime | None = None,
    progress: Progress | None = None,
    key_apart_from: int = KEY_APART_FROM,
) -> ImportReport:
    """Store a parsed claims file, `batch_size` claims a transaction (None: the store's own,
    BATCH_SIZE on SQLite, POSTGRES_BATCH_SIZE on PostgreSQL).

    With bad lines and without `skip_bad`, nothing is stored and ImportFileError names them.
    `progress` is told the claims stored so far (added or already present) after each batch.
    An import of `key_apart_from` claims or more normalises its questions in a process of its
    own (keying.BatchKeyer).
    """
    if batch_size is None:
        batch_size = POSTGRES_BATCH_SIZE if store.location.dialect == "postgresql" else BATCH_SIZE
    if batch_size < 1:
        raise ValueError("batch_size must be 1 or more")
    if parsed.bad_count and not skip_bad:
        raise ImportFileError(_rejection(parsed), [line.number for line in parsed.bad])
    stored = added = 0
    if progress is not None:
        progress(0, parsed.count)
    # Each batch is keyed (its questions normalised, most of an import's time) while the batch
    # before it is written on the store's own thread: still one batch a transaction, in file
    # order, one at a time.
    writing: asyncio.Task[int] | None = None
    keying: Awaitable[list[KeyedClaim]] | None = None
    batches = parsed.batches(batch_size)
    async with BatchKeyer(parsed.count, apart_from=key_apart_from) as keyer:
        try:
            batch = next(batches, None)
            while batch is not None:
                keying = await keyer.start(batch)
                batch = next(batches, None)  # read while a helper process normalises (keying.py)
                keyed = await keying
                if writing is not None:
                    added += await writing
                    if progress is not None:
                        progress(stored, parsed.count)
                writing = asyncio.create_task(store.add_claims(keyed, now=now))
                stored += len(keyed)
                await asyncio.sleep(0)  # the write reaches the store's thread before keying goes on
            if writing is not None:
                added += await writing
                if progress is not None:
                    progress(stored, parsed.count)
        finally:
            if isinstance(keying, asyncio.Future):
                keying.cancel()
            # Failed or cancelled while the next batch was keyed: the write under way still
            # ends (committed or rolled back whole) before the import does.
            if writing is not None and not writing.done():
                await asyncio.wait([writing])
    if added >= COMPACT_AFTER:
        await store.compact_claim_index()
    present = stored - added
    return ImportReport(
        name=parsed.name, added=added, present=present, skipped=parsed.bad_count, bad=parsed.bad
    )


async def import_claims(
    store: StaffStore,
    source: str | Path | BinaryIO,
    *,
    skip_bad: bool = False,
    batch_size: int | None = None,
    now: datetime | None = None,
) -> ImportReport:
    """Read, validate and store a claims file; see the module docstring for bad lines."""
    with read_claims(source) as parsed:
        return await store_claims(store, parsed, skip_bad=skip_bad, batch_size=batch_size, now=now)


def describe_bad_lines(
    bad: Sequence[BadLine], limit: int = NAMED_BAD_LINES, *, total: int | None = None
) -> str:
    """The first `limit` bad lines with their reasons, and how many more there are (of
    `total`, when `bad` holds only the first of them)."""
    named = "; ".join(str(line) for line in bad[:limit])
    rest = (len(bad) if total is None else total) - min(limit, len(bad))
    return f"{named}; and {rest} more" if rest > 0 else named


def parse_json_object(raw: bytes) -> dict[str, Any]:
    """One line of JSON Lines as a JSON object, or an InputError that says what is wrong.

    Stricter than `json.loads`: NaN and Infinity are not JSON, a number must fit a float (or
    have at most MAX_INT_DIGITS digits), nesting stops at MAX_DEPTH, and a string may not hold
    a lone surrogate (`"\\ud800"` is valid JSON but not text; SQLite and UTF-8 output refuse it).
    """
    try:
        # Without its line ending: a cut line's error then names the column where it ends,
        # not "column 1" of the line after.
        text = raw.decode("utf-8").rstrip("\r\n")
    except UnicodeDecodeError as error:
        raise InputError(f"not valid UTF-8 (byte {error.start + 1})") from None
    try:
        obj: Any = json.loads(
            text, parse_constant=_no_constant, parse_float=_finite_float, parse_int=_bounded_int
        )
    except json.JSONDecodeError as error:
        raise InputError(f"malformed JSON ({error.msg} at column {error.colno})") from None
    except RecursionError:
        raise InputError(f"malformed JSON (nested deeper than {MAX_DEPTH} levels)") from None
    if not isinstance(obj, dict):
        raise InputError(f"expected a JSON object, got {_JSON_TYPES.get(type(obj), 'null')}")
    # Both checks walk the value, so each runs only when the raw line could fail it: a
    # surrogate can only come from a \u escape (the bytes were valid UTF-8), and a line with
    # few brackets cannot nest deep.
    if raw.count(b"[") + raw.count(b"{") > MAX_DEPTH:
        _check_depth(obj)
    if b"\\u" in raw:
        _check_text(obj)
    return obj


def _no_constant(name: str) -> Any:
    raise InputError(f"malformed JSON ({name} is not a JSON number)")


def _finite_float(text: str) -> float:
    number = float(text)
    if not math.isfinite(number):
        raise InputError("malformed JSON (a number too large for a float)")
    return number


def _bounded_int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_INT_DIGITS:
        raise InputError(f"malformed JSON (a number with more than {MAX_INT_DIGITS} digits)")
    return int(text)


def _check_depth(obj: Any) -> None:
    stack: list[tuple[Any, int]] = [(obj, 1)]
    while stack:
        value, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise InputError(f"malformed JSON (nested deeper than {MAX_DEPTH} levels)")
        children = value.values() if isinstance(value, dict) else value
        stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))


def _check_text(obj: Any) -> None:
    stack: list[Any] = [obj]
    while stack:
        value = stack.pop()
        if isinstance(value, dict):
            stack.extend(value)
            stack.extend(value.values())
        elif isinstance(value, list):
            stack.extend(value)
        elif isinstance(value, str):
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                raise InputError(
                    "a string holds a lone surrogate (an escape such as \\ud800 that is half of "
                    "a character), which is not text"
                ) from None


def _parse_line(raw: bytes) -> NewClaim:
    return new_claim(parse_json_object(raw))


def _rejection(parsed: ParsedClaims) -> str:
    count = parsed.bad_count
    lines = "line" if count == 1 else "lines"
    named = describe_bad_lines(parsed.bad, total=count)
    return f"{parsed.name}: {count} bad {lines}, nothing was stored: {named}"


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _MAX_REASON else text[: _MAX_REASON - 1] + "…"
