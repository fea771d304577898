"""The long-session replay: does a miss's prompt still carry the facts a long session settled?

Two sessions of several hundred turns (one of 80 with `quick`). Early turns state facts (a
port, a name, a deadline, a limit, a region, ...); some are revised later (last wins); chatter
fills the rest. Every later turn that needs a fact builds the real working set (a main agent's
budgets) after the session's story is kept current as `ask` keeps it (mouth.py), and checks
that the prompt carries the fact's current value and none of its revised-away values. The same
turn is measured against two baselines: forwarding the whole transcript, and the last eight
messages alone. No gate and no model: the working set is what is measured.

The ledger is deterministic (the same on SQLite and PostgreSQL: tests/test_backends.py); how
long a build takes depends on the machine, so benchmarks/bench_long_session.py times it (its
numbers in ledgers/bench-long-session.json), playing the same sessions with `timed_builds`.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from ..models import Message, Turn, WorkingSet
from ..store import StaffStore
from ..working_set import ROLE_BUDGETS, approximate_tokens, build_working_set
from ..working_set.story import refresh_story
from .harness import OWNER, Clock, ReplayOutput, StoreFor, ledger_header, spec_header, store_at

CLOCK = Clock(datetime(2025, 9, 1, 9, 0, tzinfo=UTC), timedelta(minutes=1))
NAME = "long-session"
SESSIONS, TURNS = 2, 320
QUICK_SESSIONS, QUICK_TURNS = 1, 80
#: The turn whose prompt is compared with the whole transcript (and timed, by the benchmark).
MEASURED_TURN, QUICK_MEASURED_TURN = 300, 70
TAIL_ONLY = 8
BUDGETS = ROLE_BUDGETS["main"]


@dataclass(frozen=True)
class Fact:
    """A fact a session settles: how it is stated, how it is asked for, its values in turn."""

    key: str
    statement: str  # with {value}
    revision: str  # with {value}
    question: str
    values: tuple[str, ...]


# Each value is a token that appears nowhere else, so finding it in a prompt means the fact.
FACTS: tuple[Fact, ...] = (
    Fact("port", "The database port is {value}.", "Update: the database port is now {value}.",
         "Remind me, which database port are we on?", ("5433", "6544", "7655")),
    Fact("codename", "We decided to call the billing rewrite {value}.",
         "Change of plan: call the billing rewrite {value} instead.",
         "What do we call the billing rewrite?", ("Kestrel", "Osprey")),
    Fact("deadline", "The migration deadline is {value}.",
         "Heads up: the migration deadline is now {value}.",
         "When is the migration deadline?", ("March-14", "April-02")),
    Fact("retries", "The retry limit is {value} attempts.",
         "Correction: the retry limit is {value} attempts.",
         "How many retry attempts do we allow?", ("five-tries", "nine-tries")),
    Fact("region", "Our primary region is {value}.", "Update: our primary region is {value}.",
         "Which primary region do we deploy to?", ("eu-west-9", "us-east-7")),
    Fact("owner", "The on-call owner for payments is {value}.",
         "From now on: the on-call owner for payments is {value}.",
         "Who is the on-call owner for payments?", ("Priya-Natarajan", "Tomasz-Wilk")),
    Fact("queue", "The queue backend must be {value}.",
         "We switched: the queue backend must be {value}.",
         "Which queue backend must we use?", ("RabbitMQ-3", "NATS-2")),
    Fact("budget", "The monthly cloud budget cap is {value}.",
         "Revised: the monthly cloud budget cap is {value}.",
         "What is the monthly cloud budget cap?", ("USD-4100", "USD-5200")),
    Fact("freeze", "The code freeze starts at {value}.",
         "Update: the code freeze starts at {value}.",
         "When does the code freeze start?", ("18:30-UTC",)),
    Fact("schema", "The invoices table uses schema version {value}.",
         "Update: the invoices table uses schema version {value}.",
         "Which schema version does the invoices table use?", ("v41", "v42")),
    Fact("timeout", "The upstream timeout is {value}.",
         "Correction: the upstream timeout is {value}.",
         "What is the upstream timeout?", ("45-seconds",)),
    Fact("library", "We chose {value} for the charts.",
         "Change of plan: we chose {value} for the charts instead.",
         "Which library did we choose for the charts?", ("Vega-Lite", "Plotly-5")),
)  # fmt: skip

CHATTER_USER = (
    "Can you look at the logging output next?", "That test is flaky again, any idea why?",
    "Let's tidy the README before lunch.", "Please summarise what the linter complained about.",
    "I renamed a few helper functions, check they still read well.",
    "The dashboard looks slow this morning.", "Try the other approach for the parser.",
    "What do you think about splitting this module?", "Let's write a test for the edge case.",
    "OK, push that and let's move on.", "Could you explain the error in plain words?",
    "The reviewer asked for smaller commits.",
)  # fmt: skip
CHATTER_ASSISTANT = (
    "I looked at it: the output is noisy but nothing is failing.",
    "The flake comes from an ordering assumption in the fixture; sorting fixes it.",
    "Done: the README reads better now, with the install steps first.",
    "The linter wants shorter lines and one unused import removed.",
    "The names read well; one helper could say what it returns.",
    "Most of the time goes to one query without an index.",
    "The other approach is simpler and handles the nested case too.",
    "Splitting it by responsibility would help: parsing apart from printing.",
    "Added a test that feeds an empty line and expects no crash.",
    "Pushed. Moving on.", "It means the file was closed before the write finished.",
    "Agreed, smaller commits make the history easier to bisect.",
)  # fmt: skip


@dataclass(frozen=True)
class Step:
    """One scripted user turn: chatter, a statement (or revision) of a fact, or a need."""

    turn: int
    kind: str  # "chatter", "state", "revise", "need"
    text: str
    fact: str | None = None
    current: str | None = None
    revised_away: tuple[str, ...] = ()

    def spec(self) -> dict[str, Any]:
        return {"turn": self.turn, "kind": self.kind, "text": self.text, "fact": self.fact,
                "current": self.current, "revised_away": list(self.revised_away)}  # fmt: skip


def script(rng: random.Random, turns: int) -> list[Step]:
    """A session: each fact stated early, revised (when it has more values) in the middle,
    needed at random later turns; chatter between."""
    plan: dict[int, tuple[str, Fact, int]] = {}
    early = rng.sample(range(3, max(turns // 5, len(FACTS) + 3)), len(FACTS))
    for fact, at in zip(FACTS, early, strict=True):
        plan[at] = ("state", fact, 0)
        revise_at = at
        for index in range(1, len(fact.values)):
            revise_at = rng.randrange(max(revise_at + 10, turns // 3), turns * 2 // 3)
            while revise_at in plan:
                revise_at += 1
            plan[revise_at] = ("revise", fact, index)
    free = [t for t in range(turns // 4, turns + 1) if t not in plan]
    for at in rng.sample(free, min(len(free), turns // 8)):
        plan[at] = ("need", rng.choice(FACTS), -1)
    steps: list[Step] = []
    said: dict[str, int] = {}
    for turn in range(1, turns + 1):
        if turn not in plan:
            steps.append(Step(turn, "chatter", rng.choice(CHATTER_USER)))
            continue
        kind, fact, index = plan[turn]
        if kind == "need":
            if fact.key not in said:
                steps.append(Step(turn, "chatter", rng.choice(CHATTER_USER)))
                continue
            now = said[fact.key]
            steps.append(
                Step(turn, "need", fact.question, fact.key, fact.values[now], fact.values[:now])
            )
            continue
        said[fact.key] = index
        template = fact.statement if kind == "state" else fact.revision
        text = template.format(value=fact.values[index])
        steps.append(Step(turn, kind, text, fact.key, fact.values[index], fact.values[:index]))
    return steps


def _reply(step: Step, rng: random.Random) -> str:
    """The assistant's answer: an acknowledgement of a fact (restating nothing: the user's
    message is the record), else two or three sentences of work, as an agent's replies run."""
    if step.kind in ("state", "revise"):
        return "Noted, I will keep that in mind for the rest of the work."
    return " ".join(rng.sample(CHATTER_ASSISTANT, rng.randint(2, 3)))


def _prompt_text(messages: list[Message]) -> str:
    return "\n".join(m.content for m in messages[:-1])  # the turn itself is not the context


def _carries(text: str, step: Step) -> tuple[bool, bool]:
    assert step.current is not None
    return step.current in text, any(value in text for value in step.revised_away)


def _overruns(working_set: WorkingSet) -> int:
    over = sum(
        1
        for part, ceiling in working_set.part_budgets.items()
        if working_set.part_tokens.get(part, 0) > ceiling
    )
    return over + (working_set.tokens > working_set.budget)


async def play_session(
    store: StaffStore,
    name: str,
    steps: list[Step],
    rng: random.Random,
    measured_turn: int,
    timed_builds: int = 0,
) -> tuple[list[dict[str, Any]], dict[str, Any], list[float]]:
    """Play one session; return its need rows, its measured turn's figures, and the
    milliseconds of `timed_builds` builds of the measured turn's working set (none: [])."""
    session_id = await store.ensure_session(OWNER, name, now=CLOCK.at(1))
    transcript: list[str] = []
    rows: list[dict[str, Any]] = []
    measured: dict[str, Any] = {}
    timings: list[float] = []
    for step in steps:
        now = CLOCK.at(step.turn)
        turn = Turn(owner=OWNER, text=step.text, session=name, now=now)
        if step.kind == "need" or step.turn == measured_turn:
            await refresh_story(store, OWNER, name, now=now)  # as ensure_mouth does on a turn
            started = time.perf_counter()
            working_set = await build_working_set(store, turn, BUDGETS)
            elapsed = (time.perf_counter() - started) * 1000.0
            whole = sum(approximate_tokens(t) for t in [*transcript, step.text])
            if step.kind == "need":
                ours = _carries(_prompt_text(working_set.messages), step)
                tail_only = _carries("\n".join(transcript[-TAIL_ONLY:]), step)
                everything = _carries("\n".join(transcript), step)
                rows.append({
                    "session": name, "turn": step.turn, "fact": step.fact,
                    "current": step.current, "revised_away": list(step.revised_away),
                    "working_set": {"present": ours[0], "revised_away": ours[1],
                                    "tokens": working_set.tokens},
                    "tail_only": {"present": tail_only[0], "revised_away": tail_only[1]},
                    "whole_transcript": {"present": everything[0],
                                         "revised_away": everything[1], "tokens": whole},
                    "part_tokens": working_set.part_tokens,
                    "overruns": _overruns(working_set),
                })  # fmt: skip
            if step.turn == measured_turn:
                measured = {
                    "session": name, "turn": step.turn, "working_set_tokens": working_set.tokens,
                    "whole_transcript_tokens": whole,
                    "share_of_whole": round(working_set.tokens / whole, 4),
                    "tail_only_tokens": sum(approximate_tokens(t) for t in
                                            [*transcript[-TAIL_ONLY:], step.text]),
                    "part_tokens": working_set.part_tokens,
                    "part_budgets": working_set.part_budgets,
                    "budget": working_set.budget,
                    "overruns": _overruns(working_set),
                }  # fmt: skip
                timings += [elapsed] if timed_builds else []
                for _ in range(timed_builds - 1):
                    started = time.perf_counter()
                    await build_working_set(store, turn, BUDGETS)
                    timings.append((time.perf_counter() - started) * 1000.0)
        reply = _reply(step, rng)
        await store.append_messages(session_id, [("user", step.text), ("assistant", reply)],
                                    now=now)  # fmt: skip
        transcript += [step.text, reply]
    return rows, measured, timings


def _share(rows: list[dict[str, Any]], way: str, field: str) -> float:
    return round(sum(1 for r in rows if r[way][field]) / len(rows), 4) if rows else 0.0


def summarize(rows: list[dict[str, Any]], measured: list[dict[str, Any]]) -> dict[str, Any]:
    """The replay's figures, and whether each target holds."""
    revised = [r for r in rows if r["revised_away"]]
    worst_share = max(m["share_of_whole"] for m in measured)
    summary = {
        "needs": len(rows),
        "needs_after_a_revision": len(revised),
        "working_set_present_rate": _share(rows, "working_set", "present"),
        "working_set_revised_away": sum(1 for r in rows if r["working_set"]["revised_away"]),
        "tail_only_present_rate": _share(rows, "tail_only", "present"),
        "tail_only_revised_away": sum(1 for r in rows if r["tail_only"]["revised_away"]),
        "whole_transcript_present_rate": _share(rows, "whole_transcript", "present"),
        "whole_transcript_revised_away": sum(
            1 for r in rows if r["whole_transcript"]["revised_away"]
        ),
        "measured_turn_share_of_whole": worst_share,
        "budget_overruns": sum(r["overruns"] for r in rows) + sum(m["overruns"] for m in measured),
    }
    summary["targets"] = {
        "present_at_least_95_percent": summary["working_set_present_rate"] >= 0.95,
        "revised_away_in_none": summary["working_set_revised_away"] == 0,
        "measured_turn_at_most_15_percent_of_whole": worst_share <= 0.15,
        "no_budget_overrun": summary["budget_overruns"] == 0,
    }
    return summary


def sessions(seed: int, quick: bool) -> list[tuple[str, list[Step]]]:
    """The replay's sessions: their names and scripts."""
    count, turns = (QUICK_SESSIONS, QUICK_TURNS) if quick else (SESSIONS, TURNS)
    return [
        (f"long-{n + 1}", script(random.Random(f"{NAME}:{seed}:{n}"), turns)) for n in range(count)
    ]


def replies(seed: int, number: int) -> random.Random:
    """The generator of session `number`'s assistant replies."""
    return random.Random(f"{NAME}:{seed}:replies:{number}")


async def play(
    workdir: Path, seed: int, quick: bool, store_for: StoreFor | None = None
) -> ReplayOutput:
    """Run the long-session replay in `workdir` and return its spec and ledger."""
    measured_turn = QUICK_MEASURED_TURN if quick else MEASURED_TURN
    scripts = sessions(seed, quick)
    rows: list[dict[str, Any]] = []
    measured: list[dict[str, Any]] = []
    async with StaffStore.open(store_at(workdir, "long-session.sqlite", store_for)) as store:
        for number, (name, steps) in enumerate(scripts):
            found, figures, _ = await play_session(
                store, name, steps, replies(seed, number), measured_turn
            )
            rows += found
            measured.append(figures)
    spec = {
        **spec_header(NAME, seed, quick, CLOCK),
        "budgets": BUDGETS.model_dump(),
        "measured_turn": measured_turn,
        "tail_only_messages": TAIL_ONLY,
        "sessions": [{"name": name, "steps": [s.spec() for s in steps]} for name, steps in scripts],
    }
    ledger = {
        **ledger_header(NAME, seed, quick),
        "summary": summarize(rows, measured),
        "measured": measured,
        "rows": rows,
    }
    return ReplayOutput(spec, ledger)
