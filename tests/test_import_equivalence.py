"""An imported file leaves the store as storing its claims one at a time does: the same rows,
word counts and full-text index, so the gate decides every turn the same. On SQLite and on
PostgreSQL: the importer writes a batch in a few statements and keys the next batch while one
is written, where `ensure_claim` writes one claim a transaction."""

from __future__ import annotations

import json
import random
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from staffstore.gate import query_first
from staffstore.models import NewClaim, Turn
from staffstore.store import StaffStore
from staffstore.store.importer import import_claims

pytestmark = pytest.mark.both_backends

NOW = datetime(2026, 3, 2, 9, 30, tzinfo=UTC)
WORDS = "cache proxy ledger vault runner kernel atlas scout shard replica index queue".split()
TOPICS = (
    "What did {a} find about the {b} {c}?",
    "Why does the {a} {b} fail on {c}?",
    "How is {a} {b} configured for the {c} service?",
    "Which {a} version does {c} pin for {b}?",
)


def claim_fields(count: int) -> list[dict[str, Any]]:
    """Claims of two owners, with repeats, expiries and revisions of one question (so later
    ones supersede earlier ones, within a batch and across batches)."""
    rng = random.Random(5)
    fields: list[dict[str, Any]] = []
    for number in range(count):
        question = rng.choice(TOPICS).format(
            a=rng.choice(WORDS), b=rng.choice(WORDS), c=f"{rng.choice(WORDS)}{number % 97}"
        )
        claim: dict[str, Any] = {
            "owner": "acme" if number % 5 else "globex",
            "question": question,
            "answer": f"Finding {number}: {question.lower()} settled.",
            "source": "job",
        }
        if number % 11 == 0:
            claim |= {"repository": "acme/api", "revision": f"r{number}"}
            claim["question"] = f"Which {WORDS[number % 3]} does the api build pin?"
        if number % 13 == 0:
            claim["expires_at"] = (NOW + timedelta(days=number % 3 - 1)).isoformat()
        fields.append(claim)
        if number % 17 == 0:
            fields.append(dict(claim))  # the same claim twice in the file
    return fields


def turns(fields: list[dict[str, Any]]) -> list[Turn]:
    """Each stored question as asked, in other words, with one word changed, and for the
    other owner."""
    asked = []
    for claim in fields[::20]:
        question, owner = claim["question"], claim["owner"]
        asked += [
            Turn(owner=owner, text=question, now=NOW),
            Turn(owner=owner, text=f"hey, {question.lower()} thanks", now=NOW),
            Turn(owner=owner, text=question.replace("the", "the other", 1), now=NOW),
            Turn(owner="acme" if owner == "globex" else "globex", text=question, now=NOW),
        ]
    return asked


async def state(store: StaffStore, asked: list[Turn]) -> dict[str, Any]:
    """What the store holds and what the gate decides on it, comparable across stores."""
    claims = await store.run_sync(
        lambda sync: sync.fetchall(
            "SELECT id, owner, question, answer, status, superseded_by, expires_at, created_at, "
            "search_key FROM claims ORDER BY rowid"
        )
    )
    terms = await store.run_sync(
        lambda sync: sync.fetchall("SELECT owner, term, n FROM term_counts ORDER BY owner, term")
    )
    searched = {
        word: [claim.id for claim in await store.search_claims("acme", word, limit=50)]
        for word in WORDS
    }
    decided = []
    for turn in asked:
        made = await query_first(store, turn)
        decided.append((turn.owner, turn.text, made.outcome, made.claim_id, made.reason))
    return {
        "claims": [tuple(row) for row in claims],
        "terms": [tuple(row) for row in terms],
        "searched": searched,
        "decided": decided,
    }


@pytest.fixture
def places(backend: str, request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[list[Any]]:
    """Two empty stores of the backend under test."""
    if backend == "sqlite":
        yield [tmp_path / "imported.db", tmp_path / "one-by-one.db"]
        return
    server = request.getfixturevalue("postgres_server")
    template = request.getfixturevalue("postgres_template")
    names = [f"test_{uuid.uuid4().hex[:16]}" for _ in range(2)]
    yield [server.create_database(name, template=template) for name in names]
    for name in names:
        server.drop_database(name)


# 7: many small batches, revisions superseded across them; 1,100: a batch written in more
# than one INSERT statement.
@pytest.mark.parametrize("batch_size", [7, 1_100])
async def test_an_imported_file_decides_as_its_claims_stored_one_by_one(
    places: list[Any], tmp_path: Path, batch_size: int
) -> None:
    fields = claim_fields(1_200)
    path = tmp_path / "claims.jsonl"
    path.write_text("".join(json.dumps(claim) + "\n" for claim in fields), encoding="utf-8")
    asked = turns(fields)
    imported_at, one_by_one_at = places
    async with StaffStore.open(imported_at) as store:
        report = await import_claims(store, path, batch_size=batch_size, now=NOW)
        imported = await state(store, asked)
    async with StaffStore.open(one_by_one_at) as store:
        added = 0
        for claim in fields:
            ((_stored, new),) = await store.ensure_claims([NewClaim(**claim)], now=NOW)
            added += new
        one_by_one = await state(store, asked)
    assert (report.added, report.present) == (added, len(fields) - added)
    assert len(imported["claims"]) == added
    assert any(row[4] == "superseded" for row in imported["claims"])
    assert {outcome for _, _, outcome, _, _ in imported["decided"]} == {"hit", "miss"}
    for part in ("claims", "terms", "searched", "decided"):
        assert imported[part] == one_by_one[part], part
