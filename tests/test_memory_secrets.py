"""Secrets never reach the store: planted in a run's input, outputs, errors, decisions, lessons,
edits and the digest, then looked for in the SQLite file and its WAL (every byte) or in every
row of every table on PostgreSQL. Scrubbing comes before cutting, so no part of one is left."""

from __future__ import annotations

import secrets as random_secrets
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from staffstore.errors import InputError, NotFoundError
from staffstore.memory import MemoryEntries, WorkflowMemory
from staffstore.state import Scrubber
from staffstore.state.secrets import REDACTED, cut_text
from staffstore.store import StaffStore

pytestmark = pytest.mark.both_backends

START = datetime(2026, 11, 2, 8, 0, tzinfo=UTC)


class Clock:
    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> datetime:
        self.now += timedelta(minutes=1)
        return self.now


def _hex(n: int = 32) -> str:
    return random_secrets.token_hex(n // 2)


class Planted:
    """A fresh secret of every kind, and the parts of each that must never be stored."""

    def __init__(self) -> None:
        self.password = "pw-" + _hex(24)  # in an environment variable named in the config
        self.listed = "li-" + _hex(24)  # in one named by $STAFFSTORE_SECRET_ENV
        self.guessed = "gt-" + _hex(24)  # in one named like a secret (DEPLOY_TOKEN)
        self.marked = "mk-" + _hex(24)  # marked secret by the run
        self.per_call = "pc-" + _hex(24)  # handed to one call (an edit)
        self.openrouter = "sk-or-v1-" + _hex(64)
        self.github = "ghp_" + _hex(36)
        self.aws = "AKIA" + _hex(16).upper()
        self.jwt = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0." + _hex(43)
        self.bearer = _hex(40)
        self.url_password = "up-" + _hex(20)
        self.pem_body = _hex(64)

    def values(self) -> list[str]:
        return [
            self.password, self.listed, self.guessed, self.marked, self.per_call,
            self.openrouter, self.github, self.aws, self.jwt, self.bearer, self.url_password,
            self.pem_body,
        ]  # fmt: skip

    def fragments(self) -> list[str]:
        """Every 10-character window of every secret's random part: a cut secret's half
        would show as one of these."""
        found = set()
        for value in self.values():
            core = value.split("-", 1)[-1] if value.startswith(("pw-", "li-", "gt-")) else value
            core = core.removeprefix("sk-or-v1-").removeprefix("ghp_")
            found |= {core[i : i + 10] for i in range(len(core) - 9)}
        return sorted(found)


async def _stored_text(store: StaffStore) -> bytes:
    """Everything the database holds: the SQLite file and its WAL as bytes, or every row of
    every table on PostgreSQL as text."""
    if store.path is not None:
        return b"".join(
            path.read_bytes()
            for path in (store.path, store.path.with_name(store.path.name + "-wal"))
            if path.exists()
        )

    def every_row(sync: Any) -> list[str]:
        names = sync.fetchall(
            "SELECT table_name FROM information_schema.tables "
            "WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'"
        )
        assert {"workflow_runs", "workflow_lessons", "workflow_digests"} <= {n for (n,) in names}
        return [
            str(row[0])
            for (name,) in names
            for row in sync.fetchall(f'SELECT CAST(t AS TEXT) FROM "{name}" AS t')
        ]

    return "\n".join(await store.run_sync(every_row)).encode("utf-8")


@pytest.fixture
def planted(monkeypatch: pytest.MonkeyPatch) -> Planted:
    secret = Planted()
    monkeypatch.setenv("TRIAGE_DB_PASSWORD", secret.password)
    monkeypatch.setenv("VAULT_ENTRY", secret.listed)
    monkeypatch.setenv("STAFFSTORE_SECRET_ENV", "VAULT_ENTRY, OTHER")
    monkeypatch.setenv("DEPLOY_TOKEN", secret.guessed)
    return secret


async def _play(store: StaffStore, s: Planted) -> None:
    """One workflow's life with secrets planted everywhere a text goes."""
    memory = WorkflowMemory(
        store, "acme", "triage", scrubber=Scrubber.from_env(["TRIAGE_DB_PASSWORD"]),
        clock=Clock(),
    )  # fmt: skip
    await memory.configure(retain=2, digest_chars=400)
    pem = f"-----BEGIN RSA PRIVATE KEY-----\n{s.pem_body}\n-----END RSA PRIVATE KEY-----"
    for n in range(5):
        async with memory.run(
            {"db": f"postgresql://triage:{s.url_password}@db/x", "token": s.openrouter},
            secrets=[s.marked],
        ) as run:
            # A secret just before the cut point: scrubbed first, no half of it survives.
            run.step("fetch", "done", output="x" * 290 + s.password + " tail")
            run.step("triage", "failed", error=f"401 with Authorization: Bearer {s.bearer}")
            run.step("notify", "done", output=f"hook {s.marked} ok, aws {s.aws}, jwt {s.jwt}")
            run.decide("lead", "rejected", f"the key {s.github} is in the ticket")
            await run.remember(f"the mirror takes {s.listed} and {s.guessed}\n{pem}")
            if n == 4:
                raise RuntimeError(f"fetch failed with password {s.password}")
            await run.finish("failed", outcome=f"filed nothing; key {s.openrouter}")
    entries = MemoryEntries(store, "acme", scrubber=Scrubber.from_env())
    lesson = await memory.add(f"by hand: {s.github} and {s.password}")
    await entries.edit(lesson.id, f"edited: {s.per_call} {s.aws}", secrets=[s.per_call])
    digest = next(e for e in (await memory.view()).entries if e.kind == "digest")
    await entries.edit(digest.id, f"digest by hand: {s.per_call}", secrets=[s.per_call])


async def test_no_planted_secret_nor_any_part_of_one_reaches_the_database(
    store: StaffStore, planted: Planted
) -> None:
    with pytest.raises(RuntimeError):
        await _play(store, planted)
    held = await _stored_text(store)
    assert b"[redacted]" in held  # the texts are there, with their secrets replaced
    found = [v for v in planted.values() if v.encode() in held]
    parts = [f for f in planted.fragments() if f.encode() in held]
    assert found == [] and parts == []


async def test_the_search_finds_a_secret_the_scrubber_was_not_told_of(store: StaffStore) -> None:
    """The check above can fail: a value no scrubber knows, without a key's shape, is found."""
    unknown = "plain-" + _hex(24)
    memory = WorkflowMemory(store, "acme", "triage", scrubber=Scrubber())
    await memory.add(f"the code is {unknown}")
    assert unknown.encode() in await _stored_text(store)


async def test_what_memory_hands_back_is_scrubbed_too(store: StaffStore, planted: Planted) -> None:
    with pytest.raises(RuntimeError):
        await _play(store, planted)
    memory = WorkflowMemory(store, "acme", "triage", scrubber=Scrubber())
    shown = (await memory.section()).text + repr((await memory.view()).model_dump())
    assert not [value for value in planted.values() if value in shown]


async def test_errors_repeat_no_text_they_were_given(store: StaffStore, planted: Planted) -> None:
    entries = MemoryEntries(store, "acme", scrubber=Scrubber.from_env())
    with pytest.raises(NotFoundError) as missing:
        await entries.get("lsn_nothing")
    with pytest.raises(InputError) as blank:
        await WorkflowMemory(store, "acme", "triage").add("   ")
    for error in (missing.value, blank.value):
        assert not [value for value in planted.values() if value in str(error)]


# -- the scrubber itself --------------------------------------------------------------------------


def test_the_longer_of_two_overlapping_secrets_is_replaced_whole() -> None:
    scrubber = Scrubber(["abcd1234", "abcd1234efgh5678"])
    assert scrubber.scrub("x abcd1234efgh5678 y abcd1234") == f"x {REDACTED} y {REDACTED}"


def test_a_cut_after_scrubbing_leaves_no_part_of_a_secret() -> None:
    secret = "s3cr3t-" + _hex(24)
    text = "y" * 80 + secret
    assert secret[:12] in cut_text(text, 100)  # cutting first would have kept its start
    kept = Scrubber([secret]).scrub_and_cut(text, 100)
    assert kept == "y" * 80 + REDACTED
    assert not any(secret[i : i + 8] in kept for i in range(len(secret) - 7))


@pytest.mark.parametrize(
    "text",
    [
        "sk-proj-" + "A1b2" * 10,
        "sk-ant-api03-" + "x9" * 20,
        "github_pat_" + "A1_" * 15,
        "xoxb-1234567890-abcdefghij",
        "AIza" + "B" * 35,
        "hf_" + "a1" * 16,
        "glpat-" + "a1B2c3" * 4,
    ],
)
def test_api_key_shapes_are_replaced(text: str) -> None:
    assert Scrubber().scrub(f"key={text};") == f"key={REDACTED};"


@pytest.mark.parametrize(
    "text",
    [
        "task-management-system-overview-2026",
        "risk-assessment-for-the-q3-release-17",
        "the desk-booking tool",
        "abc",
        "https://example.com/path?q=1",
    ],
)
def test_ordinary_words_are_left_alone(text: str) -> None:
    assert Scrubber(["ab"]).scrub(text) == text  # "ab" is too short to be scrubbed


def test_a_scrubbers_repr_shows_no_value() -> None:
    assert "hunter2-secret" not in repr(Scrubber(["hunter2-secret"]))


def test_variables_named_like_secrets_are_scrubbed_unless_too_short() -> None:
    scrubber = Scrubber.from_env(
        environ={"GITHUB_TOKEN": "t" * 20, "SHORT_KEY": "1", "PATH": "/usr/local/bin/a-long-path"}
    )
    assert scrubber.scrub("t" * 20 + " 1 /usr/local/bin/a-long-path") == (
        f"{REDACTED} 1 /usr/local/bin/a-long-path"
    )
