"""The workflow-runs replay: an hourly workflow that remembers its runs, bounded and scrubbed.

Three days (replays/workflow_runs.json) of an hourly ticket-triage workflow of three steps,
fetch, triage and notify, with its memory on: some runs fail (the fetch is refused, a lead
rejects the triage), one is cancelled, every third run remembers a lesson, and outputs, errors
and lessons carry secrets (a password from an environment variable the configuration names, a
token each run marks as secret, API keys by their shape; their values are made from the seed,
never written down). Each run reads and writes scoped state in all four namespaces. The triage
step's prompt is built by the real build_working_set with the step's memory; the notify step
reads its narrowed section (a smaller budget, no other workflow's lessons).

The replay keeps its own record, apart from the store, of every lesson recorded and every
scoped value written, and checks each run against it. Per run: the earlier lessons each
section carried (target: every one while they fit the budget; when they do not, the newest,
in order, and a cut marker), the section's size against its budget (never over), planted
secrets found anywhere in the database (its file and WAL on SQLite, every row's text on
PostgreSQL; target 0), and scoped reads that came back with another namespace's or another
owner's value (target 0). The ledger holds figures only: no text, no id, no secret.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from ..identity import content_hash
from ..memory import MemoryEntries, MemorySection, WorkflowMemory
from ..memory.section import HEADING, LESSONS_HEADING, lesson_line
from ..models import Turn
from ..state import ScopedState, ScopeRef
from ..state.secrets import Scrubber
from ..store import StaffStore
from ..store.memory_tables import LessonRow
from ..working_set import build_working_set
from .data import load
from .harness import ReplayError, ReplayOutput, StoreFor, store_at

DATA_FILE = "workflow_runs.json"
#: The working-set budget of the triage step's prompt: room enough that memory gets its own.
PROMPT_BUDGET = 4_000

DEFINITIONS = {
    "runs": "hourly runs of the workflow, each opened and finished through WorkflowMemory",
    "lessons_expected": "lessons recorded before the step read its section that the step may "
    "read (its own workflow's, and included workflows'), newest first",
    "carried": "those lessons the step's memory section showed",
    "runs_with_every_lesson": "runs whose section carried every lesson recorded before it",
    "runs_cut_newest_first": "runs whose section could not hold every lesson and carried the "
    "newest ones, in order, ending in a cut marker",
    "lesson_order_violations": "runs whose section showed lessons other than the newest ones "
    "in newest-first order (target 0)",
    "dropped_without_cut_marker": "runs whose section left a lesson out without a cut marker "
    "saying so (target 0)",
    "foreign_lessons_shown": "lessons of a workflow the step does not include, shown anyway "
    "(target 0)",
    "sections_over_budget": "sections with more tokens than their budget (target 0)",
    "secrets_found": "occurrences of a planted secret value anywhere in the database after "
    "the run: its file and WAL on SQLite, every row's text on PostgreSQL (target 0)",
    "scoped_reads": "scoped-state reads, each of one key in one namespace",
    "fallbacks": "reads that returned a value the replay's record says that namespace does not "
    "hold: another namespace's value, or one where none was written (target 0)",
    "other_owner_values": "reads that returned another owner's value (target 0)",
    "raw_records_max": "the most raw run records the workflow held at once (at most retain)",
}


def _secret(seed: int, kind: str, number: int = 0, length: int = 40) -> str:
    """A planted secret: made from the seed, never written anywhere but into the replay."""
    return content_hash({"seed": seed, "kind": kind, "n": number}, length=length)


@dataclass
class Secrets:
    """The planted values, by kind, and every one planted so far."""

    seed: int
    password: str
    planted: set[str] = field(default_factory=set)

    def api_key(self, number: int) -> str:
        value = "sk-or-v1-" + _secret(self.seed, "api-key", number, 48)
        self.planted.add(value)
        return value

    def webhook(self, number: int) -> str:
        value = "whk-" + _secret(self.seed, "webhook", number, 32)
        self.planted.add(value)
        return value


@dataclass
class Record:
    """What the replay knows the store holds, kept apart from the store."""

    lessons: dict[tuple[str, str], list[LessonRow]] = field(default_factory=dict)
    scoped: dict[tuple[str, str, str], str] = field(default_factory=dict)

    def lessons_of(self, workflows: list[tuple[str, str]]) -> list[LessonRow]:
        found = [row for name in workflows for row in self.lessons.get(name, [])]
        return sorted(found, key=lambda row: (row.created_at, row.id), reverse=True)


def _shown_lessons(text: str) -> list[str]:
    """The lesson lines of a section, in order."""
    lines = text.splitlines()
    if LESSONS_HEADING not in lines:
        return []
    start = lines.index(LESSONS_HEADING) + 1
    shown = []
    for line in lines[start:]:
        if not line.startswith("- ["):
            break
        shown.append(line)
    return shown


def judge(section: MemorySection, expected: list[str], foreign: list[str]) -> dict[str, Any]:
    """One section against the lesson lines the replay expects, newest first."""
    shown = _shown_lessons(section.text)
    in_order = shown == expected[: len(shown)]
    every = in_order and len(shown) == len(expected)
    marked = "[... memory cut to fit its budget" in section.text
    return {
        "lessons_expected": len(expected),
        "carried": len(shown),
        "every_lesson": every,
        "cut_newest_first": in_order and not every and marked,
        "order_violation": not in_order,
        "dropped_without_marker": len(shown) < len(expected) and not marked,
        "foreign_shown": sum(line in foreign for line in shown),
        "tokens": section.tokens,
        "budget": section.budget,
        "over_budget": section.tokens > section.budget,
    }


async def secrets_in_store(store: StaffStore, secrets: set[str]) -> int:
    """How many times the planted secrets occur in the database: the bytes of the SQLite file
    and its WAL, or every row of every table as text on PostgreSQL."""
    if not secrets:
        return 0
    if store.path is not None:
        found = 0
        for path in (store.path, Path(f"{store.path}-wal")):
            if path.exists():
                data = path.read_bytes()
                found += sum(data.count(value.encode("utf-8")) for value in secrets)
        return found

    def every_row(sync: Any) -> list[str]:
        tables = sync.fetchall(
            "SELECT table_name FROM information_schema.tables "
            "WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'"
        )
        texts: list[str] = []
        for (name,) in tables:
            rows = sync.fetchall(f'SELECT CAST(t AS TEXT) FROM "{name}" AS t')
            texts += [str(row[0]) for row in rows]
        return texts

    texts = await store.run_sync(every_row)
    return sum(text.count(value) for text in texts for value in secrets)


@dataclass
class _Play:
    store: StaffStore
    data: dict[str, Any]
    secrets: Secrets
    clock: list[datetime]
    record: Record = field(default_factory=Record)
    counts: Counter[str] = field(default_factory=Counter)

    def now(self) -> datetime:
        return self.clock[0]

    def tick(self, minutes: int = 1) -> None:
        self.clock[0] += timedelta(minutes=minutes)

    def memory(self, workflow: str, owner: str | None = None) -> WorkflowMemory:
        scrubber = Scrubber.from_env(
            [self.data["secret_env"]],
            environ={self.data["secret_env"]: self.secrets.password},
            guess=False,
        )
        return WorkflowMemory(
            self.store, owner or self.data["owner"], workflow, project=self.data["project"],
            scrubber=scrubber, clock=self.now,
        )  # fmt: skip

    def scoped(self, owner: str) -> ScopedState:
        return ScopedState(self.store, owner, scrubber=Scrubber(), clock=self.now)

    async def read(self, owner: str, where: ScopeRef, key: str) -> None:
        """Read one key and check it against the record (and against the other owner's)."""
        value = await self.scoped(owner).get(where, key)
        expected = self.record.scoped.get((owner, where.label, key))
        self.counts["scoped_reads"] += 1
        if value.value != expected:
            other = self.record.scoped.get((self.data["other_owner"], where.label, key))
            if value.value is not None and value.value == other:
                self.counts["other_owner_values"] += 1
            else:
                self.counts["fallbacks"] += 1

    async def write(self, owner: str, where: ScopeRef, key: str, value: str) -> None:
        written = await self.scoped(owner).set(where, key, value, by="replay")
        if not written.written:
            raise ReplayError(f"a scoped write was refused: {written.reason}")
        self.record.scoped[(owner, where.label, key)] = value


def _rule(rules: dict[str, int], name: str, number: int) -> bool:
    return number % rules[f"{name}_every"] == rules[f"{name}_at"]


async def _neighbours(play: _Play) -> None:
    """Hand-written lessons of two other workflows, the other owner's scoped state, and the
    workflow's settings."""
    data = play.data
    for workflow, lessons in data["neighbours"].items():
        memory = play.memory(workflow)
        for text in lessons:
            lesson = await memory.add(text)
            row = LessonRow(lesson.id, lesson.project, lesson.workflow, None, None, "hand",
                            lesson.body, lesson.created_at.timestamp(),
                            lesson.updated_at.timestamp())  # fmt: skip
            play.record.lessons.setdefault((data["project"], workflow), []).append(row)
            play.tick()
    triage = play.memory(data["workflow"])
    await triage.configure(**data["settings"])
    for step, settings in data["step_settings"].items():
        await triage.configure(step=step, **settings)
    # Another owner keeps keys of the same names, which no read of acme's may ever see.
    other = data["other_owner"]
    await play.write(other, ScopeRef.everything(), "owner_note", "globex's note")
    await play.write(other, ScopeRef.of_project(data["project"]), "heartbeat", "globex beat")
    await play.write(data["owner"], ScopeRef.everything(), "owner_note", "acme's note")


async def _run(play: _Play, number: int) -> dict[str, Any]:
    """One hourly run: scoped reads, the three steps, a lesson, a decision, its record."""
    data, rules, secrets = play.data, play.data["rules"], play.secrets
    owner, project, name = data["owner"], data["project"], data["workflow"]
    memory = play.memory(name)
    webhook = secrets.webhook(number)
    fetch = ScopeRef.of_step(name, "fetch", project)
    triage_step = ScopeRef.of_step(name, "triage", project)
    notify_step = ScopeRef.of_step(name, "notify", project)
    flow = ScopeRef.of_workflow(name, project)
    shared = ScopeRef.of_project(project)
    # Every namespace, and keys written in one namespace read from another: none falls back.
    for where, key in (
        (fetch, "last_id"), (flow, "last_id"), (triage_step, "last_success"),
        (flow, "last_success"), (shared, "heartbeat"), (notify_step, "heartbeat"),
        (ScopeRef.everything(), "owner_note"), (shared, "owner_note"),
    ):  # fmt: skip
        await play.read(owner, where, key)

    run = await memory.start_run({"hour": play.now().isoformat(), "queue": "support"})
    run.mark_secret(webhook)
    play.tick()
    status: str = "done"
    outcome: str | None = None
    tickets = 10 + number % 7
    if _rule(rules, "fetch_fails", number):
        run.step("fetch", "failed", error=(
            f"connection refused by db.internal as triage (password {secrets.password})"
        ))  # fmt: skip
        run.step("triage", "skipped")
        status, outcome = "failed", "no tickets fetched"
    else:
        output = f"fetched {tickets} tickets"
        if _rule(rules, "password_in_output", number):
            output += f" from postgresql://triage:{secrets.password}@db.internal/tickets"
        run.step("fetch", "done", output=output)
        await play.write(owner, fetch, "last_id", f"T-{1000 + number * 10 + tickets}")
        # The fetch step's memory is off: the remember tool is withheld there.
        if number % 6 == 1:
            refused = await run.remember("fetch noticed a slow page", step="fetch")
            play.counts["remember_refused" if not refused.stored else "remember_stored"] += 1
    play.tick()

    row: dict[str, Any] = {"run": number, "at": play.now().isoformat()}
    # The triage step's prompt, built by the real working set with its memory.
    own = (project, name)

    def lines(workflows: list[tuple[str, str]]) -> list[str]:
        return [lesson_line(lesson, own) for lesson in play.record.lessons_of(workflows)]

    expected, foreign = lines([own, (project, "deploy")]), lines([(project, "billing")])
    turn = Turn(owner=owner, text=f"Triage the support queue of {play.now():%Y-%m-%d %H}:00.",
                now=play.now())  # fmt: skip
    prompt = await build_working_set(
        play.store, turn, PROMPT_BUDGET, memory=memory.for_step("triage")
    )
    section = await memory.section("triage")
    carried = next((m.content for m in prompt.messages if m.content.startswith(HEADING)), "")
    if carried != section.text:
        raise ReplayError(f"run {number}: the prompt's memory section is not the step's")
    row["triage"] = judge(section, expected, foreign)
    row["prompt_memory_tokens"] = prompt.memory_tokens

    if status == "done":
        looked_up = secrets.api_key(number) if _rule(rules, "api_key_in_output", number) else None
        verdicts = f"{tickets // 3} bugs, {tickets - tickets // 3} questions"
        run.step(
            "triage",
            "done",
            output=verdicts + (f" (looked up with {looked_up})" if looked_up else ""),
        )
        if number % rules["decision_every"] == rules["rejected_at"]:
            run.decide("lead", "rejected", f"duplicate of T-{1000 + number}; token {webhook}")
            status, outcome = "failed", "triage rejected by the lead"
        elif number % rules["decision_every"] == rules["approved_at"]:
            run.decide("lead", "approved", "matches the queue")
    play.tick()

    if _rule(rules, "remember", number):
        text = data["lessons"][(number // rules["remember_every"]) % len(data["lessons"])]
        remembered = await run.remember(
            text.format(api_key=secrets.api_key(10_000 + number)), step="triage"
        )
        if remembered.lesson is None:
            raise ReplayError(f"run {number}: a lesson was not stored ({remembered.reason})")
        stored = remembered.lesson
        play.record.lessons.setdefault(own, []).append(
            LessonRow(stored.id, project, name, run.id, "triage", "remember", stored.body,
                      stored.created_at.timestamp(), stored.updated_at.timestamp())
        )  # fmt: skip
        play.counts["lessons_recorded"] += 1
    play.tick()

    # The notify step reads its narrowed section: a smaller budget, no included workflow.
    notify = await memory.section("notify")
    row["notify"] = judge(notify, lines([own]), lines([(project, "deploy")]))
    if status == "done" and _rule(rules, "cancelled", number):
        run.step("notify", "cancelled")
        status, outcome = "cancelled", "cancelled by the operator before notifying"
    elif status == "done":
        run.step("notify", "done", output=f"posted to https://hooks.internal/{webhook}")
        await play.write(owner, flow, "last_success", play.now().isoformat())
    await play.write(owner, shared, "heartbeat", f"{name}@{play.now():%Y-%m-%dT%H:%M}")
    play.tick()

    finished = await run.finish(status, outcome=outcome)
    row["status"] = status
    row["folded"] = finished.folded
    view = await memory.view()
    row["raw_records"] = view.runs
    row["runs_folded"] = view.runs_folded
    digest = next((entry for entry in view.entries if entry.kind == "digest"), None)
    row["digest_chars"] = len(digest.text) if digest is not None else 0
    row["secrets_found"] = await secrets_in_store(play.store, secrets.planted | {secrets.password})
    return row


def _step_summary(rows: list[dict[str, Any]], step: str) -> dict[str, Any]:
    judged = [row[step] for row in rows]
    tokens = [item["tokens"] for item in judged]
    return {
        "budget": judged[0]["budget"] if judged else 0,
        "runs_with_every_lesson": sum(item["every_lesson"] for item in judged),
        "runs_cut_newest_first": sum(item["cut_newest_first"] for item in judged),
        "lesson_order_violations": sum(item["order_violation"] for item in judged),
        "dropped_without_cut_marker": sum(item["dropped_without_marker"] for item in judged),
        "foreign_lessons_shown": sum(item["foreign_shown"] for item in judged),
        "sections_over_budget": sum(item["over_budget"] for item in judged),
        "lessons_carried_total": sum(item["carried"] for item in judged),
        "lessons_expected_total": sum(item["lessons_expected"] for item in judged),
        "section_tokens_max": max(tokens, default=0),
        "section_tokens_mean": round(sum(tokens) / len(tokens), 1) if tokens else 0.0,
    }


def _summary(rows: list[dict[str, Any]], counts: Counter[str], retain: int) -> dict[str, Any]:
    return {
        "runs": len(rows),
        "by_status": dict(sorted(Counter(row["status"] for row in rows).items())),
        "lessons_recorded": counts["lessons_recorded"],
        "remember_refused_at_a_step_with_memory_off": counts["remember_refused"],
        "triage": _step_summary(rows, "triage"),
        "notify": _step_summary(rows, "notify"),
        "secrets_found": sum(row["secrets_found"] for row in rows),
        "scoped_reads": counts["scoped_reads"],
        "fallbacks": counts["fallbacks"],
        "other_owner_values": counts["other_owner_values"],
        "retain": retain,
        "raw_records_max": max((row["raw_records"] for row in rows), default=0),
        "runs_folded": rows[-1]["runs_folded"] if rows else 0,
        "digest_chars_max": max((row["digest_chars"] for row in rows), default=0),
    }


async def play(
    workdir: Path, seed: int, quick: bool, store_for: StoreFor | None = None
) -> ReplayOutput:
    """Run the workflow-runs replay in `workdir` and return its spec and ledger."""
    data = load(DATA_FILE)
    count = data["quick_runs"] if quick else data["runs"]
    start = datetime.fromisoformat(data["start"])
    secrets = Secrets(seed, "pw-" + _secret(seed, "password", 0, 24))
    rows: list[dict[str, Any]] = []
    async with StaffStore.open(store_at(workdir, "workflow-runs.sqlite", store_for)) as store:
        player = _Play(store, data, secrets, [start - timedelta(minutes=30)])
        await _neighbours(player)
        for number in range(count):
            player.clock[0] = start + timedelta(minutes=data["every_minutes"] * number)
            rows.append(await _run(player, number))
        player.clock[0] += timedelta(minutes=10)
        # A lesson edited and one forgotten by hand leave nothing behind either.
        triage = player.memory(data["workflow"])
        view = await triage.view()
        lessons = [entry for entry in view.entries if entry.kind == "lesson"]
        entries = MemoryEntries(store, data["owner"], scrubber=Scrubber(), clock=player.now)
        if lessons:
            token = secrets.webhook(99_999)
            await entries.edit(lessons[0].id, f"edited by hand: {token}", secrets=[token])
            await entries.forget(lessons[-1].id)
        final_secrets = await secrets_in_store(store, secrets.planted | {secrets.password})
    summary = _summary(rows, player.counts, data["settings"]["retain"])
    summary["digest_chars_cap"] = data["settings"]["digest_chars"]
    summary["secrets_found"] += final_secrets
    summary["secrets_planted"] = len(secrets.planted) + 1
    spec = {
        "name": "workflow-runs", "seed": seed, "quick": quick, "data": f"replays/{DATA_FILE}",
        "owner": data["owner"], "project": data["project"], "workflow": data["workflow"],
        "runs": count, "start": data["start"], "every_minutes": data["every_minutes"],
        "settings": data["settings"], "step_settings": data["step_settings"],
        "rules": data["rules"], "prompt_budget": PROMPT_BUDGET,
        "secrets": "made from the seed at play time: a password in the environment variable "
        f"{data['secret_env']}, a webhook token each run marks as secret, API keys "
        "(sk-or-v1-...); never written to the spec or the ledger",
        "token_count": "four characters a token",
    }  # fmt: skip
    ledger = {
        "name": "workflow-runs", "seed": seed, "quick": quick, "definitions": DEFINITIONS,
        "summary": summary, "rows": rows,
    }  # fmt: skip
    return ReplayOutput(spec, ledger)
