"""The findings the replays ask about, and the chatter around them, parsed from plain text.

Each finding is one piece of completed work: the question a worker answered, its answer, the
first-look turn that led to the job, and human paraphrases of the question. Some carry
changed-requirement variants (nearly the question, one detail different: must miss) and
another answer (for a newer revision or a conflicting job). The text lives in findings_*.py.

Block format, one finding per block:

    ## key | Agent | owner/repository
    Q: the stored question
    A: the stored answer
    first: the first-look turn
    other: another answer (optional)
    ~ a changed-requirement variant (any number)
    - a paraphrase (any number)

A line starting with two spaces continues the line above it.
"""

from __future__ import annotations

from dataclasses import dataclass

from .chatter import FOLLOW_UPS, UNRELATED
from .findings_code import CODE_FINDINGS
from .findings_ops import OPS_FINDINGS


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


_FIELDS = {"Q:": "question", "A:": "answer", "first:": "first_look", "other:": "other_answer"}


def _logical_lines(block: str) -> list[str]:
    lines: list[str] = []
    for raw in block.splitlines():
        if not raw.strip():
            continue
        if raw.startswith("  "):
            if not lines:
                raise ValueError(f"continuation line with nothing to continue: {raw!r}")
            lines[-1] += " " + raw.strip()
        else:
            lines.append(raw.strip())
    return lines


def _parse_block(block: str) -> Finding:
    header, *lines = _logical_lines(block)
    key, agent, repository = (part.strip() for part in header.split("|"))
    fields: dict[str, str] = {}
    paraphrases: list[str] = []
    changed: list[str] = []
    for line in lines:
        if line.startswith("- "):
            paraphrases.append(line[2:])
        elif line.startswith("~ "):
            changed.append(line[2:])
        else:
            label, _, value = line.partition(" ")
            if label not in _FIELDS or label in fields:
                raise ValueError(f"finding {key}: unexpected line {line!r}")
            fields[_FIELDS[label]] = value
    return Finding(
        key=key,
        agent=agent,
        repository=repository,
        paraphrases=tuple(paraphrases),
        changed=tuple(changed),
        **fields,
    )


def parse_findings(text: str) -> tuple[Finding, ...]:
    """Parse blocks in the format above; raise ValueError on anything it does not expect."""
    blocks = [block for block in text.split("\n## ") if block.strip()]
    return tuple(_parse_block(block.removeprefix("## ")) for block in blocks)


FINDINGS: tuple[Finding, ...] = parse_findings(CODE_FINDINGS) + parse_findings(OPS_FINDINGS)

__all__ = ["FINDINGS", "FOLLOW_UPS", "UNRELATED", "Finding", "parse_findings"]
