"""The gate's second look: slots that must agree, the alignment's refusals, the calibrated
score and its error budget, on real stores and through the CLI."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from functools import cache
from typing import TYPE_CHECKING, Any

import numpy as np
import pytest

from staffstore.gate import Candidates, look_up, query_first, query_first_sync
from staffstore.gate.scoring import (
    DEFAULT_BUDGET,
    Form,
    GateModel,
    GateParamsError,
    Trees,
    default_model,
    text_form,
)
from staffstore.models import Decision, Turn
from staffstore.store import StaffStore
from staffstore.text.alignment import FEATURES, Substitution, align, features
from staffstore.text.matching import normalize
from staffstore.text.rephrasing import possessive_unfoldings
from staffstore.text.similarity import MAX_PIECES, cosine, pieces, word_vector
from staffstore.text.slots import (
    differences,
    focus,
    request_frame,
    split_lead,
    split_topic,
    topic_reading,
)
from staffstore.text.words import words

#: Runs on SQLite and on PostgreSQL (conftest.py).
pytestmark = pytest.mark.both_backends

if TYPE_CHECKING:
    from conftest import PutClaim

#: The loosest calibrated budget: the second look serves the most here.
LOOSE = max(default_model().budgets)


@cache
def alignment() -> GateModel:
    """The slots and the alignment, scored by the trees alone: what the tests of a reading or a
    refusal read, since the shipped pair model may overrule a reordering or a substitution."""
    return GateModel({k: v for k, v in default_model().params.items() if k != "pair"})


async def ask(store: StaffStore, text: str, **fields: Any) -> Decision:
    return await query_first(store, Turn(owner="alice", text=text, **fields))


# -- slots: a difference in any of them makes two questions ---------------------------------


@pytest.mark.parametrize(
    ("asked", "stored", "slot"),
    [
        ("How many 10⁶ requests failed?", "How many 106 requests failed?", "number_or_date"),
        ("What is x₂ in the migration?", "What is x2 in the migration?", "number_or_date"),
        (
            "Why did the deploy fail on Monday?",
            "Why did the deploy fail on Sunday?",
            "number_or_date",
        ),
        ("Why is checkout slow in staging?", "Why is checkout slow in production?", "environment"),
        ("Why did signups increase in May?", "Why did signups decrease in May?", "polarity"),
        ("When did the nightly backup fail?", "Why did the nightly backup fail?", "focus"),
        ("Why does the cache not expire keys?", "Why does the cache expire keys?", "negation"),
        (
            "Who owns all the dashboards in Looker?",
            "Who owns the dashboard in Looker?",
            "quantifier",
        ),
        ("What failed in the build yesterday?", "What failed in the build last week?", "time"),
        # What happened against a forecast: past and future auxiliaries.
        ("Will the 2.3 release ship on time?", "Did the 2.3 release ship on time?", "time"),
        ("When was the cert on api.globex.com rotated?",
         "When will the cert on api.globex.com be rotated?", "time"),
        ("Is MFA enforced for Okta users?", "Is MFA enforced for Azure users?", "name"),
        (
            "Why won't the cart-api HPA scale?",
            "Why won't the checkout-api HPA scale?",
            "identifier",
        ),
        ("Which region has the fastest p99?", "Which region has the slowest p99?", "polarity"),
        # An indirect request asks what its embedded question asks.
        (
            "Could you remind me when the TLS cert on api.globex.com expires?",
            "Why does the TLS cert on api.globex.com expire?",
            "focus",
        ),
        # A lead-in's question word is not the question's: this one asks which key.
        (
            "When the model joins the feature store, which entity key does it use?",
            "When does the model join the feature store?",
            "focus",
        ),
        # A weekday beside a date is redundant, but two weekdays alone still differ.
        (
            "Why did the build fail on Monday?",
            "Why did the build fail on Tuesday?",
            "number_or_date",
        ),
        # "which" picks one of several things; it asks no quantity, as "what" may.
        ("How much disk does the build cache use?", "Which disk does the build cache use?",
         "focus"),
        # How far something is so is not how to make it so.
        ("How optimized is the search index?", "How can we optimize the search index?", "focus"),
        ("Is it wrong to run migrations on a Friday?", "Is it okay to run migrations on a Friday?",
         "polarity"),
        # Opposites said by a prefix (scored 0.945, 0.926 and 0.775), and fewer against more
        # (0.815): each was served at a looser budget.
        ("How do I uninstall the agent on macOS?", "How do I install the agent on macOS?",
         "polarity"),
        ("Which users unsubscribed from the status page?",
         "Which users subscribed to the status page?", "polarity"),
        ("Who can encrypt the backup bucket?", "Who can decrypt the backup bucket?", "polarity"),
        ("Which jobs run fewer than 3 times a day?", "Which jobs run more than 3 times a day?",
         "polarity"),
        ("How do I unpin the lodash version?", "How do I pin the lodash version?", "polarity"),
        ("Which hosts were decommissioned last week?", "Which hosts were commissioned last week?",
         "polarity"),
        # A verb of another stage of a thing's life (scored 0.957 and 0.961: served).
        ("Who cancelled the maintenance window for db-3?",
         "Who scheduled the maintenance window for db-3?", "stage"),
        ("Which customer was affected by the refund bug?",
         "Which customer reported the refund bug?", "stage"),
        ("When was the ticket INC-88 resolved?", "When was the ticket INC-88 filed?", "stage"),
        # A revert said by one question only (0.687, 0.621 and 0.655: served at 5%).
        ("What React version did acme/web roll back to after PR #2281?",
         "What React version did acme/web move to in PR #2281?", "stage"),
        ("Has acme/search been rolled back from Pydantic v2 to v1?",
         "Has acme/search been migrated from Pydantic v1 to v2?", "stage"),
        ("Which Kafka version was the prod cluster rolled back from?",
         "Which Kafka version does the prod cluster run?", "stage"),
        # Another value of one setting or measure (0.948 and 0.910: served from 0.5%), and
        # another level of access (0.874: served from 1%).
        ("What is the default connection pool size for orders-db?",
         "What is the max connection pool size for orders-db?", "value"),
        ("What is the measured latency for the checkout API?",
         "What is the latency budget for the checkout API?", "value"),
        ("Who has admin access to the billing database?",
         "Who has read access to the billing database?", "access"),
        # A span of time against an amount of data (0.801: served from 2%; a workday fit-third
        # pair of this kind scored 0.953).
        ("What is the size-based retention limit for the orders topic on the prod cluster?",
         "What is the retention period for the orders topic on the prod cluster?", "measure"),
        ("What is the TTL of the session cache in acme/web?",
         "What is the size of the session cache in acme/web?", "measure"),
    ],
)  # fmt: skip
def test_a_difference_in_a_slot_is_named(asked: str, stored: str, slot: str) -> None:
    assert slot in [d.slot for d in differences(asked, stored)]


@pytest.mark.parametrize(
    ("asked", "stored"),
    [
        (
            "Could you remind me why the nightly backup failed on Sunday?",
            "Why did the nightly backup fail on Sunday?",
        ),
        (
            "orders_daily row count down 40% on Mar 4 - why?",
            "Why did the row count of analytics.orders_daily drop by 40% on March 4?",
        ),
        (
            "what k8s version is prod-us-east running",
            "Which Kubernetes version is the prod-us-east cluster running?",
        ),
        (
            "Is customer_dim rebuilt every night, true or not?",
            "Is it true that the customer_dim table is rebuilt from scratch every night?",
        ),
        ("How do I register a new FeatureView?", "How do I register a new feature view?"),
        (
            "Could you let me know when the code-signing certificate expires?",
            "When does the code-signing certificate expire?",
        ),
        (
            "Would you mind telling me the TTL set on the checkout.globex.com DNS record?",
            "What is the TTL on the DNS record for checkout.globex.com?",
        ),
        (
            "sorry if this was covered already - which refund bug made customers see the wrong "
            "amount?",
            "Which refund bug caused customers to see the wrong amount?",
        ),
        (
            "Explain the spike in login failure tickets on May 13.",
            "Why did login failure tickets spike on Monday, May 13?",
        ),
        (
            "Sev2 resolution time up after the Zendesk migration?",
            "Did the resolution time for Sev-2 tickets go up after the Zendesk migration?",
        ),
        ("How do I set up a new A/B test?", "How do I set up a new test?"),
        # A bare "what" and a bare "which" both ask for a thing; "what" may ask for a degree.
        ("What version does the prod VPC pin?", "Which version does the prod VPC pin?"),
        ("How exactly does the autoscaler pick a node?", "How does the autoscaler pick a node?"),
        ("How big is the orders table?", "What is the size of the orders table?"),
        # Present and future, or present and past, stay one question.
        ("When will the cert on api.globex.com expire?",
         "When does the cert on api.globex.com expire?"),
        ("Why was the nightly build rejected?", "Why is the nightly build rejected?"),
    ],
)  # fmt: skip
def test_what_a_paraphrase_changes_is_no_slot(asked: str, stored: str) -> None:
    assert differences(asked, stored) == []


@pytest.mark.parametrize(
    ("text", "lead", "kinds"),
    [
        ("for the postmortem, what caused the outage?", "for the postmortem", {"why"}),
        ("quick q before the drill: what TTL is on the record?", "quick q before the drill",
         {"what"}),
        ("The training config - where is it kept?", "The training config", {"where"}),
        ("Why did it fail, and what fixed it?", "", {"why"}),
        ("random q, but is the feature updated in real time?", "random q", {"yes_no"}),
        ("Could you explain how traffic to the service is balanced?", "", {"how"}),
        ("Can you confirm that the cert expired?", "", {"yes_no"}),
        ("What caused the outage?", "", {"why"}),
        ("What DAG is responsible for loading stripe_charges?", "", {"what"}),
        ("Which should I learn first: Go or Rust?", "", {"which"}),
        ("quick one: how stale can finance.invoices get?", "quick one", {"degree"}),
    ],
)  # fmt: skip
def test_focus_reads_the_question_inside_lead_ins_and_requests(
    text: str, lead: str, kinds: set[str]
) -> None:
    assert split_lead(text)[0] == lead
    assert focus(text) == kinds


@pytest.mark.parametrize(
    ("text", "lead"),
    [
        ("for the postmortem, what caused the outage?", "for the postmortem"),
        ("quick q before the drill: what TTL is on the record?", "quick q before the drill"),
        # The words before the question are what it asks about: it points back at them, or
        # has no subject of its own.
        ("The training config - where is it kept?", ""),
        ("The table is rebuilt every night - is that true?", ""),
        ("jenkins-deployer flagged in the Q2 review - why?", ""),
        ("orders_daily rows on Mar 4 - what is the count?", ""),
    ],
)  # fmt: skip
def test_a_question_s_topic_set_before_it_is_no_lead_in(text: str, lead: str) -> None:
    assert split_topic(text)[0] == lead


def test_a_lead_in_that_adds_words_to_a_whole_question_is_no_swap() -> None:
    added = default_model().assess(
        "For the postmortem: what caused the scheduler outage on June 12?",
        "What caused the scheduler outage on June 12?",
    )
    assert added.reason is None
    assert (added.probability or 0.0) >= default_model().threshold(0.001)


@pytest.mark.parametrize(
    ("text", "wrapper"),
    [
        ("Could you let me know when the cert runs out?", "Could you let me know"),
        ("Would you be able to tell me who approved it?", "Would you be able to tell me"),
        ("I was hoping you could tell me how many runs failed", "I was hoping you could tell me"),
        ("Do you remember what batch size we used?", "Do you remember"),
        ("Walk me through adding a feature view.", "Walk me through"),
        ("Point me at the training config.", "Point me at"),
        ("Could you tell me the TTL of the record?", "Could you tell me"),
        # Not wrappers: a question word first, a subject before "me", two clauses, no one
        # spoken to.
        ("Why does it fail for me on staging?", ""),
        ("Does prod page me on 5xx errors?", ""),
        ("Did you deploy to staging and what broke?", ""),
        ("I deployed it, what happened?", ""),
        ("How do I rotate the key?", ""),
    ],
)  # fmt: skip
def test_a_request_wrapped_around_a_question_is_read_apart(text: str, wrapper: str) -> None:
    found, rest = request_frame(text)
    assert found == wrapper
    assert f"{found} {rest}".strip() == text


def test_the_words_of_a_request_are_no_substitution() -> None:
    stored = "Who approved the promotion of churn model v9 to production?"
    wrapped = default_model().assess(
        f"Would you be able to tell me {stored[0].lower()}{stored[1:]}", stored
    )
    assert wrapped.reason is None and "able" not in wrapped.asked_only
    # A word before "me" that names the subject stays in the question.
    roles = align("Does prod page me on 5xx errors?", stored).turn_roles
    assert not {"lead", "request"} & set(roles)


def test_superscript_and_subscript_digits_never_fold_into_plain_digits() -> None:
    assert normalize("10⁶ requests").content != normalize("106 requests").content
    assert normalize("x²").content != normalize("x2").content
    assert normalize("x₂").content != normalize("x2").content
    assert normalize("x₂").content != normalize("x²").content


# -- the alignment's refusals and the score ------------------------------------------------------


def test_two_words_that_traded_places_are_another_question() -> None:
    found = default_model().assess(
        "Which flights go from Boston to Denver?", "Which flights go from Denver to Boston?"
    )
    assert found.reason == "word_order"


def test_two_words_that_traded_their_numbers_are_another_question() -> None:
    found = default_model().assess(
        "The single was announced on October 31 and released on November 13.",
        "The single was released on October 31 and announced on November 13.",
    )
    assert found.reason == "word_order"
    # A date moved with its word keeps its word: no trade.
    moved = default_model().assess(
        "How many pods were evicted on August 2 during the spot interruption?",
        "During the spot interruption on August 2, how many pods were evicted?",
    )
    assert moved.reason != "word_order"


def test_a_possessive_is_read_as_the_of_phrase_it_stands_for() -> None:
    assert "How many targets does the target group of prod-web ALB have?" in (
        possessive_unfoldings("How many targets does the prod-web ALB's target group have?")
    )
    assert possessive_unfoldings("Which IAM users' access keys are old?")[-1] == (
        "Which access keys of IAM users are old?"
    )
    assert possessive_unfoldings("What's the pool size, and where's it set?") == ()
    # Refused as a reordering when the possessive was read as it stands; read unfolded, scored.
    found = alignment().assess(
        "Is the online feature store's user_ltv_30d feature updated in real time?",
        "Is the user_ltv_30d feature in the online feature store updated in real time?",
    )
    assert found.reason is None and found.probability is not None
    # Two things that traded places around a possessive are a change of roles.
    traded = default_model().assess(
        "Why did the scheduler's retry queue block the webserver?",
        "Why did the webserver's retry queue block the scheduler?",
    )
    assert traded.reason == "word_order"


def test_a_topic_set_before_its_question_is_read_where_the_question_points_at_it() -> None:
    assert topic_reading("The nightly backup's retention policy: where is it configured?") == (
        "where is the nightly backup's retention policy configured?"
    )
    assert topic_reading("Every night the orders table is rebuilt - is that true?") == (
        "is it true that every night the orders table is rebuilt?"
    )
    assert topic_reading("the Friday deploy of acme/api - why?") == (
        "why the Friday deploy of acme/api?"
    )
    assert topic_reading("For the postmortem: what caused the outage?") is None  # a lead-in
    assert topic_reading("The backup job - what broke this week?") is None  # "this" is a time
    model = alignment()
    # Refused as a reordering when read as written; read where the question points, scored.
    found = model.assess(
        "The nightly backup job's retention policy: where is it configured?",
        "Where is the retention policy for the nightly backup job configured?",
    )
    assert found.reason is None and found.probability is not None
    # Two things that traded places in the topic's reading are a change of roles.
    traded = model.assess(
        "The webserver: why did it block the scheduler?",
        "Why did the scheduler block the webserver?",
    )
    assert traded.reason == "word_order"


@pytest.mark.parametrize(
    ("asked", "stored"),
    [
        ("What caused the Airflow webserver outage on June 12?",
         "What caused the Airflow scheduler outage on June 12?"),
        # Read as a lead-in, a topic's words were spared the substitution test, and this was
        # served the scheduler's answer.
        ("Airflow webserver outage on June 12 - what caused it?",
         "What caused the Airflow scheduler outage on June 12?"),
        # Spared the test, a lead-in that names what is asked scored 0.96 to 0.97 against the
        # scheduler's question: served at the 0.5% budget.
        ("About the webserver: what caused the outage on June 12?",
         "What caused the scheduler outage on June 12?"),
        ("About the webserver: what caused the outage on June 12?",
         "About the scheduler: what caused the outage on June 12?"),
        ("For the webserver, what caused the outage on June 12?",
         "What caused the scheduler outage on June 12?"),
        ("For the webserver, what caused the outage on June 12?",
         "About the scheduler: what caused the outage on June 12?"),
    ],
)  # fmt: skip
def test_a_word_swapped_for_an_unrelated_one_is_refused(asked: str, stored: str) -> None:
    found = alignment().assess(asked, stored)
    # Neither word is common English: two things named, the `name` veto (Substitution.renamed),
    # which no score overrules; a swap with a common word is a `substitution` (below).
    assert found.reason == "name"
    assert (found.asked_only, found.stored_only) == (("webserver",), ("scheduler",))
    database = alignment().assess(asked, stored.replace("scheduler", "database"))
    assert (database.reason, database.stored_only) == ("substitution", ("database",))


@pytest.mark.parametrize(
    ("asked_only", "stored_only", "renamed"),
    [
        (["vota", "bexne"], ["shita", "denlotri"], True),  # made-up names, both sides
        (["Qorvex"], ["zephlin"], True),
        (["fv"], ["view"], False),  # an abbreviation against a common word
        (["kuberentes"], ["kubernetes"], False),  # a slip
        (["helpdesk"], ["lumen/helpdesk-sync"], False),  # a part of it, and not a plain word
        (["helpdesk"], ["helpdesks"], False),
        (["vota", "pinned"], ["shita"], False),  # a common word among the swapped
        (["vota"], [], False),  # one side only adds a word
    ],
)  # fmt: skip
def test_a_swap_of_made_up_names_is_a_renaming(
    asked_only: list[str], stored_only: list[str], renamed: bool
) -> None:
    assert Substitution(asked_only, stored_only, closest=0.0).renamed is renamed


def test_a_renaming_is_a_veto_the_pair_model_does_not_overrule() -> None:
    # Scored 0.961 by the pair model over the default budget's 0.957 before it was a veto.
    found = default_model().assess(
        "Which vota version does bexne pin for fenlin?",
        "Which shita version does fenlin pin for denlotri?",
    )
    assert (found.reason, found.probability) == ("name", None)
    assert (found.asked_only, found.stored_only) == (("vota", "bexne"), ("shita", "denlotri"))


def spelled(asked: str, stored: str) -> list[str]:
    return [word.surface for word in align(asked, stored).turn]


def test_an_acronym_in_capitals_aligns_with_the_words_it_stands_for() -> None:
    assert spelled(
        "owner of the NSM dash in Looker?", "Who owns the north-star metrics dashboard in Looker?"
    ) == ["north", "star", "metrics", "dash", "looker"]
    # A function word inside the spelled-out words counts for its letter ("add-to-cart").
    assert spelled(
        "ATC event name in the web analytics schema?",
        "Which event tracks add-to-cart in the web analytics schema?",
    )[:2] == ["add", "cart"]
    found = default_model().assess(
        "How do I add a new experiment to the FF platform?",
        "How do I add a new experiment to the feature flag platform?",
    )
    assert found.reason is None and not found.asked_only and not found.stored_only


def test_only_capitals_and_matching_initials_are_read_as_an_acronym() -> None:
    # Lower-case letters are a word or a shortening, not an acronym.
    assert "fs" in spelled("how big is the fs repo?", "How big is the feature store repo?")
    # Capitals whose letters start no run of words on the other side stay themselves.
    assert "nsm" in spelled("owner of the NSM dashboard?", "Who owns the sales dashboard?")
    # Both sides naming the acronym align as they are.
    assert spelled("Who owns the FF platform?", "Who owns the FF platform?")[0] == "ff"


def test_words_an_acronym_s_own_side_has_are_not_what_it_stands_for() -> None:
    # "AR" after "alcohol rehab" is a state, not those two words again.
    stored = "Which is a suitable inpatient drug and alcohol rehab center in Calhoun County AR?"
    other = "Which is a suitable rehab center in Calhoun County AL?"
    assert spelled(stored, other)[-1] == "ar"


def test_one_acronym_in_place_of_another_is_another_name() -> None:
    found = differences(
        "Which is a suitable inpatient drug and alcohol rehab center in Calhoun County AL?",
        "Which is a suitable inpatient drug and alcohol rehab center in Calhoun County AR?",
    )
    assert [(d.slot, d.asked, d.stored) for d in found] == [("name", ("al",), ("ar",))]
    # An acronym one side adds or spells out is shorthand, not a difference.
    assert (
        differences(
            "which DAG lands stripe_charges in the prod DWH?",
            "Which DAG loads the stripe_charges table into the production warehouse?",
        )
        == []
    )
    assert differences("Who owns the GHA runners?", "who owns the github actions runners?") == []
    # Text typed all in capitals says nothing by its capitals (the words are still compared).
    shouted = differences("WHO OWNS THE BIG RUNNERS?", "WHO OWNS THE NEW RUNNERS?")
    assert all(d.slot != "name" for d in shouted)


def test_a_one_letter_unit_is_read_only_in_lower_case() -> None:
    # "5S" names a model; "5s" is five seconds.
    assert [d.slot for d in differences(
        "How long does an iPhone 5 battery last?", "How long does the battery on my iPhone 5S last?"
    )] == ["number_or_date"]  # fmt: skip
    assert differences("Why is the timeout 5s?", "Why is the timeout 5 seconds?") == []


def test_an_ordinal_stays_with_its_noun() -> None:
    found = alignment().assess(
        "The 1st constituency of Finistere is a French constituency in the Finistere department.",
        "The French constituency of Finistere is a 1st constituency in the Finistere department.",
    )
    assert found.reason == "word_order"


def test_a_noun_beside_a_year_or_an_ordinal_is_not_a_kind_noun() -> None:
    # "biology" narrows the question; it does not say what kind of thing "11th" is.
    model = alignment()
    narrowed = model.assess(
        "How can I study for class 11th?", "How can I study for class 11th biology?"
    )
    same = model.assess("How can I study for class 11th?", "How should I study for class 11th?")
    assert narrowed.stored_only == ("biology",)
    assert narrowed.probability is not None and same.probability is not None
    assert narrowed.probability < same.probability


def test_word_vectors_are_read_on_several_threads_past_their_cache_size() -> None:
    # Lookups run on several threads. The word vectors were a dict trimmed by hand once full:
    # two threads trimming it both dropped its oldest word, and the second raised KeyError.
    # Three threads, each with more new words than the cache holds, switching often.
    import threading

    errors: list[BaseException] = []

    def embed(thread: int) -> None:
        try:
            for i in range(20_000):
                word_vector(f"zq{thread}x{i}")
        except BaseException as error:  # any failure on a thread is the finding
            errors.append(error)

    switching = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        threads = [threading.Thread(target=embed, args=(n,)) for n in range(3)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        sys.setswitchinterval(switching)
        word_vector.cache_clear()
    assert errors == []
    assert float(np.linalg.norm(word_vector("zq0x1"))) == pytest.approx(1.0, abs=1e-5)


def test_a_rare_word_cut_into_many_pieces_has_no_embedding_to_compare() -> None:
    assert pieces("zervodexios") > MAX_PIECES
    assert cosine("zervodexios", "cervodexiosis") == 0.0
    assert cosine("failing", "broke") > 0.0
    found = alignment().assess(
        "The zervodexios is a form of a Greek folk dance from Greece and Thrace, Macedonia.",
        "The cervodexiosis is a form of a Greek folk dance from Greece and Thrace, Macedonia.",
    )
    assert found.reason == "name"  # two uncommon words, neither a slip of the other
    # Capitalised at the start of the sentence, the rare word is read as a name first.
    named = default_model().assess(
        "Zervodexios is a form of a Greek folk dance.",
        "Cervodexiosis is a form of a Greek folk dance.",
    )
    assert named.reason == "name"


def test_rolling_back_a_deploy_is_the_opposite_of_deploying() -> None:
    found = differences(
        "How long does rolling back the payments-gateway deployment take in production?",
        "How long does a rolling deploy of payments-gateway take in production?",
    )
    assert [d.slot for d in found] == ["polarity"]
    # Both sides undoing a deploy, in two words, ask one thing.
    assert differences("Why did the deploy get rolled back?", "Why was the deploy reverted?") == []


def test_the_order_of_every_word_is_measured_beside_the_content_words() -> None:
    def order_all(asked: str, stored: str) -> float:
        model = default_model()
        values = features(asked, stored, align(asked, stored), model.filler)
        return values[FEATURES.index("order_all")]

    # The same content words in the same order, function words dropped or swapped: all kept.
    assert (
        order_all(
            "Why did p99 latency on the search endpoint double last week?",
            "Why did the p99 latency of the search endpoint double last week?",
        )
        == 1.0
    )
    # The same words rearranged around the content words (PAWS's hardest negatives): not.
    assert (
        order_all(
            "Both daughters died before he did, in Tosca in 1976.",
            "Both daughters did before he died, in Tosca in 1976.",
        )
        < 1.0
    )


def test_a_wrapper_scores_higher_than_an_added_requirement() -> None:
    model = default_model()
    wrapped = model.assess(
        "Could you remind me why the nightly backup failed on Sunday?",
        "Why did the nightly backup fail on Sunday?",
    )
    narrowed = model.assess(
        "Why did the nightly backup fail on Sunday for the marketplace sellers database?",
        "Why did the nightly backup fail on Sunday?",
    )
    assert wrapped.probability is not None
    assert narrowed.probability is None or narrowed.probability < wrapped.probability


@pytest.mark.parametrize("form", ["question", "statement"])
def test_a_larger_budget_never_raises_the_threshold(form: Form) -> None:
    model = default_model()
    thresholds = [model.threshold(b, form) for b in sorted(model.budgets)]
    assert thresholds == sorted(thresholds, reverse=True)
    assert model.threshold(DEFAULT_BUDGET / 10, form) == model.threshold(min(model.budgets), form)


def test_a_stored_text_is_a_question_when_it_ends_with_a_question_mark() -> None:
    assert text_form("Why did the nightly backup fail on Sunday?  ") == "question"
    assert text_form("Why did the nightly backup fail on Sunday") == "statement"
    assert text_form("Lysos is a village in Paphos .") == "statement"


def test_each_form_is_served_at_its_own_calibrated_threshold() -> None:
    params = dict(default_model().params)
    params["calibration"] = [
        {"budget": 0.001, "threshold": 0.97, "statement_threshold": 0.99},
        {"budget": 0.01, "threshold": 0.8, "statement_threshold": 0.85},
    ]
    model = GateModel(params)
    assert model.threshold_for(0.001, "Why did the backup fail?") == 0.97
    assert model.threshold_for(0.001, "The backup failed on Sunday.") == 0.99
    assert model.threshold_for(0.05, "The backup failed on Sunday.") == 0.85
    # A file calibrated before the forms were told apart holds one threshold for both.
    params["calibration"] = [{"budget": 0.001, "threshold": 0.97}]
    assert GateModel(params).threshold(0.001, "statement") == 0.97


def test_the_trees_add_the_leaves_each_measure_reaches() -> None:
    # Two stumps: the first splits on measure 0 at 0.5, the second on measure 1 at 2.0.
    trees = Trees(
        {
            "baseline": -1.0,
            "roots": [0, 3],
            "feature": [0, 0, 0, 1, 0, 0],
            "threshold": [0.5, 0.0, 0.0, 2.0, 0.0, 0.0],
            "left": [1, -1, -1, 4, -1, -1],
            "right": [2, -1, -1, 5, -1, -1],
            "value": [0.0, 0.25, 1.5, 0.0, -0.5, 0.75],
        }
    )
    assert trees.log_odds([0.5, 2.0]) == pytest.approx(-1.0 + 0.25 - 0.5)
    assert trees.log_odds([0.9, 3.0]) == pytest.approx(-1.0 + 1.5 + 0.75)
    with pytest.raises(GateParamsError, match="lengths"):
        Trees({**trees_spec_of(trees), "value": [0.0]})


def trees_spec_of(trees: Trees) -> dict[str, Any]:
    return {
        "baseline": trees.baseline, "roots": trees.roots, "feature": trees.feature,
        "threshold": trees.threshold, "left": trees.left, "right": trees.right,
        "value": trees.value,
    }  # fmt: skip


def test_parameters_fitted_for_other_features_are_refused() -> None:
    params = dict(default_model().params)
    params["features"] = [*FEATURES, "something_new"]
    with pytest.raises(GateParamsError, match="other features"):
        GateModel(params)
    with pytest.raises(GateParamsError):
        GateModel({k: v for k, v in default_model().params.items() if k != "calibration"})


# -- on a real store ------------------------------------------------------------------------------


async def test_the_second_look_serves_a_paraphrase_within_a_loose_budget(
    put: PutClaim, store: StaffStore
) -> None:
    claim = await put("Why did the nightly backup fail on Sunday?", "The disk filled up.")
    decision = await ask(store, "nightly backup sunday failed why", gate_budget=LOOSE)
    assert (decision.outcome, decision.reason, decision.claim_id) == ("hit", "paraphrase", claim.id)
    assert decision.budget == LOOSE
    assert decision.threshold is not None and decision.score is not None
    assert decision.score >= decision.threshold


async def test_at_the_default_budget_the_same_turn_misses_and_says_by_how_much(
    put: PutClaim, store: StaffStore
) -> None:
    claim = await put("Why did the nightly backup fail on Sunday?", "The disk filled up.")
    decision = await ask(store, "nightly backup sunday failed why")
    threshold = default_model().threshold(DEFAULT_BUDGET)
    assert decision.claim_id == claim.id
    assert decision.budget == DEFAULT_BUDGET and decision.threshold == threshold
    assert decision.score is not None
    assert decision.hit == (decision.score >= threshold)


async def test_a_stored_statement_is_held_to_the_statement_threshold(
    put: PutClaim, store: StaffStore
) -> None:
    # The same stored finding written as a statement: the miss names the statement threshold.
    claim = await put("The nightly backup failed on Sunday because the disk filled", "Yes.")
    decision = await ask(store, "On Sunday the nightly backup failed as the disk was full")
    assert decision.claim_id == claim.id and decision.score is not None
    threshold = default_model().threshold(DEFAULT_BUDGET, "statement")
    assert decision.budget == DEFAULT_BUDGET and decision.threshold == threshold
    assert decision.hit == (decision.score >= threshold)


async def test_a_strict_match_carries_no_threshold(put: PutClaim, store: StaffStore) -> None:
    await put("Why did the nightly backup fail on Sunday?", "The disk filled up.")
    decision = await ask(store, "why did the nightly backup fail on sunday", gate_budget=LOOSE)
    assert decision.hit and decision.threshold is None and decision.budget is None


async def test_a_changed_day_is_never_served_whatever_the_budget(
    put: PutClaim, store: StaffStore
) -> None:
    await put("Why did the nightly backup fail on Sunday?", "The disk filled up.")
    turn = "quick question: why did nightly backup fail monday"
    decision = await ask(store, turn, gate_budget=1.0)
    assert decision.outcome == "miss"


async def test_superscript_numbers_are_not_served_the_plain_numbers_answer(
    put: PutClaim, store: StaffStore
) -> None:
    await put("How long do 106 requests take on the staging proxy?", "About 2 seconds.")
    await put("What is x2 in the cost model?", "The egress term.")
    for text in ("How long do 10⁶ requests take on the staging proxy?",
                 "What is x² in the cost model?", "What is x₂ in the cost model?"):  # fmt: skip
        decision = await ask(store, text, gate_budget=1.0)
        assert decision.outcome == "miss", text


async def test_the_second_look_finds_a_question_that_shares_only_a_rare_word(
    put: PutClaim, store: StaffStore
) -> None:
    for n in range(30):  # neighbours that share the common words
        await put(f"Why did the nightly job {n} fail on Sunday?", f"Reason {n}.")
    claim = await put(
        "Which Airflow DAG loads the stripe_charges table into the production warehouse?",
        "dag_stripe_charges_load.",
    )
    decision = await ask(
        store, "which airflow dag loads stripe_charges into the production warehouse please",
        gate_budget=LOOSE,
    )  # fmt: skip
    assert decision.claim_id == claim.id


# -- the command line -----------------------------------------------------------------------------


def test_query_json_shows_the_score_the_threshold_and_the_budget(tmp_path: Any) -> None:
    from typer.testing import CliRunner

    from staffstore.cli import app

    runner = CliRunner()
    db = str(tmp_path / "s.db")
    added = runner.invoke(app, ["--db", db, "claims", "add", "--owner", "acme", "--agent", "ops",
                                "--question", "Why did the nightly backup fail on Sunday?",
                                "--answer", "The disk filled up."])  # fmt: skip
    assert added.exit_code == 0, added.output
    turn = "why was sunday nightly backup broken"
    result = runner.invoke(app, ["--db", db, "query", "--owner", "acme", "--json",
                                 "--gate-budget", str(LOOSE), turn])  # fmt: skip
    assert result.exit_code == 0, result.output
    shown = json.loads(result.stdout)
    assert (shown["outcome"], shown["budget"]) == ("hit", LOOSE)
    assert shown["score"] >= shown["threshold"]
    refused = runner.invoke(app, ["--db", db, "query", "--owner", "acme", "--gate-budget", "2",
                                  "why"])  # fmt: skip
    assert refused.exit_code == 2


# -- the proxy -------------------------------------------------------------------------------------


def test_a_server_with_a_loose_budget_serves_a_paraphrase_the_default_does_not(
    tmp_path: Any,
) -> None:
    from test_proxy_support import ADMIN_KEYS, ask, running_proxy

    question = "Why did the nightly backup fail on Sunday?"
    turn = "why was sunday nightly backup broken"
    outcomes = {}
    for budget in (None, LOOSE):
        with running_proxy(tmp_path / f"proxy-{budget}.db", gate_budget=budget) as server:
            stored = server.post(
                {"owner": "alice", "question": question, "answer": "The disk filled up."},
                key=ADMIN_KEYS["alice"],
                path="/staffstore/claims",
            )
            assert stored.status_code == 201, stored.text
            response = server.post(ask(turn))
            outcomes[budget] = response.headers["x-staffstore-outcome"]
            if budget is not None:
                assert server.upstream.fake.chat_requests == []
    assert outcomes == {None: "miss", LOOSE: "hit"}


def test_the_serve_config_refuses_a_budget_outside_zero_to_one(tmp_path: Any) -> None:
    from staffstore.errors import InputError
    from staffstore.proxy.config import build_config

    db = tmp_path / "s.db"
    assert build_config(db_path=db, trusted=True, gate_budget=0.02).gate_budget == 0.02
    with pytest.raises(InputError, match="gate_budget"):
        build_config(db_path=db, trusted=True, gate_budget=2)


# -- the embedding loads without touching the application's logging ----------------------------


def test_loading_the_embedding_leaves_the_applications_logging_alone() -> None:
    # A fresh interpreter: in this one the embedding may have been loaded by an earlier test.
    # wordllama's import calls logging.basicConfig(level=INFO), which made every process print
    # each request httpx sent once the second look had run.
    script = (
        "import logging\n"
        "from staffstore.gate import warm_up\n"
        "from staffstore.text.similarity import _table\n"
        "warm_up()\n"
        "assert _table.cache_info().currsize == 1, 'the embedding was not loaded'\n"
        "root = logging.getLogger()\n"
        "print(len(root.handlers), root.level, logging.getLogger('httpx').isEnabledFor(20))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True
    )
    assert done.stdout.split() == ["0", str(logging.WARNING), "False"]
    assert done.stderr == ""


def test_the_mapped_embedding_gives_wordllamas_own_vectors() -> None:
    # The table is read as shipped (float16, mapped) instead of through WordLlama, which widens
    # all of it to float32 on load; pooling the widened rows of a text must give the same
    # vector to the bit, or every score calibrated on the old vectors would move.
    from wordllama import WordLlama

    from staffstore.text.similarity import _embed, _table, _wordllama_folder

    theirs = WordLlama.load(cache_dir=_wordllama_folder(), disable_download=True)
    tokenizer, table = _table()
    assert isinstance(table, np.memmap)
    assert table.dtype == np.float16
    assert table.shape == theirs.embedding.shape
    for text in ["deploy", "nightly backup", "k8s", "why did the deploy fail?", "zzqxv", ""]:
        ids = theirs.tokenizer.encode(text, add_special_tokens=False).ids
        assert tokenizer.encode(text, add_special_tokens=False).ids == ids
        if ids:
            pooled = theirs.embedding[ids].mean(axis=0)
            expected = pooled / np.linalg.norm(pooled)
        else:
            expected = np.zeros(table.shape[1], dtype=np.float32)
        assert np.array_equal(_embed(text), expected), text


def slot_differences(asked: str, stored: str) -> list[tuple[str, tuple[str, ...], tuple[str, ...]]]:
    """Each difference the slots find, as (slot, the turn's words, the stored words)."""
    return [(d.slot, d.asked, d.stored) for d in differences(asked, stored)]


def test_a_name_said_a_different_number_of_times_is_another_name() -> None:
    # Both sides name Hollinwood, but one names it again where the other names Oldham alone.
    assert slot_differences(
        "Is the Hollinwood Branch Canal a canal near Oldham in England?",
        "Is the Hollinwood Branch Canal a canal near Hollinwood, in Oldham, England?",
    ) == [("name", ("hollinwood",), ("hollinwood",))]
    # Said once on each side, however the sentences differ, a name is the same name.
    assert (
        differences(
            "Why did the Okta sync fail for Okta users?",
            "For Okta users, why did the Okta sync fail?",
        )
        == []
    )


def test_a_first_word_no_dictionary_knows_is_read_as_a_name() -> None:
    # A sentence's first word is capitalised anyway; one that is no common word is a name.
    assert slot_differences(
        "Tres vidas distintas is a 1969 telenovela by Televisa.",
        "vidas distintas is a 1969 telenovela by Televisa.",
    ) == [("name", ("tres",), ())]
    # A common first word is not ("Show me ..."), and a first-word name the other side also
    # says, in any case or place, agrees.
    assert differences("Show me the Okta logs.", "the Okta logs, please") == []
    assert (
        differences("Airflow scheduler down - why?", "why did the airflow scheduler go down?") == []
    )


def test_two_letters_do_not_abbreviate_a_part_of_an_identifier() -> None:
    assert slot_differences(
        "Which packages rebuild when shared/ui changes?",
        "Which packages rebuild when shared/utils changes?",
    ) == [("identifier", ("shared/ui",), ("shared/utils",))]
    # Three letters or more still do.
    assert differences("Who owns cert-mgr?", "Who owns cert-manager?") == []


def test_an_operator_or_a_language_suffix_is_part_of_what_is_asked() -> None:
    # "==" is not "===", "+=" not "=", C++ and C# not C: each is its own identifier.
    assert slot_differences(
        "What is the difference between == and === in JavaScript?",
        "What is the difference between = and == in JavaScript?",
    ) == [("identifier", ("===",), ("=",))]
    assert slot_differences("What does x += 1 do in Python?", "What does x = 1 do in Python?") == [
        ("identifier", ("+=",), ("=",))
    ]
    assert slot_differences("How do I learn C++ quickly?", "How do I learn C quickly?") == [
        ("identifier", ("c++",), ())
    ]
    assert slot_differences("Is C# faster than Java?", "Is C faster than Java?") == [
        ("identifier", ("c#",), ())
    ]
    # The same operator or language on both sides is no difference.
    both = slot_differences("Is C++ faster than Rust?", "Is C++ slower than Rust?")
    assert [slot for slot, _asked, _stored in both] == ["polarity"]
    assert not slot_differences("When is == safe in JS?", "When is == safe to use in JS?")
    # A dash between words is punctuation, and "#" before a number only marks it.
    assert [w.surface for w in words("pods evicted - how many?")] == [
        "pods",
        "evicted",
        "how",
        "many",
    ]
    assert not slot_differences("Why did PR #812 drop rows?", "Why did PR 812 drop rows?")


def test_a_word_across_and_from_an_identifier_is_another_item_not_its_kind() -> None:
    # "angel" is a second kind of investor, not the kind of thing "pre-seed" names.
    model = default_model()
    listed = model.assess(
        "Where can I find pre-seed investors?", "Where can I find pre-seed and angel investors?"
    )
    assert listed.stored_only == ("angel",)
    # Across a preposition, the noun is the thing asked about, not a kind-noun.
    certificate = model.assess(
        "When does the certificate for api.acme.dev expire?", "When does api.acme.dev expire?"
    )
    assert certificate.asked_only == ("certificate",)
    # Right beside the identifier, a noun still only says what kind of thing it is.
    kind = model.assess("Who owns the orders_daily table?", "Who owns orders_daily?")
    assert kind.reason is None and kind.stored_only == ()


def test_a_slip_inside_an_identifier_still_aligns_it() -> None:
    # The slots read "notifcation-worker" as "notification-worker"; the alignment agrees.
    found = default_model().assess(
        "what cpu request do the notifcation-worker pods have",
        "What CPU request is set for the notification-worker pods?",
    )
    assert found.reason is None and "notifcation-worker" not in found.asked_only
    # Another number in an identifier is another thing, whatever the letters share.
    assert default_model().assess("Who owns exp-320?", "Who owns exp-321?").reason == (
        "number_or_date"
    )


def test_the_words_that_negate_are_the_negation_slot_not_the_subject() -> None:
    # "couldn't add" and "failed to add" are both negated; neither word is left over.
    found = default_model().assess(
        "Why couldn't the cluster autoscaler add nodes during the November 24 spike?",
        "Why did the cluster autoscaler fail to add nodes during the November 24 spike?",
    )
    assert found.reason is None
    assert found.asked_only == () and found.stored_only == ()
    # Negated on one side only is still another question.
    assert slot_differences(
        "Why did the cluster autoscaler add nodes?", "Why didn't the cluster autoscaler add nodes?"
    ) == [("negation", (), ("not",))]
    assert [w.surface for w in words("Why won't it scale?")] == [
        "why",
        "will",
        "not",
        "it",
        "scale",
    ]


def test_how_often_and_how_frequently_ask_the_same() -> None:
    assert focus("How often are the Stripe API keys rotated?") == focus(
        "Tell me how frequently the Stripe API keys get rotated."
    )
    assert focus("Backfilling one partition: how is that done?") == focus(
        "How do I backfill one partition?"
    )


def test_renewing_is_the_opposite_of_expiring() -> None:
    # The substitution veto lets less alike pairs reach the score than it did; this pair, one
    # word apart in an otherwise identical question, is kept apart by the polarity slot.
    assert slot_differences(
        "When does the TLS certificate for api.acme.dev renew?",
        "When does the TLS certificate for api.acme.dev expire?",
    ) == [("polarity", ("renew",), ("expire",))]


def test_best_and_worst_are_superlatives() -> None:
    assert slot_differences(
        "What are PepsiCo products?", "What are the best PepsiCo products?"
    ) == [("degree", (), ("best",))]
    assert slot_differences(
        "Which deploy had the worst rollback time?", "Which deploy had a long rollback time?"
    ) == [("degree", ("worst",), ())]


def test_a_number_only_a_lead_in_names_does_not_count() -> None:
    stored = "Which AWS IAM users still have access keys older than 180 days?"
    assert slot_differences(f"for the SOC 2 audit: {stored.lower()}", stored) == []
    # The question's own numbers still count, and so does a lead-in's number the other side has.
    assert slot_differences(
        "for the SOC 2 audit: which AWS IAM users still have access keys older than 90 days?",
        stored,
    ) == [("number_or_date", ("2", "90"), ("180",))]
    assert slot_differences(
        "for March 4: why did the row count of orders_daily drop?",
        "Why did the row count of orders_daily drop on March 5?",
    ) == [("number_or_date", ("4", "march"), ("5", "march"))]


def test_who_after_a_noun_opens_a_relative_clause() -> None:
    assert (
        focus("What was the day-30 retention for users who signed up in August?")
        == focus("What was the August signup cohort's day-30 retention?")
        == {"what"}
    )
    assert focus("I'd like to know who approved the change") == {"who"}


def test_a_date_asked_for_is_a_when_question() -> None:
    assert (
        focus("Tell me the expiry date of the TLS certificate for api.globex.com.")
        == focus("When does the TLS certificate for api.globex.com expire?")
        == {"when"}
    )
    assert focus("Which users still have admin access?") == focus("Who still has admin access?")
    assert (
        focus("What team owns the fct_orders model?")
        == focus("Which team owns the fct_orders model?")
        == {"who"}
    )


async def test_a_date_written_another_way_is_read_by_the_second_look(
    put: PutClaim, store: StaffStore
) -> None:
    # Its words with digits differ ("1", "2025" / "2025-03-01"); its number slot does not.
    claim = await put(
        "How many invoices failed to generate in the invoice-worker prod run on 2025-03-01?", "12."
    )
    await put(
        "How many invoices failed to generate in the invoice-worker prod run on 2025-03-02?", "3."
    )
    decision = await ask(
        store,
        "Could you tell me how many invoices failed to generate during the invoice-worker "
        "production run on 1 March 2025?",
        gate_budget=LOOSE,
    )
    assert (decision.outcome, decision.claim_id) == ("hit", claim.id)
    assert decision.threshold is not None  # served by the second look, not the strict test


async def test_a_turn_whose_it_points_at_its_own_topic_is_no_follow_up(
    put: PutClaim, store: StaffStore
) -> None:
    claim = await put("What's the message retention period on the billing-events SQS queue?", "4d.")
    decision = await ask(
        store, "billing-events SQS queue: what's the message retention period on it?",
        gate_budget=LOOSE,
    )  # fmt: skip
    assert (decision.outcome, decision.claim_id) == ("hit", claim.id)
    # With no topic of its own, the same "it" points at an earlier turn.
    assert (await ask(store, "what's the message retention period on it?")).reason == "follow_up"


async def test_the_lookups_read_what_the_second_look_scores_once_the_read_is_over(
    put: PutClaim, store: StaffStore
) -> None:
    await put("Why did the nightly backup fail on Sunday?", "The disk filled up.")
    await put("Which port does the billing api listen on?", "8443.")

    async def looked_up(turn: Turn) -> Decision | Candidates:
        return await store.run_read(lambda sync: look_up(sync, turn))

    async def in_one_call(turn: Turn) -> Decision:
        return await store.run_read(lambda sync: query_first_sync(sync, turn))

    # The strict test settles these in the read: the decision comes back, nothing to score.
    for text in ("Why did the nightly backup fail on Sunday?", "", "and why?"):
        assert isinstance(await looked_up(Turn(owner="alice", text=text)), Decision)
    # These it does not: the candidates come back, and their decision is query_first's.
    for text in (
        "nightly backup sunday failed why",
        "which port does the billing api listen on in staging?",
        "what port is the billing service on?",
    ):
        turn = Turn(owner="alice", text=text, gate_budget=LOOSE)
        found = await looked_up(turn)
        assert isinstance(found, Candidates) and found.claims
        assert found.decide() == await query_first(store, turn)
        # In one call, holding the read connection while it scores, it decides the same.
        assert found.decide() == await in_one_call(turn)
