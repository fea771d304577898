"""Token budgets for a working set: one for the whole prompt, one for each of its parts.

A part's budget is a ceiling, never a reservation: a part with nothing to say takes nothing, and
what it leaves goes to the parts after it (within their own ceilings). A part without a budget
(None) is bounded only by its share of what the whole prompt has left, which is how a bare
`budget=4000` has always behaved. Defaults per role follow the working tier's sizing: a
supervisor carries the session's narrative and holds the most, a small advisor the least.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from ..errors import InputError

Part = Literal["system", "claims", "story", "vault", "tail", "state", "memory"]
PARTS: tuple[Part, ...] = ("system", "claims", "story", "vault", "tail", "state", "memory")
Role = Literal["supervisor", "main", "advisor"]
ROLES: tuple[Role, ...] = ("supervisor", "main", "advisor")
#: The smallest budget that can hold a question, an instruction and a visible cut marker.
MIN_BUDGET = 64


class Budgets(BaseModel):
    """The whole prompt's token budget and each part's ceiling (None: only the whole bounds it)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    total: int = Field(ge=MIN_BUDGET)
    system: int | None = Field(default=None, ge=0)
    claims: int | None = Field(default=None, ge=0)
    story: int | None = Field(default=None, ge=0)
    vault: int | None = Field(default=None, ge=0)
    tail: int | None = Field(default=None, ge=0)
    state: int | None = Field(default=None, ge=0)
    memory: int | None = Field(default=None, ge=0)

    def part(self, name: Part) -> int | None:
        """The ceiling of one part, None when only the whole prompt bounds it."""
        value: int | None = getattr(self, name)
        return value

    def with_parts(self, **parts: int | None) -> Budgets:
        """These budgets with some parts (or `total`) replaced; unknown names are an InputError."""
        unknown = sorted(set(parts) - {*PARTS, "total"})
        if unknown:
            raise InputError(
                f"unknown budget part {', '.join(unknown)}: the parts are total, {', '.join(PARTS)}"
            )
        try:
            return Budgets.model_validate({**self.model_dump(), **parts})
        except ValueError as error:
            raise InputError(f"invalid budgets: {error}") from None

    def ceilings(self) -> dict[str, int]:
        """The parts that have a budget of their own, with it."""
        return {name: value for name in PARTS if (value := self.part(name)) is not None}

    def key(self) -> int | dict[str, int]:
        """What identifies these budgets in a cache key: the bare total when no part has its own
        budget, so the keys of answers kept before per-part budgets existed stay the same."""
        parts = self.ceilings()
        return {"total": self.total, **parts} if parts else self.total


#: Defaults per role, in one place. The parts add up to a little more than the whole on
#: purpose: a part with less to say leaves room that the others may use.
ROLE_BUDGETS: dict[Role, Budgets] = {
    # Carries the session's narrative; forgetting is dearer than holding.
    "supervisor": Budgets(
        total=12_000,
        system=800,
        claims=2_500,
        story=1_200,
        vault=1_500,
        tail=4_000,
        state=1_500,
        memory=1_500,
    ),
    # Current reasoning plus the recent turns.
    "main": Budgets(
        total=8_000,
        system=600,
        claims=1_800,
        story=800,
        vault=1_000,
        tail=2_800,
        state=1_000,
        memory=1_000,
    ),
    # A small model asked one narrow thing: a short tail, little recall.
    "advisor": Budgets(
        total=2_000,
        system=300,
        claims=400,
        story=300,
        vault=250,
        tail=600,
        state=300,
        memory=200,
    ),
}


def budgets_for(
    role: str | None = None, total: int | None = None, parts: dict[str, int | None] | None = None
) -> Budgets | None:
    """The budgets a caller asked for: a role's defaults, its total replaced, some parts
    replaced; None when nothing was asked (the caller's plain total then applies)."""
    if role is None and not parts:
        return None
    if role is not None and role not in ROLE_BUDGETS:
        raise InputError(f"unknown role {role!r}: the roles are {', '.join(ROLES)}")
    if role is None and total is None:
        raise InputError("per-part budgets need a role or a total")
    base = ROLE_BUDGETS[role] if role is not None else Budgets(total=total or MIN_BUDGET)
    changes: dict[str, int | None] = dict(parts or {})
    if total is not None:
        changes["total"] = total
    return base.with_parts(**changes) if changes else base


def parse_part_budgets(items: list[str]) -> dict[str, int | None]:
    """`tail=2000` style settings (from a flag) as {part: tokens}; InputError on a bad one."""
    parts: dict[str, int | None] = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not value.strip().isdigit():
            raise InputError(f"a part budget is PART=TOKENS (e.g. tail=2000), not {item!r}")
        parts[name.strip()] = int(value)
    return parts


__all__ = [
    "MIN_BUDGET",
    "PARTS",
    "ROLES",
    "ROLE_BUDGETS",
    "Budgets",
    "Part",
    "Role",
    "budgets_for",
    "parse_part_budgets",
]
