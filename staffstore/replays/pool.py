"""The findings the replays ask about, and the chatter around them, read from replays/*.json.

Each finding is one piece of completed work: the question a worker answered, its answer, the
first-look turn that led to the job, and human paraphrases of the question. Some carry
changed-requirement variants (nearly the question, one detail different: must miss) and
another answer (for a newer revision or a conflicting job). The findings live in
replays/findings_code.json and replays/findings_ops.json, the chatter in replays/chatter.json.

A finding is one JSON object:

    {"key": ..., "agent": ..., "repository": "owner/repository",
     "question": the stored question, "answer": the stored answer,
     "first_look": the first-look turn, "other_answer": another answer (optional),
     "changed": [changed-requirement variants], "paraphrases": [paraphrases]}
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any

from ..errors import InputError
from .data import load

FINDINGS_FILES = ("findings_code.json", "findings_ops.json")
CHATTER_FILE = "chatter.json"


@dataclass(frozen=True)
class Finding:
    """One piece of completed work and the ways people ask about it."""

    key: str
    agent: str
    repository: str
    question: str
    answer: str
    first_look: str
    paraphrases: tuple[str, ...]
    changed: tuple[str, ...] = ()
    other_answer: str | None = None


def parse_finding(raw: dict[str, Any], source: str) -> Finding:
    """One finding from its JSON object; an InputError names the file and the key if it is bad."""
    try:
        fields = {**raw, "paraphrases": tuple(raw["paraphrases"])}
        fields["changed"] = tuple(raw.get("changed", ()))
        return Finding(**fields)
    except (KeyError, TypeError) as error:
        raise InputError(f"{source}: finding {raw.get('key')!r} is malformed ({error})") from None


@cache
def findings() -> tuple[Finding, ...]:
    """Every finding, code first, then operations, in file order."""
    return tuple(parse_finding(raw, name) for name in FINDINGS_FILES for raw in load(name))


@cache
def follow_ups() -> tuple[str, ...]:
    """Turns that lean on the turn before ("and why?"): no stored finding answers them alone."""
    return tuple(load(CHATTER_FILE)["follow_ups"])


@cache
def unrelated() -> tuple[str, ...]:
    """Questions no worker looked into; some share words with stored findings on purpose."""
    return tuple(load(CHATTER_FILE)["unrelated"])


__all__ = ["Finding", "findings", "follow_ups", "parse_finding", "unrelated"]
