"""The wakeups replay: one agent woken many times a day, its rules kept in working state.

Three trading days (replays/wakeups.json) of a resident agent: a morning plan, a patrol every 3
minutes while the market is open, a post-close review and an evening review, each a new
invocation with no shared history. The rules change only through scripted working-state calls
(some with a TTL, some compare-and-swaps by two patrols at the same minute, one by a stale
patrol). Every wake-up's prompt is built by the real ensure_mouth and build_working_set against
a temporary store, and the replay reads the working-state lines out of it and checks them
against its own record of what each rule is at that minute, kept apart from the store. The
figures: wake-ups whose prompt carried a superseded (replaced, expired or cleared) value,
target 0, and the prompt bytes the section cost. For contrast it also counts the wake-ups
whose prompt would have carried a superseded value had it read the last notes instead (the
seed's failure: every rule written down as a note, rivals and all).
"""

from __future__ import annotations

import random
import re
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta
from itertools import groupby
from pathlib import Path
from typing import Any

from ..models import Turn
from ..mouth import ensure_mouth
from ..state import AgentState, Scope, WorkingState
from ..state.section import HEADER
from ..store import StaffStore
from .data import load
from .harness import MOUTH_SPEC, ReplayError, ReplayMouth, ReplayOutput, StoreFor, store_at

DATA_FILE = "wakeups.json"
#: The agent-state key of the replay: the code's own patrol counter lives under it.
SCOPE_KEY = b"wakeups-replay-scope-key-0000000"
AGENT_STATE_MARK = "AGENT-STATE-"
SECTION_CAP = 3_072
QUICK_EVERY_MINUTES = 15
_LINE = re.compile(r"^- (\S+) = (.*) \(set \d{4}-\d\d-\d\d \d\d:\d\d UTC; reason: ")

DEFINITIONS = {
    "wakeups": "invocations of the agent; each builds its own prompt, with no shared history",
    "prompts_with_section": "wake-ups whose prompt carried a working-state section",
    "prompts_with_superseded_value": "wake-ups whose prompt showed a key with a value other "
    "than its current one, or a key past its TTL or cleared (target 0)",
    "prompts_missing_a_current_value": "wake-ups whose prompt left out a key that was current "
    "(target 0)",
    "prompts_with_agent_state": "wake-ups whose prompt carried any of the agent state the "
    "patrols' code wrote (target 0)",
    "section_bytes_total": "UTF-8 bytes of the working-state sections of every prompt",
    "section_bytes_max": "the largest section (the cap is 3,072 bytes)",
    "section_share_of_prompt_bytes": "section bytes / all prompt bytes",
    "writes_as_predicted": "working-state writes whose outcome (stored or refused) is what the "
    "replay's own record predicts / all writes",
    "expired_keys_left_out": "(wake-up, key) pairs where a key past its TTL was still stored "
    "and the prompt rightly did not show it",
    "notes_baseline_prompts_with_superseded_value": "wake-ups whose prompt would have carried a "
    "superseded value had it carried the last notes_read notes instead of the section (every "
    "attempted change written down as a note, as in the seed)",
}


@dataclass
class Record:
    """What the replay knows each rule to be, kept apart from the store."""

    values: dict[str, tuple[str, datetime | None]] = field(default_factory=dict)

    def current(self, now: datetime) -> dict[str, str]:
        return {
            key: value
            for key, (value, until) in self.values.items()
            if until is None or until > now
        }

    def expired(self, now: datetime) -> list[str]:
        return sorted(k for k, (_, until) in self.values.items() if until and until <= now)

    def set(self, key: str, value: str, expect: str | None, until: datetime | None) -> bool:
        """Apply a set as the rules say (a compare-and-swap against the stored value, expired
        or not); return whether it is stored."""
        stored = self.values.get(key)
        if expect is not None and (stored is None or stored[0] != expect):
            return False
        self.values[key] = (value, until)
        return True

    def clear(self, key: str) -> bool:
        return self.values.pop(key, None) is not None


def _at(day: date, clock: str) -> datetime:
    later, _, hhmm = clock.rpartition(" ")
    hours, minutes = (int(part) for part in hhmm.split(":"))
    moment = datetime.combine(day, time(hours, minutes), tzinfo=UTC)
    return moment + timedelta(days=int(later.strip("+d")) if later else 0)


def _schedule(data: dict[str, Any], quick: bool) -> list[dict[str, Any]]:
    """Every wake-up in time order: the scripted ones and the routine patrols between them."""
    patrol = data["patrol"]
    every = QUICK_EVERY_MINUTES if quick else patrol["every_minutes"]
    days = data["days"][:1] if quick else data["days"]
    wakeups: list[dict[str, Any]] = []
    for entry in days:
        day = date.fromisoformat(entry["date"])
        for scripted in entry["wakeups"]:
            wakeups.append({**scripted, "when": _at(day, scripted["at"]), "day": day})
        moment, last = _at(day, patrol["from"]), _at(day, patrol["to"])
        while moment <= last:
            text = patrol["text"].format(time=moment.strftime("%H:%M"))
            wakeups.append({"kind": "patrol", "text": text, "actions": [], "when": moment,
                            "day": day})  # fmt: skip
            moment += timedelta(minutes=every)
    wakeups.sort(key=lambda w: w["when"])
    for wakeup in wakeups:
        wakeup["text"] = wakeup["text"].format(date=wakeup["day"].isoformat())
    return wakeups


def _shown(messages: list[Any]) -> tuple[dict[str, str], int]:
    """The working-state lines of a prompt as {key: value}, and the section's UTF-8 bytes."""
    for message in messages:
        if message.content.startswith(HEADER):
            lines = message.content.splitlines()
            shown = {m.group(1): m.group(2) for line in lines if (m := _LINE.match(line))}
            return shown, len(message.content.encode("utf-8"))
    return {}, 0


@dataclass
class _Play:
    """One play of the script: the store, the mouth, the record and the running counts."""

    store: StaffStore
    owner: str
    agent: str
    notes_read: int
    mouth: ReplayMouth = field(default_factory=ReplayMouth)
    record: Record = field(default_factory=Record)
    notes: list[tuple[str, str | None]] = field(default_factory=list)
    patrols: Counter[str] = field(default_factory=Counter)
    writes: Counter[str] = field(default_factory=Counter)

    async def prompt(self, number: int, wakeup: dict[str, Any]) -> dict[str, Any]:
        now = wakeup["when"]
        turn = Turn(owner=self.owner, text=wakeup["text"], agent=self.agent, now=now)
        result = await ensure_mouth(self.store, turn, self.mouth)
        if result.working_set is None:
            raise ReplayError(f"wake-up {number} was answered without a prompt")
        messages = result.working_set.messages
        shown, section_bytes = _shown(messages)
        current = self.record.current(now)
        superseded = sorted(key for key, value in shown.items() if current.get(key) != value)
        missing = sorted(key for key in current if key not in shown)
        noted = self.notes[-self.notes_read :]
        notes_superseded = sorted(
            {key for key, value in noted if value is not None and current.get(key) != value}
        )
        expired = [key for key in self.record.expired(now) if key not in shown]
        return {
            "wakeup": number,
            "at": now.isoformat(),
            "kind": wakeup["kind"],
            "text": wakeup["text"],
            "shown": shown,
            "current": current,
            "superseded": superseded,
            "missing": missing,
            "expired_left_out": expired,
            "notes_superseded": notes_superseded,
            "agent_state_in_prompt": any(AGENT_STATE_MARK in m.content for m in messages),
            "section_bytes": section_bytes,
            "prompt_bytes": sum(len(m.content.encode("utf-8")) for m in messages),
            "prompt_tokens": result.receipt.prompt_tokens,
            "cost_usd": result.receipt.cost_usd,
            "actions": [],
        }

    async def act(self, row: dict[str, Any], wakeup: dict[str, Any]) -> None:
        now: datetime = wakeup["when"]
        state = WorkingState(self.store, self.owner, self.agent, clock=lambda: now)
        by = f"{wakeup['kind']}@{now.strftime('%m-%d %H:%M')}"
        for action in wakeup["actions"]:
            if "set" in action:
                key, value, expect = action["set"], action["value"], action.get("expect")
                until = _at(wakeup["day"], action["until"]) if "until" in action else None
                ttl = (until - now).total_seconds() / 3600 if until is not None else None
                predicted = self.record.set(key, value, expect, until)
                written = await state.set(
                    key, value, action["reason"], ttl_hours=ttl, expected_value=expect, by=by
                )
                self.notes.append((key, value))  # a note is written whatever the store says
                self.writes["set_attempts"] += 1
                self.writes["sets_stored" if written.written else "sets_refused"] += 1
                outcome = {"action": "set", "key": key, "value": value, "expect": expect,
                           "written": written.written, "reason": written.reason,
                           "value_now": written.value}  # fmt: skip
            elif "clear" in action:
                key = action["clear"]
                predicted = self.record.clear(key)
                written = await state.clear(key, action["reason"], by=by)
                self.notes.append((key, None))
                self.writes["clears"] += 1
                outcome = {"action": "clear", "key": key, "written": written.written,
                           "reason": written.reason}  # fmt: skip
            else:
                fields = {name: action.get(name) for name in ("status", "next_steps", "evidence",
                                                              "blocker")}  # fmt: skip
                await state.handoff(action["handoff"], by=by, **fields)
                self.writes["handoffs"] += 1
                row["actions"].append({"action": "handoff", "status": action.get("status")})
                continue
            outcome["as_predicted"] = outcome["written"] == predicted
            self.writes["as_predicted"] += outcome["as_predicted"]
            row["actions"].append(outcome)
        if wakeup["kind"] == "patrol":
            await self._count_patrol(wakeup)

    async def _count_patrol(self, wakeup: dict[str, Any]) -> None:
        """The patrol's code keeps its own count in agent state, which no prompt may carry."""
        day = wakeup["day"].isoformat()
        self.patrols[day] += 1
        n = self.patrols[day]
        states = AgentState(self.store, self.owner, scope_key=SCOPE_KEY,
                            clock=lambda: wakeup["when"])  # fmt: skip
        written = await states.put(
            self.agent, Scope(kind="task", id=f"patrols-{day}"),
            {"patrols": n, "last": wakeup["when"].strftime("%H:%M"),
             "marker": f"{AGENT_STATE_MARK}{day}-{n:03d}"},
        )  # fmt: skip
        if not written.stored:
            raise ReplayError(f"the patrol counter was not stored: {written.reason}")
        self.writes["agent_state_writes"] += 1


def _summary(rows: list[dict[str, Any]], writes: Counter[str]) -> dict[str, Any]:
    sections = [row["section_bytes"] for row in rows if row["section_bytes"]]
    section_total = sum(sections)
    prompt_total = sum(row["prompt_bytes"] for row in rows)
    decided = writes["set_attempts"] + writes["clears"]
    return {
        "wakeups": len(rows),
        "by_kind": dict(sorted(Counter(row["kind"] for row in rows).items())),
        "prompts_with_section": len(sections),
        "prompts_with_superseded_value": sum(bool(row["superseded"]) for row in rows),
        "prompts_missing_a_current_value": sum(bool(row["missing"]) for row in rows),
        "prompts_with_agent_state": sum(row["agent_state_in_prompt"] for row in rows),
        "section_bytes_total": section_total,
        "section_bytes_mean": round(section_total / len(sections), 1) if sections else 0.0,
        "section_bytes_max": max(sections, default=0),
        "section_cap_bytes": SECTION_CAP,
        "prompt_bytes_total": prompt_total,
        "section_share_of_prompt_bytes": round(section_total / prompt_total, 4)
        if prompt_total
        else 0.0,
        "prompt_tokens": sum(row["prompt_tokens"] or 0 for row in rows),
        "known_cost_usd": round(sum(row["cost_usd"] or 0.0 for row in rows), 8),
        "writes": {
            name: writes[name]
            for name in (
                "set_attempts",
                "sets_stored",
                "sets_refused",
                "clears",
                "handoffs",
                "agent_state_writes",
            )
        },
        "writes_as_predicted": f"{writes['as_predicted']}/{decided}",
        "expired_keys_left_out": sum(len(row["expired_left_out"]) for row in rows),
        "notes_baseline_prompts_with_superseded_value": sum(
            bool(row["notes_superseded"]) for row in rows
        ),
    }


async def play(
    workdir: Path, seed: int, quick: bool, store_for: StoreFor | None = None
) -> ReplayOutput:
    """Run the wakeups replay in `workdir` and return its spec and ledger."""
    data = load(DATA_FILE)
    wakeups = _schedule(data, quick)
    shuffle = random.Random(f"wakeups:{seed}")
    rows: list[dict[str, Any]] = []
    async with StaffStore.open(store_at(workdir, "wakeups.sqlite", store_for)) as store:
        player = _Play(store, data["owner"], data["agent"], data["notes_read"])
        await AgentState(store, data["owner"]).declare(
            data["agent"],
            {"fields": {"patrols": {"type": "integer"}, "last": {"type": "string"},
                        "marker": {"type": "string"}},
             "agent_state": {"scope": "task", "write": "merge_by_key"}},
        )  # fmt: skip
        # Wake-ups at the same minute run at once: each reads its prompt before any of them
        # acts, and they act in an order the seed picks.
        for _, group in groupby(wakeups, key=lambda w: w["when"]):
            batch = list(group)
            shuffle.shuffle(batch)
            played: list[tuple[dict[str, Any], dict[str, Any]]] = []
            for wakeup in batch:
                played.append((await player.prompt(len(rows) + len(played) + 1, wakeup), wakeup))
            for row, wakeup in played:
                await player.act(row, wakeup)
                rows.append(row)
        summary = _summary(rows, player.writes)
        view = await WorkingState(store, data["owner"], data["agent"]).get(history=0)
    spec = {
        "name": "wakeups", "seed": seed, "quick": quick, "owner": data["owner"],
        "agent": data["agent"], "data": f"replays/{DATA_FILE}", "mouth": MOUTH_SPEC,
        "patrol_every_minutes": QUICK_EVERY_MINUTES if quick else data["patrol"]["every_minutes"],
        "notes_read": data["notes_read"],
        "wakeups": [{"at": w["when"].isoformat(), "kind": w["kind"], "text": w["text"],
                     "actions": w["actions"]} for w in wakeups],
    }  # fmt: skip
    ledger = {
        "name": "wakeups", "seed": seed, "quick": quick, "definitions": DEFINITIONS,
        "summary": summary,
        "final_keys": sorted(entry.key for entry in view.entries),
        "rows": rows,
    }  # fmt: skip
    return ReplayOutput(spec, ledger)
