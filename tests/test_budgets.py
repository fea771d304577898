"""Token budgets per part and per role: no part ever exceeds its own, the prompt never its total."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from staffstore.errors import InputError
from staffstore.models import Turn
from staffstore.state import WorkingState
from staffstore.store import StaffStore
from staffstore.working_set import (
    PARTS,
    ROLE_BUDGETS,
    Budgets,
    approximate_tokens,
    budgets_for,
    build_working_set,
    parse_part_budgets,
    token_counter,
)

if TYPE_CHECKING:
    from conftest import PutClaim

ASKED = "Which port does the ledger replay service listen on?"


@pytest.fixture
async def busy(store: StaffStore, put: PutClaim) -> StaffStore:
    """A store where every part has something to say: claims, a long session, working state."""
    for n in range(4):
        await put(f"Which port does ledger replay service {n} use?", f"Port {8000 + n}. " * 20)
    session = await store.ensure_session("alice", "main")
    await store.append_messages(
        session,
        [("user" if n % 2 == 0 else "assistant", f"message {n}: " + "words " * (5 + 7 * n))
         for n in range(12)],
    )  # fmt: skip
    await WorkingState(store, "alice", "default").set("plan.step", "replay " * 30, "the plan")
    return store


def _words(text: str) -> int:
    """A counter unlike the estimate: one token a word (and one for nothing at all)."""
    return max(len(text.split()), 1)


def _chars(text: str) -> int:
    return len(text)


_PART = st.one_of(st.none(), st.integers(min_value=0, max_value=1_500))


@given(
    total=st.integers(min_value=64, max_value=3_000),
    parts=st.fixed_dictionaries({name: _PART for name in PARTS}),
    count=st.sampled_from([approximate_tokens, _words, _chars]),
)
@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
async def test_no_part_is_ever_over_its_budget(
    busy: StaffStore, total: int, parts: dict[str, int | None], count: object
) -> None:
    budgets = Budgets(total=total, **parts)
    assert callable(count)
    working_set = await build_working_set(
        busy, Turn(owner="alice", text=ASKED, session="main"), budgets, count=count
    )
    assert working_set.tokens <= total
    for name, ceiling in budgets.ceilings().items():
        assert working_set.part_tokens.get(name, 0) <= ceiling, name
    assert sum(working_set.part_tokens.values()) == working_set.tokens


async def test_the_working_set_records_the_tokens_of_each_part(busy: StaffStore) -> None:
    working_set = await build_working_set(
        busy, Turn(owner="alice", text=ASKED, session="main"), ROLE_BUDGETS["main"]
    )
    sent = working_set.part_tokens
    assert all(sent[name] > 0 for name in ("turn", "system", "claims", "tail", "state"))
    assert working_set.part_budgets == ROLE_BUDGETS["main"].ceilings()
    assert working_set.counted_by == "estimate"


async def test_a_part_budget_of_zero_leaves_the_part_out(busy: StaffStore) -> None:
    budgets = ROLE_BUDGETS["main"].with_parts(claims=0, tail=0)
    working_set = await build_working_set(
        busy, Turn(owner="alice", text=ASKED, session="main"), budgets
    )
    assert working_set.recalled_claim_ids == [] and working_set.tail_messages == 0


async def test_an_advisor_is_sent_less_than_a_supervisor(busy: StaffStore) -> None:
    turn = Turn(owner="alice", text=ASKED, session="main")
    advisor = await build_working_set(busy, turn, ROLE_BUDGETS["advisor"])
    supervisor = await build_working_set(busy, turn, ROLE_BUDGETS["supervisor"])
    assert advisor.tokens <= ROLE_BUDGETS["advisor"].total
    assert advisor.tokens < supervisor.tokens


def test_a_role_takes_its_defaults_and_a_flag_replaces_one_part() -> None:
    budgets = budgets_for("advisor", None, parse_part_budgets(["tail=100"]))
    assert budgets == ROLE_BUDGETS["advisor"].with_parts(tail=100)


def test_no_role_and_no_parts_is_the_plain_total() -> None:
    assert budgets_for(None, 4_000, {}) is None


@pytest.mark.parametrize("item", ["tail", "tail=x", "=5"])
def test_a_malformed_part_budget_is_refused(item: str) -> None:
    with pytest.raises(InputError):
        budgets_for("main", None, parse_part_budgets([item]))


def test_an_unknown_part_or_role_is_refused() -> None:
    with pytest.raises(InputError, match="unknown budget part"):
        ROLE_BUDGETS["main"].with_parts(prologue=10)
    with pytest.raises(InputError, match="unknown role"):
        budgets_for("janitor")


def test_a_budgets_key_is_its_total_when_no_part_has_its_own() -> None:
    assert Budgets(total=4_000).key() == 4_000
    assert Budgets(total=4_000, tail=10).key() == {"total": 4_000, "tail": 10}


def test_a_model_without_a_tokenizer_is_counted_by_the_estimate() -> None:
    assert token_counter("anthropic/claude-sonnet") is approximate_tokens
    assert token_counter(None) is approximate_tokens
