"""The question alone (text/framing.py): a turn without its greeting, lead-in, request and
thanks."""

from __future__ import annotations

import pytest

from staffstore.text.framing import bare_question

QUESTION = "Why does the nightly backup fail on dbhost?"


@pytest.mark.parametrize(
    "framed",
    [
        "hey, why does the nightly backup fail on dbhost?",
        "Hi team - why does the nightly backup fail on dbhost?",
        "quick q: why does the nightly backup fail on dbhost?",
        "ok so why does the nightly backup fail on dbhost?",
        "for the postmortem: why does the nightly backup fail on dbhost?",
        "For the weekly report, why does the nightly backup fail on dbhost?",
        "for my design doc - why does the nightly backup fail on dbhost?",
        "hey, for the incident review: why does the nightly backup fail on dbhost?",
        "Sorry if this is a dumb question, why does the nightly backup fail on dbhost?",
        "random q, why does the nightly backup fail on dbhost?",
        "just checking before I schedule maintenance - why does the nightly backup fail on dbhost?",
        "why does the nightly backup fail on dbhost? thanks",
        "Why does the nightly backup fail on dbhost? Thank you!",
    ],
)
def test_greetings_lead_ins_and_thanks_are_left_out(framed: str) -> None:
    assert bare_question(framed) == QUESTION


@pytest.mark.parametrize(
    ("framed", "bare"),
    [
        ("Could you tell me why the backup fails?", "Why the backup fails?"),
        ("can you remind me when the cert expires?", "When the cert expires?"),
        ("walk me through how the deploy works", "How the deploy works"),
        ("Tell me how many agents are on call.", "How many agents are on call."),
        ("Explain why the backup fails on dbhost.", "Why the backup fails on dbhost."),
        ("please find out which version prod runs", "Which version prod runs"),
        ("check whether the cert expired", "Whether the cert expired"),
    ],
)
def test_a_request_around_the_question_is_left_out(framed: str, bare: str) -> None:
    assert bare_question(framed) == bare


@pytest.mark.parametrize(
    "text",
    [
        QUESTION,
        # A topic the question points back at is what it asks about.
        "The prod-iam workspace's Terraform state: where is it stored?",
        "nightly backup failing on dbhost - why?",
        # "explain" asks for no wh-clause here: it is the question's own verb.
        "Explain the retry policy of the billing queue",
        # Nothing would be left.
        "hey",
        "thanks!",
        # A lead-in that asks a question of its own.
        "why did it fail, and what fixed it?",
        # A lead-in that says what the question is about narrows it: read without it, "on the
        # webserver, why did the deploy fail?" would be "why did the deploy fail?".
        "on the webserver, why did the deploy fail?",
        "About the webserver: what caused the outage on June 12?",
        "in the production account, how many hosted zones do we have?",
        "for the billing service: who owns the on-call rotation?",
        "for exp-311, the one-page checkout experiment, what was the conversion lift?",
        "during the spot interruption on August 2, which jobs were lost?",
    ],
)
def test_a_question_with_no_frame_around_it_is_read_as_typed(text: str) -> None:
    assert bare_question(text) == text
