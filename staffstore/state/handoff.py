"""Handoff notes: plain text, tidied and cut, or structured, checked and never cut.

A plain note has its whitespace collapsed and is cut at about 1,200 characters, as it always
was. Naming any of status, next_steps, evidence or blocker makes the handoff structured: status
is then required and checked against this table, and a violation refuses the whole call:

    status     requires              refuses
    continue   next_steps            blocker
    complete   evidence              blocker, next_steps
    blocked    blocker               -

"Done" is never self-declared without evidence, and an unfinished handoff without a next step
leaves the next wake-up a blank slate. A structured handoff whose note, next steps, evidence and
blocker together pass the byte cap (UTF-8, so CJK counts three bytes a character) is refused
whole: cut, it could lose the very evidence that made it credible while still looking whole.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

from ..errors import InputError
from .models import HandoffStatus

_RULES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "continue": (("next_steps",), ("blocker",)),
    "complete": (("evidence",), ("blocker", "next_steps")),
    "blocked": (("blocker",), ()),
}


@dataclass(frozen=True)
class CheckedHandoff:
    """A handoff ready to store: its text as it will be kept, and whether the note was cut."""

    note: str
    status: HandoffStatus | None
    next_steps: str | None
    evidence: str | None
    blocker: str | None
    truncated: bool


def check_handoff(
    note: str | None,
    *,
    status: str | None = None,
    next_steps: str | None = None,
    evidence: str | None = None,
    blocker: str | None = None,
    max_bytes: int,
    plain_chars: int,
) -> CheckedHandoff:
    """Return the handoff as it will be stored, or InputError saying which rule it breaks."""
    extra = {"next_steps": next_steps, "evidence": evidence, "blocker": blocker}
    if status is None and all(value is None for value in extra.values()):
        text = " ".join((note or "").split())
        if not text:
            raise InputError("a handoff needs a note (or a status with its fields)")
        return CheckedHandoff(
            text[:plain_chars], None, None, None, None, truncated=len(text) > plain_chars
        )
    if status is None:
        named = ", ".join(name for name, value in extra.items() if value is not None)
        raise InputError(f"a structured handoff needs a status ({named} given without one)")
    if status not in _RULES:
        raise InputError(f"handoff status must be continue, complete or blocked, not {status!r}")
    required, refused = _RULES[status]
    for name in required:
        value = extra[name]
        if value is None or not value.strip():
            raise InputError(f"a {status} handoff needs a non-empty {name}")
    for name in refused:
        if extra[name] is not None:
            raise InputError(f"a {status} handoff must not have {name}")
    text = (note or "").strip()
    size = sum(len(part.encode("utf-8")) for part in (text, *extra.values()) if part)
    if size > max_bytes:
        raise InputError(
            f"the handoff is {size} bytes, over the {max_bytes}-byte cap; nothing was written "
            "(a structured handoff is never cut)"
        )
    kept = {name: value.strip() if value is not None else None for name, value in extra.items()}
    return CheckedHandoff(
        text, cast(HandoffStatus, status), kept["next_steps"], kept["evidence"], kept["blocker"],
        truncated=False,
    )  # fmt: skip
