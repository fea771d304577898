"""Working state: set with a reason, compare-and-swap, the chain, clear, the cap, TTL, handoffs
and the section a prompt carries, on a real SQLite file with a pinned clock."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from staffstore.errors import InputError, StoreBusyError
from staffstore.state import StateConfig, WorkingState, render_section
from staffstore.state.section import utf8_len
from staffstore.store import StaffStore

#: Runs on SQLite and on PostgreSQL (conftest.py).
pytestmark = pytest.mark.both_backends

START = datetime(2026, 8, 13, 9, 4, tzinfo=UTC)


class Clock:
    """A clock the test moves by hand."""

    def __init__(self, start: datetime = START) -> None:
        self.now = start

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **delta: float) -> None:
        self.now += timedelta(**delta)


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def trader(store: StaffStore, clock: Clock) -> WorkingState:
    return WorkingState(store, "acme", "trader", clock=clock)


# -- set, compare-and-swap, the chain ------------------------------------------------------------


async def test_set_stores_the_value_with_its_reason_and_time(trader: WorkingState) -> None:
    written = await trader.set("stop_loss.2317", "262", "exit without hesitation if broken")
    assert written.written and written.reason == "set" and written.previous is None
    (entry,) = (await trader.get()).entries
    assert (entry.key, entry.value, entry.reason) == (
        "stop_loss.2317", "262", "exit without hesitation if broken",
    )  # fmt: skip
    assert entry.set_at == START and entry.set_by == "trader" and not entry.expired


async def test_a_set_without_a_reason_is_refused(trader: WorkingState) -> None:
    with pytest.raises(InputError, match="reason is required"):
        await trader.set("stop_loss.2317", "262", "   ")
    assert (await trader.get()).entries == []


async def test_expected_value_mismatch_refuses_and_reports_the_current_value(
    trader: WorkingState,
) -> None:
    await trader.set("stop_loss.2317", "262", "pre-market plan")
    await trader.set("stop_loss.2317", "254", "-5% per the strategy document")
    refused = await trader.set("stop_loss.2317", "257", "review", expected_value="262")
    assert not refused.written and refused.reason == "conflict"
    assert refused.value == "254"
    assert [e.value for e in (await trader.get()).entries] == ["254"]


async def test_expected_value_match_writes(trader: WorkingState) -> None:
    await trader.set("position_cap", "96%", "keep a fee buffer")
    written = await trader.set("position_cap", "90%", "risk down", expected_value="96%")
    assert written.written and written.previous == "96%"


async def test_every_change_joins_the_chain_with_who_when_why_old_and_new(
    trader: WorkingState, clock: Clock
) -> None:
    await trader.set("stop_loss.2317", "262", "pre-market plan")
    clock.advance(hours=1)
    await trader.set("stop_loss.2317", "254", "patrol rule", by="patrol-7")
    clock.advance(hours=1)
    await trader.clear("stop_loss.2317", "position closed")
    chain = await trader.chain("stop_loss.2317")
    assert [(e.action, e.old_value, e.new_value, e.by, e.reason) for e in chain] == [
        ("set", None, "262", "trader", "pre-market plan"),
        ("set", "262", "254", "patrol-7", "patrol rule"),
        ("clear", "254", None, "trader", "position closed"),
    ]
    assert [e.at for e in chain] == [START, START + timedelta(hours=1), START + timedelta(hours=2)]


async def test_clear_removes_the_key_and_a_missing_key_is_not_found(trader: WorkingState) -> None:
    await trader.set("phase", "intraday", "market open")
    cleared = await trader.clear("phase", "market closed")
    assert cleared.written and cleared.previous == "intraday"
    assert (await trader.get()).entries == []
    missing = await trader.clear("phase", "again")
    assert not missing.written and missing.reason == "not_found"


async def test_get_returns_recent_history_newest_first(trader: WorkingState) -> None:
    for n in range(5):
        await trader.set("k", str(n), f"step {n}")
    view = await trader.get(history=3)
    assert [e.new_value for e in view.history] == ["4", "3", "2"]


# -- owners and agents ----------------------------------------------------------------------------


async def test_another_owner_or_agent_sees_nothing_and_cannot_overwrite(
    store: StaffStore, trader: WorkingState, clock: Clock
) -> None:
    await trader.set("stop_loss.2317", "262", "plan")
    other_owner = WorkingState(store, "globex", "trader", clock=clock)
    other_agent = WorkingState(store, "acme", "scout", clock=clock)
    assert (await other_owner.get()).entries == [] and (await other_agent.get()).entries == []
    assert await other_owner.section() == ""
    await other_owner.set("stop_loss.2317", "1", "theirs")
    await other_owner.clear("stop_loss.2317", "theirs")
    assert [e.value for e in (await trader.get()).entries] == ["262"]


# -- the cap --------------------------------------------------------------------------------------


async def test_a_new_key_at_the_cap_is_refused_listing_the_existing_keys(
    trader: WorkingState,
) -> None:
    keys = [f"rule.{n:02d}" for n in range(32)]
    for key in keys:
        assert (await trader.set(key, "1", "setup")).written
    refused = await trader.set("rule.32", "1", "one too many")
    assert not refused.written and refused.reason == "at_cap"
    assert refused.keys == keys
    assert (await trader.set("rule.05", "2", "an existing key still changes")).written


async def test_an_expired_key_does_not_count_toward_the_cap(
    store: StaffStore, clock: Clock
) -> None:
    small = WorkingState(store, "acme", "small", config=StateConfig(max_keys=2), clock=clock)
    await small.set("a", "1", "day rule", ttl_hours=1)
    await small.set("b", "1", "standing rule")
    assert (await small.set("c", "1", "new")).reason == "at_cap"
    clock.advance(hours=2)
    assert (await small.set("c", "1", "new")).written


# -- TTL ------------------------------------------------------------------------------------------


async def test_an_expired_key_is_marked_and_not_injected_but_stays_readable(
    trader: WorkingState, clock: Clock
) -> None:
    await trader.set("stop_loss.2317", "262", "intraday line", ttl_hours=4.5)
    await trader.set("position_cap", "96%", "standing")
    assert "stop_loss.2317 = 262" in await trader.section()
    clock.advance(hours=4, minutes=29)
    assert "stop_loss.2317 = 262" in await trader.section()
    clock.advance(minutes=1)
    section = await trader.section()
    assert "stop_loss.2317" not in section and "position_cap = 96%" in section
    entries = {e.key: e for e in (await trader.get()).entries}
    assert entries["stop_loss.2317"].expired and entries["stop_loss.2317"].value == "262"
    assert not entries["position_cap"].expired
    assert [e.action for e in await trader.chain("stop_loss.2317")] == ["set"]


async def test_a_ttl_must_be_positive(trader: WorkingState) -> None:
    with pytest.raises(InputError, match="ttl_hours"):
        await trader.set("k", "v", "why", ttl_hours=0)


# -- handoffs -------------------------------------------------------------------------------------


async def test_a_plain_handoff_collapses_whitespace_and_is_cut_at_1200_characters(
    trader: WorkingState,
) -> None:
    short = await trader.handoff("  patrolling   every 3 min;\n accounts   reconciled ")
    assert short.note == "patrolling every 3 min; accounts reconciled" and not short.truncated
    long = await trader.handoff("word " * 400)
    assert len(long.note) == 1200 and long.truncated
    assert (await trader.get()).handoff == long.model_copy(update={"truncated": False})


@pytest.mark.parametrize(
    ("fields", "problem"),
    [
        ({"next_steps": "report the total"}, "needs a status"),
        ({"status": "done", "evidence": "x"}, "continue, complete or blocked"),
        ({"status": "continue"}, "needs a non-empty next_steps"),
        ({"status": "continue", "next_steps": "  "}, "needs a non-empty next_steps"),
        ({"status": "continue", "next_steps": "go on", "blocker": "x"}, "must not have blocker"),
        ({"status": "complete"}, "needs a non-empty evidence"),
        ({"status": "complete", "evidence": "ok", "next_steps": "x"}, "must not have next_steps"),
        ({"status": "complete", "evidence": "ok", "blocker": "x"}, "must not have blocker"),
        ({"status": "blocked"}, "needs a non-empty blocker"),
    ],
)
async def test_a_structured_handoff_that_breaks_a_rule_is_rejected_whole(
    trader: WorkingState, fields: dict[str, str], problem: str
) -> None:
    await trader.handoff("the earlier note")
    with pytest.raises(InputError, match=problem):
        await trader.handoff("a new note", **fields)
    view = await trader.get()
    assert view.handoff is not None and view.handoff.note == "the earlier note"


@pytest.mark.parametrize(
    "fields",
    [
        {"status": "continue", "next_steps": "report the total", "evidence": "checked thrice"},
        {"status": "complete", "evidence": "ledger matched the bank three times"},
        {"status": "blocked", "blocker": "the broker API is down", "next_steps": "retry at 10"},
    ],
)
async def test_a_structured_handoff_that_keeps_the_rules_is_stored(
    trader: WorkingState, fields: dict[str, str]
) -> None:
    stored = await trader.handoff("end of patrol", **fields)
    assert stored.status == fields["status"]
    assert (await trader.get()).handoff == stored


async def test_a_structured_handoff_over_the_byte_cap_is_rejected_never_cut(
    trader: WorkingState,
) -> None:
    # 5,462 CJK characters are 16,386 UTF-8 bytes: under the cap in characters, over it in bytes.
    evidence = "帳" * 5_462
    assert len(evidence) < 16_384 < utf8_len(evidence)
    with pytest.raises(InputError, match="16386 bytes, over the 16384-byte cap"):
        await trader.handoff("", status="complete", evidence=evidence)
    assert (await trader.get()).handoff is None
    fits = "帳" * 5_000
    stored = await trader.handoff("", status="complete", evidence=fits)
    assert stored.evidence == fits


async def test_the_handoff_byte_cap_is_configurable(store: StaffStore, clock: Clock) -> None:
    tight = WorkingState(store, "acme", "t", config=StateConfig(handoff_max_bytes=10), clock=clock)
    with pytest.raises(InputError, match="over the 10-byte cap"):
        await tight.handoff("12345", status="blocked", blocker="678901")


# -- the section ----------------------------------------------------------------------------------


async def test_an_empty_state_injects_nothing(trader: WorkingState) -> None:
    assert await trader.section() == ""
    await trader.set("k", "v", "why")
    await trader.clear("k", "gone")
    assert await trader.section() == ""


async def test_the_section_marks_itself_authoritative_with_value_time_reason_expiry_handoff(
    trader: WorkingState, clock: Clock
) -> None:
    await trader.set("position_cap", "96%", "keep a buffer for the minimum fee")
    clock.advance(minutes=5)
    await trader.set("stop_loss.2317", "262", "exit if broken", ttl_hours=4)
    await trader.handoff(
        "patrolling every 3 min", status="continue", next_steps="report the total",
        evidence="ledger compared three times",
    )  # fmt: skip
    section = await trader.section()
    assert section.startswith("## Working state (authoritative current values)")
    assert "only authoritative current values" in section and "superseded" in section
    lines = section.splitlines()
    assert (
        "- stop_loss.2317 = 262 (set 2026-08-13 09:09 UTC; reason: exit if broken; "
        "until 2026-08-13 13:09 UTC)"
    ) in lines
    assert (
        "- position_cap = 96% (set 2026-08-13 09:04 UTC; reason: keep a buffer for the minimum fee)"
    ) in lines
    order = [line.split(" = ")[0] for line in lines if line.startswith("- ")]
    assert order == ["- stop_loss.2317", "- position_cap"]
    assert lines[-1] == (
        "Handoff (left 2026-08-13 09:09 UTC): patrolling every 3 min (status=continue; "
        "next steps: report the total; evidence: ledger compared three times)"
    )


async def test_the_section_never_passes_3_kb(trader: WorkingState, clock: Clock) -> None:
    for n in range(32):
        clock.advance(minutes=1)
        await trader.set(f"rule.{n:02d}", "価" * 200, "reason " * 40)
    await trader.handoff("", status="complete", evidence="証拠" * 2_000)
    section = await trader.section()
    assert 0 < utf8_len(section) <= 3_072
    assert "more keys and the handoff not shown here" in section
    # The most recently set keys are the ones shown.
    assert "rule.31 = " in section and "rule.00 = " not in section


async def test_a_long_handoff_is_cut_in_the_section_with_a_pointer(trader: WorkingState) -> None:
    await trader.set("phase", "close", "after 13:30")
    await trader.handoff("", status="complete", evidence="e" * 10_000)
    section = await trader.section()
    assert utf8_len(section) <= 3_072
    assert "- phase = close" in section and section.endswith(
        "[cut here; read the whole handoff with working-state get]"
    )
    stored = (await trader.get()).handoff
    assert stored is not None and stored.evidence == "e" * 10_000  # cut only in the prompt


def test_render_section_shortens_reasons_before_leaving_keys_out() -> None:
    from staffstore.state import StateEntry

    entries = [
        StateEntry(key=f"k{n}", value="v", reason="r" * 300, set_by="a", set_at=START)
        for n in range(8)
    ]
    section = render_section(entries, None, max_bytes=1_400)
    assert utf8_len(section) <= 1_400
    assert all(f"- k{n} = v" in section for n in range(8))
    assert "r" * 61 not in section


@pytest.mark.parametrize("value", ["two\nlines", "", "x" * 257, "tab\there"])
async def test_a_value_that_could_forge_a_prompt_line_is_refused(
    trader: WorkingState, value: str
) -> None:
    with pytest.raises(InputError):
        await trader.set("k", value, "why")


async def test_a_write_that_meets_another_writers_lock_is_store_busy(db_path: Path) -> None:
    async with StaffStore.open(db_path, lock_timeout=0.1) as store:
        state = WorkingState(store, "acme", "trader")
        holder = sqlite3.connect(db_path, isolation_level=None)
        holder.execute("BEGIN IMMEDIATE")
        try:
            with pytest.raises(StoreBusyError):
                await state.set("k", "v", "while another process writes")
        finally:
            holder.execute("ROLLBACK")
            holder.close()
        assert (await state.set("k", "v", "after the lock is gone")).written
