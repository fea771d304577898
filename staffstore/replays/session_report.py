"""The long-session replay's ledger as the report, the charts and the CLI read it.

One row per replay: how often a miss's prompt carried the needed fact's current value (the
working set, the last-eight tail alone, the whole transcript), how often a revised-away value,
and what the prompt at the measured turn weighed against the whole transcript. The chart puts
the three ways side by side.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

if TYPE_CHECKING:
    from matplotlib.figure import Figure

#: Replays whose ledgers judge a long session's prompts (SessionLedger).
SESSION_REPLAYS = frozenset({"long-session"})
SESSION_FIELDS = [
    "REPLAY", "NEEDS", "PRESENT", "REVISED_AWAY", "TAIL_ONLY_PRESENT", "WHOLE_REVISED_AWAY",
    "SHARE_OF_WHOLE", "OVERRUNS",
]  # fmt: skip


class SessionSummary(BaseModel):
    needs: int
    needs_after_a_revision: int
    working_set_present_rate: float
    working_set_revised_away: int
    tail_only_present_rate: float
    tail_only_revised_away: int
    whole_transcript_present_rate: float
    whole_transcript_revised_away: int
    measured_turn_share_of_whole: float
    budget_overruns: int
    targets: dict[str, bool]


class SessionLedger(BaseModel):
    name: str
    quick: bool
    summary: SessionSummary
    measured: list[dict[str, Any]]


def session_row(ledger: SessionLedger) -> list[str]:
    """The replay's line in `staffstore replay`'s table and the report's."""
    s = ledger.summary
    return [
        ledger.name, str(s.needs), f"{s.working_set_present_rate:.1%}",
        str(s.working_set_revised_away), f"{s.tail_only_present_rate:.1%}",
        str(s.whole_transcript_revised_away), f"{s.measured_turn_share_of_whole:.1%}",
        str(s.budget_overruns),
    ]  # fmt: skip


#: The report's headings for session_row's cells.
SESSION_HEADINGS = [
    "replay", "turns needing a fact", "current value present", "revised-away value present",
    "last-8 tail alone: present", "whole transcript: revised-away present",
    "prompt at the measured turn / whole transcript", "parts over budget",
]  # fmt: skip


def session_explanation(ledger: SessionLedger) -> str:
    """What the table measured, with the measured turn's figures, read from the ledger."""
    s = ledger.summary
    measured = sorted(ledger.measured, key=lambda m: m["session"])
    tokens = ", ".join(
        f"{m['working_set_tokens']:,} of {m['whole_transcript_tokens']:,}" for m in measured
    )
    turn = measured[0]["turn"] if measured else "?"
    return (
        f"{len(measured)} session(s) in which facts are stated early and most revised later; "
        f"at each of {s.needs} later turns that need a fact, the working set a miss would send "
        f"(a main agent's budgets) is checked for the fact's current value and for any "
        f"revised-away one ({s.needs_after_a_revision} of the turns come after a revision), "
        f"against the last eight messages alone and the whole transcript. At turn {turn} the "
        f"prompt is {tokens} tokens of the whole transcript's."
    )


def session_chart(ledger: SessionLedger, figure: Figure) -> Figure:
    """Needed fact present, and a revised-away value present, for each way of building the
    prompt; the share of the whole transcript's tokens each one sends, in the labels."""
    s = ledger.summary
    ways = ["working set", "last-8 tail", "whole transcript"]
    present = [s.working_set_present_rate, s.tail_only_present_rate,
               s.whole_transcript_present_rate]  # fmt: skip
    needs = max(s.needs_after_a_revision, 1)
    stale = [s.working_set_revised_away / needs, s.tail_only_revised_away / needs,
             s.whole_transcript_revised_away / needs]  # fmt: skip
    axes = figure.axes[0]
    positions = range(len(ways))
    axes.bar([p - 0.2 for p in positions], present, width=0.4, color="#2a9d54",
             label="current value present (of all needs)")  # fmt: skip
    axes.bar([p + 0.2 for p in positions], stale, width=0.4, color="#d62728",
             label="revised-away value present (of needs after a revision)")  # fmt: skip
    axes.set_xticks(list(positions), ways)
    axes.set_ylim(0, 1.05)
    axes.set_title(
        f"A long session: {s.needs} turns needing an early fact; the working set sends "
        f"{s.measured_turn_share_of_whole:.1%} of the whole transcript's tokens",
        fontsize=9,
    )
    axes.legend(fontsize=8, loc="center")
    return figure


__all__ = [
    "SESSION_FIELDS",
    "SESSION_HEADINGS",
    "SESSION_REPLAYS",
    "SessionLedger",
    "session_chart",
    "session_explanation",
    "session_row",
]
