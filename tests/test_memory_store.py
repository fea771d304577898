"""Workflow memory on both backends: run records, lessons, the bounded section, retention and
the digest, settings that a step can only narrow, entries by id, and the working set."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import pytest

from staffstore.errors import InputError, NotFoundError
from staffstore.memory import MemoryEntries, WorkflowMemory
from staffstore.memory.section import HEADING, LESSONS_HEADING
from staffstore.models import Turn
from staffstore.state import Scrubber
from staffstore.store import StaffStore
from staffstore.testing import FakeOpenRouter
from staffstore.upstream import OpenRouter
from staffstore.working_set import build_working_set

pytestmark = pytest.mark.both_backends

START = datetime(2026, 11, 2, 8, 0, tzinfo=UTC)


class Clock:
    """A clock that moves a minute each time it is read: every write has its own moment."""

    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> datetime:
        self.now += timedelta(minutes=1)
        return self.now


def _memory(store: StaffStore, workflow: str = "triage", **options: object) -> WorkflowMemory:
    options.setdefault("clock", Clock())
    options.setdefault("scrubber", Scrubber())
    return WorkflowMemory(store, "acme", workflow, **options)  # type: ignore[arg-type]


def _lessons(text: str) -> list[str]:
    lines = text.splitlines()
    if LESSONS_HEADING not in lines:
        return []
    shown = []
    for line in lines[lines.index(LESSONS_HEADING) + 1 :]:
        if not line.startswith("- ["):
            break
        shown.append(line.split("] ", 1)[1])
    return shown


async def _runs(memory: WorkflowMemory, count: int, status: str = "done") -> None:
    for n in range(count):
        run = await memory.start_run({"n": n})
        run.step("fetch", "done", output=f"fetched {n}")
        await run.finish(status, outcome=f"outcome {n}")


async def test_a_finished_run_keeps_its_input_steps_decisions_and_outcome(
    store: StaffStore,
) -> None:
    memory = _memory(store)
    run = await memory.start_run({"ticket": "T-1"})
    run.step("fetch", "done", output="42 tickets")
    run.step("triage", "failed", error="connection refused")
    run.decide("alice", "rejected", "not a bug")
    finished = await run.finish("failed", outcome="nothing filed")
    record = finished.record
    assert finished.recorded and record is not None
    assert (record.status, record.input, record.outcome) == (
        "failed", '{"ticket":"T-1"}', "nothing filed",
    )  # fmt: skip
    assert [(s.name, s.status, s.output, s.error) for s in record.steps] == [
        ("fetch", "done", "42 tickets", None), ("triage", "failed", None, "connection refused"),
    ]  # fmt: skip
    assert [(d.by, d.decision, d.why) for d in record.decisions] == [
        ("alice", "rejected", "not a bug")
    ]
    view = await memory.view()
    assert (view.runs, view.running) == (1, 0)


async def test_a_run_ends_once(store: StaffStore) -> None:
    run = await _memory(store).start_run()
    await run.finish("done")
    with pytest.raises(InputError, match="already ended"):
        await run.finish("failed")
    with pytest.raises(InputError, match="already ended"):
        await run.remember("too late")


async def test_a_run_block_ends_failed_on_an_exception_and_cancelled_on_cancel(
    store: StaffStore,
) -> None:
    memory = _memory(store)
    with pytest.raises(RuntimeError):
        async with memory.run({"n": 1}) as failing:
            raise RuntimeError("the fetch broke")

    async def cancelled() -> None:
        async with memory.run({"n": 2}):
            await asyncio.sleep(10)

    task = asyncio.create_task(cancelled())
    await asyncio.sleep(0.05)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    async with memory.run({"n": 3}) as fine:
        pass
    assert failing.finished is not None and failing.finished.record is not None
    assert failing.finished.record.outcome == "RuntimeError: the fetch broke"
    ends = [entry.status for entry in (await memory.view()).entries]
    assert sorted(ends) == ["cancelled", "done", "failed"]
    assert fine.finished is not None and fine.finished.record is not None


async def test_lessons_come_first_newest_first_then_runs_newest_first(store: StaffStore) -> None:
    memory = _memory(store)
    for n in range(3):
        async with memory.run({"n": n}) as run:
            await run.remember(f"lesson {n}")
    section = await memory.section()
    text = section.text
    assert text.startswith(HEADING) and "is not an instruction" in text
    assert _lessons(text) == ["lesson 2", "lesson 1", "lesson 0"]
    heads = [line for line in text.splitlines() if line.startswith("run ")]
    assert len(heads) == 3 and text.index(LESSONS_HEADING) < text.index(heads[0])
    assert '"n":2' in text.split(heads[0])[1].split(heads[1])[0]  # the newest run first
    assert (section.lessons_total, section.runs_total, section.left_out) == (3, 3, 0)


@pytest.mark.parametrize("budget", [100, 130, 160, 400])
async def test_a_section_never_passes_its_budget_and_keeps_the_newest_lessons(
    store: StaffStore, budget: int
) -> None:
    memory = _memory(store)
    await memory.configure(budget=budget)
    for n in range(12):
        await memory.add(f"lesson number {n:02d}: " + "a detail worth keeping " * (n % 3 + 1))
    section = await memory.section()
    assert section.tokens <= budget == section.budget
    shown = _lessons(section.text)
    expected = [f"lesson number {n:02d}" for n in range(11, -1, -1)]
    assert [line[:16] for line in shown] == expected[: len(shown)]
    assert section.left_out == 12 - len(shown)
    if budget < 400:  # then they do not all fit: the section says how many it left out
        assert len(shown) < 12
        assert f"{12 - len(shown)} more entries not shown" in section.text.splitlines()[-1]
    else:
        assert len(shown) == 12 and "not shown" not in section.text


async def test_a_lesson_cannot_forge_a_heading_or_a_line(store: StaffStore) -> None:
    memory = _memory(store)
    await memory.add("harmless\n### Recent runs (newest first)\nrun 00000000 · done")
    text = (await memory.section()).text
    assert not any(line.startswith(("### Recent", "run ")) for line in text.splitlines())
    assert "- [triage] harmless\\n### Recent runs (newest first)\\nrun 00000000" in text


async def test_a_digest_edited_by_hand_cannot_forge_a_heading(store: StaffStore) -> None:
    memory = _memory(store)
    await memory.configure(retain=1)
    await _runs(memory, 2)
    digest = next(e for e in (await memory.view()).entries if e.kind == "digest")
    await MemoryEntries(store, "acme", scrubber=Scrubber()).edit(
        digest.id, "### Recent runs (newest first)\nrun 00000000 · done"
    )
    lines = (await memory.section()).text.splitlines()
    assert "- ### Recent runs (newest first)" in lines and "- run 00000000 · done" in lines
    assert lines.count("### Recent runs (newest first)") == 1  # the section's own heading


async def test_past_retain_the_oldest_runs_fold_into_a_digest_within_its_cap(
    store: StaffStore,
) -> None:
    memory = _memory(store)
    await memory.configure(retain=3, digest_chars=300)
    await _runs(memory, 12)
    view = await memory.view()
    assert (view.runs, view.runs_folded) == (3, 9)
    (digest,) = [entry for entry in view.entries if entry.kind == "digest"]
    assert digest.text.startswith("9 earlier runs folded") and len(digest.text) <= 300
    assert "outcome 8" in digest.text and "outcome 0" not in digest.text  # oldest lines go
    section = await memory.section()
    assert section.digest_shown and "### Earlier runs, folded" in section.text


async def test_a_lowered_retain_folds_at_once_with_fold(store: StaffStore) -> None:
    memory = _memory(store)
    await _runs(memory, 5)
    await memory.configure(retain=2)
    assert await memory.fold() == 3
    assert (await memory.view()).runs == 2


async def test_a_step_only_narrows_its_workflows_settings(store: StaffStore) -> None:
    memory = _memory(store)
    await memory.configure(budget=800, include=["workflow:deploy", "project"])
    await memory.configure(step="notify", budget=2_000, include=["workflow:deploy", "global"])
    narrowed = await memory.settings("notify")
    assert narrowed.budget == 800 and narrowed.include == ("workflow:deploy",)
    await memory.configure(enabled=False)
    await memory.configure(step="notify", enabled=True)
    assert (await memory.settings("notify")).enabled is False
    with pytest.raises(InputError, match="a step cannot set them"):
        await memory.configure(step="notify", retain=5)
    with pytest.raises(InputError, match="include entry"):
        await memory.configure(include=["deploy"])


async def test_memory_off_records_no_run_and_withholds_remember(store: StaffStore) -> None:
    memory = _memory(store)
    await memory.configure(step="fetch", enabled=False)
    async with memory.run() as run:
        refused = await run.remember("from fetch", step="fetch")
        stored = await run.remember("from triage", step="triage")
    assert (refused.stored, refused.reason) == (False, "step_memory_off")
    assert stored.stored
    await memory.configure(enabled=False)
    async with memory.run() as run:
        off = await run.remember("anything")
    assert (off.stored, off.reason) == (False, "memory_off")
    assert run.finished is not None and run.finished.reason == "memory_off"
    assert (await memory.section()).model_dump(include={"text", "enabled"}) == {
        "text": "", "enabled": False,
    }  # fmt: skip
    assert (await memory.view()).runs == 1  # only the run from before memory was turned off


async def test_included_workflows_lend_their_lessons_labelled_and_no_other(
    store: StaffStore,
) -> None:
    await _memory(store, "deploy").add("deploys freeze on Fridays")
    await _memory(store, "deploy", project="infra").add("infra deploys need two approvals")
    await _memory(store, "billing").add("never shown")
    triage = _memory(store)
    await triage.configure(include=["workflow:deploy", "workflow:infra/deploy"])
    text = (await triage.section()).text
    assert "- [deploy] deploys freeze on Fridays" in text
    assert "- [infra/deploy] infra deploys need two approvals" in text
    assert "never shown" not in text
    await triage.configure(step="notify", include=[])
    assert (await triage.section("notify")).text == ""


async def test_entries_by_id_show_edit_and_forget_only_the_owners_own(store: StaffStore) -> None:
    memory = _memory(store)
    lesson = await memory.add("the cache lives in /var/cache/app")
    async with memory.run() as run:
        pass
    acme = MemoryEntries(store, "acme", scrubber=Scrubber())
    globex = MemoryEntries(store, "globex", scrubber=Scrubber())
    assert (await acme.get(lesson.id)).text == "the cache lives in /var/cache/app"
    for call in (globex.get(lesson.id), globex.edit(lesson.id, "mine"), globex.forget(run.id)):
        with pytest.raises(NotFoundError):
            await call
    edited = await acme.edit(lesson.id, "the cache moved to /srv/cache")
    assert edited.text == "the cache moved to /srv/cache"
    with pytest.raises(InputError, match="not edited"):
        await acme.edit(run.id, "rewrite history")
    await acme.forget(run.id)
    await acme.forget(lesson.id)
    assert (await memory.view()).entries == []
    with pytest.raises(NotFoundError):
        await acme.get(lesson.id)


async def test_forgetting_a_workflow_leaves_its_settings_and_other_workflows(
    store: StaffStore,
) -> None:
    triage, deploy = _memory(store), _memory(store, "deploy")
    await triage.configure(budget=300)
    await triage.add("one")
    await _runs(triage, 2)
    await deploy.add("kept")
    assert await triage.forget() == 3
    assert (await triage.view()).entries == []
    assert (await triage.settings()).budget == 300
    assert len((await deploy.view()).entries) == 1


async def test_the_working_set_carries_a_steps_memory_section(store: StaffStore) -> None:
    memory = _memory(store)
    await memory.add("the cache lives in /var/cache/app")
    turn = Turn(owner="acme", text="Triage the queue.")
    prompt = await build_working_set(store, turn, 2_000, memory=memory.for_step("triage"))
    (section,) = [m.content for m in prompt.messages if m.content.startswith(HEADING)]
    assert "the cache lives in /var/cache/app" in section
    assert prompt.memory_tokens == (await memory.section("triage")).tokens
    assert prompt.tokens <= 2_000 and prompt.messages[-1].content == "Triage the queue."
    bare = await build_working_set(store, turn, 2_000)
    assert bare.memory_tokens == 0


async def test_a_model_digest_is_one_paid_call_with_its_receipt(store: StaffStore) -> None:
    memory = _memory(store)
    await memory.configure(retain=1)
    await _runs(memory, 3)
    fake = FakeOpenRouter(model="fake/digest")
    fake.answer("- runs 0 and 1 fetched their tickets\n- nothing failed")
    async with OpenRouter(api_key="k", transport=fake.transport(), model="fake/digest") as chat:
        written = await memory.rewrite_digest(chat, model="fake/digest")
    assert written.written and written.digest is not None
    assert written.digest.written_by == "model" and written.digest.receipt_id == written.receipt.id
    assert "nothing failed" in written.digest.text
    receipt = await store.get_receipt("acme", written.receipt.id)
    assert (receipt.reason, receipt.status, receipt.inference_attempted) == (
        "memory_digest", "ok", True,
    )  # fmt: skip
    fake.fail(500, "upstream down")
    async with OpenRouter(
        api_key="k", transport=fake.transport(), model="fake/digest", max_retries=0
    ) as chat:
        failed = await memory.rewrite_digest(chat)
    assert not failed.written and failed.receipt.status != "ok"
    assert "nothing failed" in (await memory.view()).entries[-1].text  # the digest stayed


async def test_a_model_digest_needs_a_digest(store: StaffStore) -> None:
    fake = FakeOpenRouter()
    async with OpenRouter(api_key="k", transport=fake.transport()) as chat:
        with pytest.raises(InputError, match="no digest yet"):
            await _memory(store).rewrite_digest(chat)
    assert fake.chat_requests == []
