"""The second look reads a turn in the stored question's words: misspelt words as the words they
misspell, a repository named without its owner with the stored question's owner. Unit tests of
the reading, then the gate's decisions on real stores."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from staffstore.gate import query_first
from staffstore.gate.query_first import OWNERS_READ
from staffstore.gate.scoring import default_model
from staffstore.models import Decision, NewClaim, Turn
from staffstore.store import StaffStore
from staffstore.text.respelling import (
    owned_repositories,
    repositories_named_alone,
    respelled,
    shared_names,
)
from staffstore.text.spelling import is_common_word, misspells

if TYPE_CHECKING:
    from conftest import PutClaim


@pytest.mark.parametrize(
    ("asked", "stored", "read"),
    [
        (
            "how many p1 tickts breached the resolution sla last weeek",
            "How many P1 tickets breached the resolution SLA last week?",
            "how many p1 tickets breached the resolution sla last week",
        ),
        (
            "which wcag criterion did the audit fail most ofen",
            "Which WCAG criterion did the audit fail most often?",
            "which wcag criterion did the audit fail most often",
        ),
        (  # two slips in a long word, its first two letters kept
            "what psi value trigerred the drift alert",
            "What PSI value triggered the drift alert?",
            "what psi value triggered the drift alert",
        ),
        (  # a capitalised word at the start of the turn is respelt like any other
            "Avrage session length last week?",
            "What was the average session length last week?",
            "average session length last week?",
        ),
    ],
)
def test_a_misspelt_word_is_read_as_the_stored_word_it_misspells(
    asked: str, stored: str, read: str
) -> None:
    assert respelled(asked, stored).lower() == read.lower()


@pytest.mark.parametrize(
    ("asked", "stored", "why"),
    [
        ("Who owns the horse stable?", "Who owns the house stable?", "both are English words"),
        ("Is the SLO met?", "Is the deploy slow?", "a word in capitals is an acronym"),
        ("What broke event-bux?", "What broke event-bus?", "a part of an identifier"),
        ("Why did the bild fail?", "Why did the build or the bold fail?", "two stored words fit"),
        ("Who owns tikt 42?", "Who owns ticket 42?", "first letter kept, but two slips in four"),
        ("Why did the bild fail?", "Why did the build fail?", "fine: one slip"),
        ("Who runs the gardn service?", "Who runs the garden service?", "fine: one slip"),
    ],
)
def test_only_a_word_that_is_no_word_is_respelt(asked: str, stored: str, why: str) -> None:
    changed = respelled(asked, stored) != asked
    assert changed is why.startswith("fine"), why


def test_a_name_of_the_store_is_never_respelt() -> None:
    # "gardn" is a service of this store (query_first.store_names): not a slip for "garden".
    asked = "Who runs the gardn service?"
    assert respelled(asked, "Who runs the garden service?", frozenset({"gardn"})) == asked


def test_misspells_needs_the_first_letter_and_a_long_enough_word() -> None:
    assert misspells("ofen", "often")
    assert misspells("ofen", "open")  # and so respelled wants exactly one stored word to fit
    assert not misspells("tne", "the")  # a word of three letters is never respelt into
    assert not misspells("rigger", "trigger")  # the first letter differs
    assert misspells("triggrd", "triggered")  # two slips in a word of eight letters or more
    assert not misspells("trigerd", "trigger")  # but one only in a shorter word


@pytest.mark.parametrize(
    ("asked", "stored", "read"),
    [
        (
            "why did helpdesk-sync stop syncing tickets?",
            "Why did lumen/helpdesk-sync stop syncing tickets?",
            "why did lumen/helpdesk-sync stop syncing tickets?",
        ),
        (  # the owner's case as the stored question has it, the name's as the turn typed it
            "Which version does Tf-Modules pin?",
            "Which version does northwind/tf-modules pin?",
            "Which version does northwind/Tf-Modules pin?",
        ),
    ],
)
def test_a_repository_named_alone_is_read_with_the_stored_owner(
    asked: str, stored: str, read: str
) -> None:
    assert respelled(asked, stored) == read


@pytest.mark.parametrize(
    ("asked", "stored"),
    [
        ("why did acme/helpdesk-sync stop?", "Why did lumen/helpdesk-sync stop?"),  # another owner
        ("how many PRs did the core merge queue merge?", "How many PRs did orbit/core merge?"),
        ("why did helpdesk-sync-v2 stop?", "Why did lumen/helpdesk-sync stop?"),  # another name
    ],
)
def test_no_owner_is_given_where_the_turn_means_another_repository_or_a_word(
    asked: str, stored: str
) -> None:
    assert respelled(asked, stored) == asked


def test_a_repository_two_owners_share_is_not_given_either() -> None:
    stored = ["What is the p99 of acme/api-gateway?", "What is the p99 of globex/api-gateway?"]
    assert shared_names(stored) == frozenset({"api-gateway"})
    asked = "what is the p99 of api-gateway?"
    assert respelled(asked, stored[0], frozenset(), shared_names(stored)) == asked
    assert owned_repositories("in lumen/ml-train's eval, req/min") == (("ml-train", "lumen"),)


async def ask(store: StaffStore, text: str) -> Decision:
    return await query_first(store, Turn(owner="alice", text=text))


async def test_a_turn_with_typos_is_served_at_the_default_budget(
    put: PutClaim, store: StaffStore
) -> None:
    claim = await put("How many P1 tickets breached the resolution SLA last week?", "Four.")
    await put("How many P2 tickets breached the resolution SLA last week?", "Nine.")
    decision = await ask(store, "how many p1 tickts breached the resolution sla last weeek")
    assert (decision.outcome, decision.claim_id) == ("hit", claim.id)
    assert decision.threshold == default_model().threshold(decision.budget or 0.0)


async def test_a_misspelt_turn_is_still_held_to_its_numbers(
    put: PutClaim, store: StaffStore
) -> None:
    await put("How many P1 tickets breached the resolution SLA last week?", "Four.")
    decision = await ask(store, "how many p2 tickts breached the resolution sla last weeek")
    assert decision.outcome == "miss"


async def test_a_misspelt_turn_is_still_held_to_its_time(put: PutClaim, store: StaffStore) -> None:
    # Respelt, the turn is the stored question by the strict test, which folds "ever" and
    # "right now" away; the time slot still tells them apart.
    claim = await put("Who is on call for payments right now?", "Dana.")
    decision = await ask(store, "who has ever been on call for paymnets")
    assert (decision.outcome, decision.differs_in) == ("miss", "time")
    served = await ask(store, "who is on call for paymnets right now")
    assert (served.outcome, served.claim_id) == ("hit", claim.id)


async def test_a_repository_named_alone_is_served_its_stored_question(
    put: PutClaim, store: StaffStore
) -> None:
    claim = await put(
        "Why did lumen/helpdesk-sync stop syncing Zendesk tickets on 2025-03-06?",
        "The Zendesk API token expired.",
    )
    decision = await ask(store, "why did helpdesk-sync stop syncing zendesk tickets on 2025-03-06")
    assert (decision.outcome, decision.claim_id) == ("hit", claim.id)


async def test_a_repository_of_two_owners_named_alone_is_not_served(
    put: PutClaim, store: StaffStore
) -> None:
    await put("Why did acme/helpdesk-sync stop syncing tickets on 2025-03-06?", "A token.")
    await put("Why did globex/helpdesk-sync stop syncing tickets on 2025-03-06?", "A quota.")
    decision = await ask(store, "why did helpdesk-sync stop syncing tickets on 2025-03-06")
    assert decision.outcome == "miss"


@pytest.mark.both_backends
async def test_a_repository_another_owner_has_in_another_question_is_not_given_an_owner(
    put: PutClaim, store: StaffStore
) -> None:
    # acme's question shares nothing with the turn but the repository's name, so the second
    # look never reads it: the lookup asks the store which owners the name has.
    claim = await put("Why did lumen/helpdesk-sync stop syncing tickets on Monday?", "A token.")
    await put("Which Python version does acme/helpdesk-sync pin?", "3.11")
    decision = await ask(store, "why did helpdesk-sync stop syncing tickets on monday")
    assert (decision.outcome, decision.reason, decision.differs_in) == (
        "miss", "changed_requirement", "identifier")  # fmt: skip
    assert (decision.asked_only, decision.stored_only) == (
        ["helpdesk-sync"], ["lumen/helpdesk-sync"])  # fmt: skip
    named = await ask(store, "why did lumen/helpdesk-sync stop syncing tickets on monday")
    assert (named.outcome, named.claim_id) == ("hit", claim.id)


@pytest.mark.both_backends
async def test_another_owner_is_found_behind_hundreds_of_questions_about_the_first(
    put: PutClaim, store: StaffStore
) -> None:
    # More questions name lumen's repository than the lookup reads for owners (OWNERS_READ):
    # it reads the questions that do not name lumen.
    await store.ensure_claims(
        NewClaim(owner="alice", question=f"Why did lumen/api-gateway fail deploy {n}?", answer="x")
        for n in range(OWNERS_READ + 50)
    )
    await put("Which Python version does acme/api-gateway pin?", "3.11")
    decision = await ask(store, "why did api-gateway fail deploy 7")
    assert (decision.outcome, decision.differs_in) == ("miss", "identifier")
    named = await ask(store, "why did lumen/api-gateway fail deploy 7")
    assert named.outcome == "hit"


def test_the_repositories_a_turn_names_without_the_owner_a_stored_question_gives() -> None:
    stored = ["Why did lumen/helpdesk-sync stop?", "Who owns acme/api-gateway and lumen/core?"]
    named = repositories_named_alone
    assert named("why did helpdesk-sync stop?", stored) == {"helpdesk-sync"}
    assert named("who owns api-gateway and helpdesk-sync?", stored) == {
        "api-gateway", "helpdesk-sync"}  # fmt: skip
    assert named("why did lumen/helpdesk-sync stop?", stored) == set()
    assert named("why did acme/helpdesk-sync stop?", stored) == set()  # another owner, named
    assert named("who owns the core of it?", stored) == set()  # "core": a common word


_WORDS = [
    "tickets", "ticket", "tickts", "week", "weeek", "often", "ofen", "deploy", "SLO", "slow",
    "lumen/helpdesk-sync", "helpdesk-sync", "acme/api", "api", "v2.4", "p1", "p2", "42", "the",
    "did", "why", "failed", "faild", "Staging", "stagign", "core", "orbit/core",
]  # fmt: skip
_questions = st.lists(st.sampled_from(_WORDS), min_size=1, max_size=8).map(" ".join)


@settings(max_examples=300, deadline=None)
@given(asked=_questions, stored=_questions)
def test_a_reading_only_respells_words_and_adds_owners(asked: str, stored: str) -> None:
    read = respelled(asked, stored)
    asked_tokens, read_tokens = asked.split(), read.split()
    # Word for word: the reading replaces whole words, never splits, joins or drops one.
    assert len(read_tokens) == len(asked_tokens)
    stored_words = {token.lower() for token in stored.split()}
    for before, after in zip(asked_tokens, read_tokens, strict=True):
        if before == after:
            continue
        _owner, _, name = after.partition("/")
        if name == before:  # a repository given the stored question's owner
            assert after.lower() in stored_words
            continue
        # A respelt word: a word of the stored question, from one that is no English word;
        # never a number, an identifier or a word typed in capitals.
        assert after in stored_words and before.isalpha() and not before.isupper()
        assert not is_common_word(before.lower())
