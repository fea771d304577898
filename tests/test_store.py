"""StaffStore on real SQLite files: opening, migrations, damage, claims, FTS, owners, receipts."""

from __future__ import annotations

import hashlib
import re
import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from hostile_text import FTS5_SYNTAX, SQL_INJECTION

from staffstore.errors import ConstraintError, CorruptStoreError, NotFoundError, StoreError
from staffstore.models import NewClaim, Receipt
from staffstore.store import StaffStore
from staffstore.store.migrations import MIGRATIONS
from staffstore.store.sync_store import SyncStore

#: The store suite runs on both backends (conftest.py).
pytestmark = pytest.mark.both_backends

if TYPE_CHECKING:
    from conftest import PutClaim

KERNEL_Q = "What did Kernel find about ledger replay?"
MOMENT = datetime(2025, 1, 15, 12, 0, tzinfo=UTC)


def _user_version(path: Path) -> int:
    with sqlite3.connect(path) as db:
        return int(db.execute("PRAGMA user_version").fetchone()[0])


async def _pragma(store: StaffStore, name: str) -> object:
    # busy_timeout and foreign_keys are per-connection settings: only the store's own
    # connection can report them, so read them there.
    rows = await store.run_sync(lambda sync: sync.fetchall(f"PRAGMA {name}"))
    assert rows
    return rows[0][0]


def _receipt(owner: str, receipt_id: str = "rcpt_test") -> Receipt:
    return Receipt(
        id=receipt_id,
        owner=owner,
        outcome="miss",
        reason="no_candidate",
        status="ok",
        prompt_tokens=10,
        completion_tokens=5,
        cost_usd=0.001,
        inference_avoided=False,
        inference_attempted=True,
        latency_ms=12.0,
        started_at=MOMENT,
        finished_at=MOMENT + timedelta(milliseconds=12),
        question="what is it?",
        answer="it is this",
    )


# -- opening and connection settings ----------------------------------------------------------


@pytest.mark.sqlite_only
async def test_store_file_is_in_wal_mode(store: StaffStore) -> None:
    assert await _pragma(store, "journal_mode") == "wal"


@pytest.mark.sqlite_only
async def test_store_connection_enforces_foreign_keys(store: StaffStore) -> None:
    assert await _pragma(store, "foreign_keys") == 1


@pytest.mark.sqlite_only
async def test_store_connection_sets_a_busy_timeout(store: StaffStore) -> None:
    assert int(await _pragma(store, "busy_timeout")) > 0  # type: ignore[call-overload]


async def test_message_for_a_missing_session_is_refused(store: StaffStore) -> None:
    with pytest.raises(ConstraintError):
        await store.append_messages("no-such-session", [("user", "hello")])


# -- migrations ---------------------------------------------------------------------------------


async def test_open_applies_every_migration(db_path: Path) -> None:
    async with StaffStore.open(db_path):
        pass
    assert _user_version(db_path) == len(MIGRATIONS)


async def test_older_store_is_upgraded_on_open(db_path: Path) -> None:
    with sqlite3.connect(db_path) as db:
        for statement in MIGRATIONS[0]:
            db.execute(statement)
        db.execute("PRAGMA user_version = 1")
    async with StaffStore.open(db_path):
        pass
    assert _user_version(db_path) == len(MIGRATIONS)


async def test_upgrade_keeps_the_older_store_rows(db_path: Path) -> None:
    with sqlite3.connect(db_path) as db:
        for statement in MIGRATIONS[0]:
            db.execute(statement)
        db.execute(
            "INSERT INTO sessions (id, owner, name, created_at) VALUES ('s1', 'alice', 'main', 0)"
        )
        db.execute("PRAGMA user_version = 1")
    async with StaffStore.open(db_path) as store:
        assert await store.ensure_session("alice", "main") == "s1"


async def test_store_from_a_newer_staffstore_is_refused(db_path: Path) -> None:
    with sqlite3.connect(db_path) as db:
        db.execute(f"PRAGMA user_version = {len(MIGRATIONS) + 1}")
    with pytest.raises(StoreError, match="newer"):
        async with StaffStore.open(db_path):
            pass


# -- damaged files ------------------------------------------------------------------------------


async def test_non_sqlite_file_is_a_corrupt_store(db_path: Path) -> None:
    db_path.write_bytes(b"this is a text file, not a database\n" * 100)
    with pytest.raises(CorruptStoreError):
        async with StaffStore.open(db_path):
            pass


async def test_sqlite_header_with_garbage_after_it_is_a_corrupt_store(db_path: Path) -> None:
    db_path.write_bytes(b"SQLite format 3\x00" + bytes(range(256)) * 64)
    with pytest.raises(CorruptStoreError):
        async with StaffStore.open(db_path) as store:
            await store.list_claims("alice")


async def test_store_with_damaged_pages_is_a_corrupt_store(db_path: Path) -> None:
    async with StaffStore.open(db_path) as store:
        for number in range(50):
            await store.ensure_claim(
                NewClaim(owner="alice", question=f"question {number}?", answer="x" * 400)
            )
    data = bytearray(db_path.read_bytes())
    page_size = int.from_bytes(data[16:18], "big")
    data[page_size:] = b"\xa5" * (len(data) - page_size)  # keep page 1's header intact
    db_path.write_bytes(bytes(data))
    with pytest.raises(CorruptStoreError):
        async with StaffStore.open(db_path) as store:
            await store.list_claims("alice")


# -- claim identity and supersession ------------------------------------------------------------


async def test_same_claim_twice_is_one_row(store: StaffStore, put: PutClaim) -> None:
    await put(KERNEL_Q, "Replays are deterministic.")
    await put(KERNEL_Q, "Replays are deterministic.")
    assert await store.count_claims() == 1


async def test_same_claim_twice_has_one_id(put: PutClaim) -> None:
    first = await put(KERNEL_Q, "Replays are deterministic.")
    second = await put(KERNEL_Q, "Replays are deterministic.")
    assert first.id == second.id


async def test_same_claim_again_is_reported_as_not_new(store: StaffStore) -> None:
    claim = NewClaim(owner="alice", question=KERNEL_Q, answer="Replays are deterministic.")
    await store.ensure_claims([claim])
    ((_, added),) = await store.ensure_claims([claim])
    assert added is False


async def test_same_claim_twice_in_one_batch_is_new_once(store: StaffStore) -> None:
    claim = NewClaim(owner="alice", question=KERNEL_Q, answer="Replays are deterministic.")
    stored = await store.ensure_claims([claim, claim])
    assert [added for _, added in stored] == [True, False]


async def test_different_provenance_gives_a_different_id(put: PutClaim) -> None:
    first = await put(KERNEL_Q, "Replays are deterministic.", job_id="job-1")
    second = await put(KERNEL_Q, "Replays are deterministic.", job_id="job-2")
    assert first.id != second.id


async def test_newer_revision_supersedes_the_older_claim(store: StaffStore, put: PutClaim) -> None:
    old = await put(KERNEL_Q, "Not deterministic.", repository="acme/api", revision="r1")
    new = await put(KERNEL_Q, "Deterministic.", repository="acme/api", revision="r2")
    stored = await store.get_claim("alice", old.id)
    assert (stored.status, stored.superseded_by) == ("superseded", new.id)


async def test_newer_revision_stays_live(store: StaffStore, put: PutClaim) -> None:
    await put(KERNEL_Q, "Not deterministic.", repository="acme/api", revision="r1")
    new = await put(KERNEL_Q, "Deterministic.", repository="acme/api", revision="r2")
    assert (await store.get_claim("alice", new.id)).status == "live"


async def test_another_owners_claim_does_not_supersede(store: StaffStore, put: PutClaim) -> None:
    mine = await put(KERNEL_Q, "Not deterministic.", repository="acme/api", revision="r1")
    await put(KERNEL_Q, "Deterministic.", repository="acme/api", revision="r2", owner="bob")
    assert (await store.get_claim("alice", mine.id)).status == "live"


# -- full-text search ----------------------------------------------------------------------------


async def test_search_finds_an_inserted_claim(store: StaffStore, put: PutClaim) -> None:
    claim = await put(KERNEL_Q, "Replays are deterministic.")
    assert [c.id for c in await store.search_claims("alice", "ledger replay")] == [claim.id]


async def test_search_finds_a_claim_by_its_answer(store: StaffStore, put: PutClaim) -> None:
    claim = await put(KERNEL_Q, "Replays are deterministic.")
    assert [c.id for c in await store.search_claims("alice", "deterministic")] == [claim.id]


async def test_search_after_retract_shows_the_claim_retracted(
    store: StaffStore, put: PutClaim
) -> None:
    claim = await put(KERNEL_Q, "Replays are deterministic.")
    await store.retract_claim("alice", claim.id)
    assert [c.status for c in await store.search_claims("alice", "ledger replay")] == ["retracted"]


async def test_similar_claims_put_the_question_sharing_most_rarity_first(
    store: StaffStore, put: PutClaim
) -> None:
    common_only = await put("Why is the zephyr queue deep?", "Backlog.")
    rare_only = await put("Who owns the kestrel host?", "Ops.")
    both = await put("Why is the zephyr queue slow on the kestrel host?", "Disk.")
    words = [("kestrel", 2), ("zephyr", 40)]  # as rarest_words counts them, rarest first
    found = await store.run_sync(lambda sync: sync.similar_claims("alice", words, limit=3))
    assert [c.id for c in found] == [both.id, rare_only.id, common_only.id]


async def test_similar_claims_fill_the_limit_from_the_owner_past_other_owners_matches(
    store: StaffStore, put: PutClaim
) -> None:
    # Another owner's questions hold both words, so they rank first, more of them than one
    # block of owner checks: the owner's question must still be found, and theirs never.
    for n in range(40):
        await put(f"Is the kestrel zephyr number {n} healthy?", "Yes.", owner="bob")
    mine = await put("Who owns the kestrel host?", "Ops.")
    words = [("kestrel", 1), ("zephyr", 1)]
    found = await store.run_sync(lambda sync: sync.similar_claims("alice", words, limit=5))
    assert [c.id for c in found] == [mine.id]
    none = await store.run_sync(lambda sync: sync.similar_claims("alice", words, limit=0))
    assert none == []


HOSTILE_SEARCHES = [
    *FTS5_SYNTAX,
    *SQL_INJECTION,
    '"ledger replay"',
    'ledger" OR "anything',
    "ledger OR kernel",
    "drop table",
]


def _words(text: str) -> set[str]:
    return set(re.findall(r"[^\W_]+", text.casefold()))


@pytest.fixture
async def searchable(put: PutClaim) -> None:
    await put(KERNEL_Q, "Replays are deterministic.")
    await put("Is NOT an operator near OR in the search box?", "NOT, OR and NEAR are words.")
    await put("How do I drop a table safely?", "Write a migration; never drop table claims.")
    await put("What does the proxy do?", "It forwards requests.")


@pytest.mark.parametrize("text", HOSTILE_SEARCHES)
async def test_search_with_fts_syntax_returns_only_claims_with_those_words(
    store: StaffStore, searchable: None, text: str
) -> None:
    found = await store.search_claims("alice", text)
    for claim in found:
        assert _words(text) <= _words(claim.question + " " + claim.answer), claim.question


async def test_search_with_a_quoted_phrase_finds_the_claim(
    store: StaffStore, searchable: None
) -> None:
    found = await store.search_claims("alice", '"ledger replay"')
    assert [c.question for c in found] == [KERNEL_Q]


async def test_search_for_operator_words_finds_them_as_words(
    store: StaffStore, searchable: None
) -> None:
    found = await store.search_claims("alice", "NOT OR NEAR")
    assert [c.question for c in found] == ["Is NOT an operator near OR in the search box?"]


async def test_search_with_sql_leaves_the_claims_table_intact(
    store: StaffStore, searchable: None
) -> None:
    await store.search_claims("alice", "'; DROP TABLE claims; --")
    assert await store.count_claims("alice") == 4


# -- owner isolation ---------------------------------------------------------------------------


async def test_get_claim_of_another_owner_is_not_found(store: StaffStore, put: PutClaim) -> None:
    claim = await put(KERNEL_Q, "Replays are deterministic.")
    with pytest.raises(NotFoundError):
        await store.get_claim("bob", claim.id)


async def test_list_claims_shows_only_the_owners_claims(store: StaffStore, put: PutClaim) -> None:
    await put(KERNEL_Q, "Replays are deterministic.")
    mine = await put("What does the proxy do?", "It forwards requests.", owner="bob")
    assert [c.id for c in await store.list_claims("bob")] == [mine.id]


async def test_search_claims_shows_only_the_owners_claims(store: StaffStore, put: PutClaim) -> None:
    await put(KERNEL_Q, "Replays are deterministic.")
    assert await store.search_claims("bob", KERNEL_Q) == []


async def test_get_receipt_of_another_owner_is_not_found(store: StaffStore) -> None:
    await store.add_receipt(_receipt("alice", "rcpt_alice"))
    with pytest.raises(NotFoundError):
        await store.get_receipt("bob", "rcpt_alice")


async def test_list_receipts_shows_only_the_owners_receipts(store: StaffStore) -> None:
    await store.add_receipt(_receipt("alice", "rcpt_alice"))
    await store.add_receipt(_receipt("bob", "rcpt_bob"))
    assert [r.id for r in await store.list_receipts("bob")] == ["rcpt_bob"]


async def test_ledger_counts_only_the_owners_receipts(store: StaffStore) -> None:
    await store.add_receipt(_receipt("alice", "rcpt_alice"))
    assert (await store.ledger("bob")).turns == 0


# -- artifacts ----------------------------------------------------------------------------------


async def test_artifact_address_is_the_sha256_of_its_bytes(store: StaffStore) -> None:
    address = await store.ensure_artifact("alice", b"result bytes")
    assert address == hashlib.sha256(b"result bytes").hexdigest()


async def test_artifact_stored_twice_has_one_address(store: StaffStore) -> None:
    first = await store.ensure_artifact("alice", b"result bytes")
    second = await store.ensure_artifact("alice", b"result bytes")
    assert first == second


async def test_artifact_reads_back_its_bytes(store: StaffStore) -> None:
    address = await store.ensure_artifact("alice", b"\x00binary\xff")
    assert await store.get_artifact("alice", address) == b"\x00binary\xff"


async def test_artifact_of_another_owner_is_not_found(store: StaffStore) -> None:
    address = await store.ensure_artifact("alice", b"result bytes")
    with pytest.raises(NotFoundError):
        await store.get_artifact("bob", address)


# -- sessions -----------------------------------------------------------------------------------


async def test_recent_messages_are_the_last_n_oldest_first(store: StaffStore) -> None:
    session = await store.ensure_session("alice", "main")
    await store.append_messages(session, [("user", f"message {n}") for n in range(20)])
    recent = await store.recent_messages(session, limit=5)
    assert [m.content for m in recent] == [f"message {n}" for n in range(15, 20)]


async def test_ensure_session_twice_returns_one_id(store: StaffStore) -> None:
    assert await store.ensure_session("alice", "main") == await store.ensure_session(
        "alice", "main"
    )


# -- expiry -------------------------------------------------------------------------------------


async def test_live_claim_past_expiry_is_listed_as_expired(
    store: StaffStore, put: PutClaim
) -> None:
    claim = await put(KERNEL_Q, "Replays are deterministic.", expires_at=MOMENT)
    expired = await store.list_claims("alice", status="expired", now=MOMENT + timedelta(hours=1))
    assert [(c.id, c.status) for c in expired] == [(claim.id, "expired")]


async def test_live_claim_past_expiry_is_not_listed_as_live(
    store: StaffStore, put: PutClaim
) -> None:
    await put(KERNEL_Q, "Replays are deterministic.", expires_at=MOMENT)
    assert await store.list_claims("alice", status="live", now=MOMENT + timedelta(hours=1)) == []


# -- pending calls (the lease on paying for a request) ----------------------------------------


async def test_a_call_has_one_holder_until_it_is_released(store: StaffStore) -> None:
    call = ("alice", "", "hash-1")
    assert await store.claim_call(*call, "first", ttl=60, now=MOMENT)
    assert not await store.claim_call(*call, "second", ttl=60, now=MOMENT)
    assert await store.call_holder(*call, now=MOMENT) == "first"
    assert not await store.release_call(*call, "second")  # not the holder: nothing changes
    assert await store.call_holder(*call, now=MOMENT) == "first"
    assert await store.release_call(*call, "first")
    assert await store.call_holder(*call, now=MOMENT) is None
    assert await store.claim_call(*call, "second", ttl=60, now=MOMENT)


async def test_a_lease_that_runs_out_goes_to_the_next_claim(store: StaffStore) -> None:
    call = ("alice", "", "hash-2")
    assert await store.claim_call(*call, "crashed", ttl=30, now=MOMENT)
    later = MOMENT + timedelta(seconds=29)
    assert not await store.claim_call(*call, "waiter", ttl=30, now=later)
    expired = MOMENT + timedelta(seconds=30)
    assert await store.call_holder(*call, now=expired) is None
    assert await store.claim_call(*call, "waiter", ttl=30, now=expired)
    # The holder that overran finds its lease gone: its release leaves the new holder's be.
    assert not await store.release_call(*call, "crashed")
    assert await store.call_holder(*call, now=expired) == "waiter"


async def test_claiming_again_renews_the_holders_lease(store: StaffStore) -> None:
    call = ("alice", "", "hash-3")
    assert await store.claim_call(*call, "holder", ttl=30, now=MOMENT)
    renewed = MOMENT + timedelta(seconds=20)
    assert await store.claim_call(*call, "holder", ttl=30, now=renewed)
    assert await store.call_holder(*call, now=MOMENT + timedelta(seconds=45)) == "holder"


async def test_calls_are_held_per_owner_namespace_and_request(store: StaffStore) -> None:
    for owner, namespace, request_hash in [
        ("alice", "", "h"), ("bob", "", "h"), ("alice", "ns", "h"), ("alice", "", "h2"),
    ]:  # fmt: skip
        assert await store.claim_call(owner, namespace, request_hash, "x", ttl=60, now=MOMENT)


# -- search keys follow the matcher ---------------------------------------------------------------

DNS_Q = "Why do DNS lookups inside the cluster take 5 seconds?"


async def test_keys_written_by_an_older_matcher_are_rewritten_on_open(
    db: str | Path, backend: str
) -> None:
    from staffstore.gate import query_first
    from staffstore.models import Turn
    from staffstore.store.fts_tokens import fts_tokens
    from staffstore.text.matching import KEY_VERSION, normalize

    old_key = "why dns lookup inside cluster tak 5 2th"
    async with StaffStore.open(db) as store:
        await store.ensure_claim(NewClaim(owner="alice", question=DNS_Q, answer="ndots:5"))

        # What an older staffstore left: its own content words, counted, indexed, and its
        # version.
        def older(sync: SyncStore) -> None:
            with sync.db.write():
                sync.db.execute("UPDATE claims SET search_key = ?", (old_key,))
                sync.db.execute("DELETE FROM term_counts")
                sync.db.execute("INSERT INTO term_counts VALUES ('alice', '2th', 1)")
                sync.db.execute("UPDATE store_settings SET value = ? WHERE name = ?",
                                (str(KEY_VERSION - 1), "search_key_version"))  # fmt: skip
                if backend == "postgresql":
                    sync.db.execute("UPDATE claims SET search_tokens = ?",
                                    (list(fts_tokens(old_key)),))  # fmt: skip
                    sync.db.execute("DELETE FROM claim_terms")
                    sync.db.executemany(
                        "INSERT INTO claim_terms SELECT 'alice', ?, rowid FROM claims",
                        [(token,) for token in set(fts_tokens(old_key))],
                    )

        await store.run_sync(older)

    async with StaffStore.open(db) as store:
        decision = await query_first(store, Turn(owner="alice", text=DNS_Q.lower()))
        assert decision.outcome == "hit"
        rows = await store.run_sync(
            lambda sync: (
                sync.fetchall("SELECT search_key FROM claims"),
                sync.fetchall("SELECT term, n FROM term_counts WHERE owner = 'alice'"),
                sync.fetchall("SELECT value FROM store_settings WHERE name = 'search_key_version'"),
            )
        )
    (((key,),), terms, ((version,),)) = rows
    assert key == normalize(DNS_Q).key
    assert dict(terms) == {word: 1 for word in normalize(DNS_Q).content}
    assert version == str(KEY_VERSION)
    if backend == "postgresql":  # its doclists follow the new key too
        async with StaffStore.open(db) as store:
            indexed = await store.run_sync(
                lambda sync: sync.fetchall("SELECT term FROM claim_terms")
            )
        assert {term for (term,) in indexed} == set(fts_tokens(key))


# The content words normalize makes of these questions, as of KEY_VERSION. When a change to
# matching.py, lexicon.py or rewrites.py alters them, stores must re-key: bump KEY_VERSION and
# record the new digest here.
KEY_PROBES = [
    "What did the Kernel agent find about ledger replay?",
    "Why do in-cluster DNS lookups sometimes take 5 seconds?",
    "Why's the acme/web login e2e test flaky? thanks!",
    "What was the root cause of the 9 April outage?",
    "Which packages get rebuilt when shared/utils changes?",
    "Why aren't push notifications delivered on Android 14?",
    "How many customers are using the Python SDK versus the JavaScript SDK?",
    "Are there any GPL-licensed dependencies in acme/web, right now?",
    "What should I have done in the following situation?",
    "Why do websocket connections drop after sixty seconds, 40 percent of the time?",
    "How long does it take to fully restore the production database?",
    "Why does the nightly backup job skip Apple's App Store receipts?",
    "Do we know why the acme/api build keeps timing out?",
    "How much time does it take for the search index to rebuild?",
    "Why were the 500 rupee notes banned, and what is the theme of the release notes?",
    "Which plane do we take, and who added the car care plan for the horse's mane?",
    "Is a simple tip in England the simplest advice, or the quickest and biggest?",
    "Why are users that have zero orders double charged?",
    "How do I keep going when the build keeps failing?",
    "Which variable is used to set the key we use for hashing passwords?",
    "How long do 10⁶ requests take when x₂ is full-width \uff21\uff30\uff29 traffic?",
    "What time did the 95th percentile of version 2.1 pass 24h without a retry?",
    "What was the number of deploys last wk, and the median in mins?",
    "What is the count of 3rd-party calls over 10k, at the 95%ile, in pct?",
]
#: Each version's digest over the probes as they stood when it was recorded (the probes grow
#: with normalize: each version's last questions say nothing to the version before's rules).
KEY_DIGESTS = {13: "720004fc678c1e76", 14: "8b81f4c401877369", 15: "16ee9ebffc42a3b2"}


def test_key_version_names_what_normalize_makes_of_questions() -> None:
    from staffstore.text.matching import KEY_VERSION, normalize

    keys = "\n".join(normalize(question).key for question in KEY_PROBES)
    digest = hashlib.sha256(keys.encode()).hexdigest()[:16]
    assert KEY_DIGESTS.get(KEY_VERSION) == digest, (
        f"normalize now gives digest {digest}: bump matching.KEY_VERSION so stores re-key, "
        "and record the digest in KEY_DIGESTS"
    )
