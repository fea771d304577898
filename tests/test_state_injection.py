"""The working-state section in the bounded prompt: at the tail, authoritative, capped, absent
when empty; values only from explicit calls; agent state never in a prompt or a receipt."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from staffstore.models import ChatReply, Message, Turn
from staffstore.mouth import ensure_mouth
from staffstore.state import AgentState, Scope, WorkingState
from staffstore.state.section import HEADER
from staffstore.store import StaffStore
from staffstore.working_set import build_working_set

NOW = datetime(2026, 8, 13, 9, 30, tzinfo=UTC)
KEY = b"injection-scope-key-0123456789ab"


def _state(store: StaffStore, agent: str = "trader") -> WorkingState:
    return WorkingState(store, "acme", agent, clock=lambda: NOW)


async def _prompt(store: StaffStore, **turn: object) -> list[Message]:
    fields = {"owner": "acme", "text": "patrol: where is the stop-loss?", "now": NOW, **turn}
    return (await build_working_set(store, Turn.model_validate(fields))).messages


async def test_an_agent_without_working_state_gets_no_section(store: StaffStore) -> None:
    working_set = await build_working_set(store, Turn(owner="acme", text="hi", agent="trader"))
    assert working_set.working_state_bytes == 0
    assert all(HEADER not in m.content for m in working_set.messages)


async def test_the_section_sits_after_the_history_and_before_the_question(
    store: StaffStore,
) -> None:
    await _state(store).set("stop_loss.2317", "262", "exit if broken")
    session = await store.ensure_session("acme", "patrol")
    await store.append_messages(session, [("user", "earlier"), ("assistant", "reply")])
    messages = await _prompt(store, agent="trader", session="patrol")
    assert [m.role for m in messages] == ["system", "user", "assistant", "system", "user"]
    section = messages[-2].content
    assert section.startswith(HEADER) and "stop_loss.2317 = 262" in section
    assert messages[-1].content == "patrol: where is the stop-loss?"


async def test_the_section_is_the_turns_agents_only(store: StaffStore) -> None:
    await _state(store, "trader").set("stop_loss.2317", "262", "plan")
    await _state(store, "default").set("tone", "brief", "house style")
    trader = "\n".join(m.content for m in await _prompt(store, agent="trader"))
    default = "\n".join(m.content for m in await _prompt(store))
    assert "stop_loss.2317" in trader and "tone" not in trader
    assert "tone = brief" in default and "stop_loss" not in default


async def test_an_expired_key_leaves_the_prompt(store: StaffStore) -> None:
    await _state(store).set("stop_loss.2317", "262", "intraday", ttl_hours=1)
    later = NOW + timedelta(hours=2)
    messages = await _prompt(store, agent="trader", now=later)
    assert all("stop_loss" not in m.content for m in messages)


async def test_the_section_stays_under_3_kb_in_a_large_budget(store: StaffStore) -> None:
    state = _state(store)
    for n in range(32):
        await state.set(f"rule.{n:02d}", "v" * 250, "r" * 300)
    working_set = await build_working_set(
        store, Turn(owner="acme", text="q", agent="trader", now=NOW), budget=100_000
    )
    assert 0 < working_set.working_state_bytes <= 3_072
    assert working_set.tokens <= working_set.budget


async def test_a_small_budget_shrinks_the_section_to_fit(store: StaffStore) -> None:
    state = _state(store)
    for n in range(10):
        await state.set(f"rule.{n:02d}", "v" * 100, "because")
    working_set = await build_working_set(
        store, Turn(owner="acme", text="q", agent="trader", now=NOW), budget=400
    )
    assert working_set.tokens <= 400
    assert working_set.working_state_bytes <= 4 * 400 // 2


async def test_a_model_reply_never_changes_the_working_state(store: StaffStore) -> None:
    state = _state(store)
    await state.set("stop_loss.2317", "262", "plan")

    async def chat(messages: list[Message]) -> ChatReply:
        return ChatReply(text="New rule: stop_loss.2317 = 250. working_state_set stop_loss 250")

    await ensure_mouth(store, Turn(owner="acme", text="set a new stop", agent="trader"), chat)
    view = await state.get()
    assert [(e.key, e.value) for e in view.entries] == [("stop_loss.2317", "262")]
    assert len(view.history) == 1


async def test_agent_state_never_enters_a_prompt_or_a_receipt(store: StaffStore) -> None:
    states = AgentState(store, "acme", scope_key=KEY)
    await states.declare("trader", {"fields": {"note": {"type": "text"}},
                                    "agent_state": {"scope": "task"}})  # fmt: skip
    await states.put("trader", Scope(kind="task", id="t"), {"note": "AGENT-STATE-MARKER"})
    await _state(store).set("phase", "open", "market open")
    sent: list[Message] = []

    async def chat(messages: list[Message]) -> ChatReply:
        sent.extend(messages)
        return ChatReply(text="ok")

    result = await ensure_mouth(store, Turn(owner="acme", text="status?", agent="trader"), chat)
    assert any("phase = open" in m.content for m in sent)
    assert all("AGENT-STATE-MARKER" not in m.content for m in sent)
    assert "AGENT-STATE-MARKER" not in result.receipt.model_dump_json()
