"""A turn read in the stored question's words before the second look scores it: its misspelt
words, and the repositories it names without their owner.

The strict test forgives one slip only where no slip could make another word: words of five
letters or more, first and last letters kept, no letter dropped below seven ("cahce" is
"cache"; "ofen", "budgt", "tickts" and "trigerred" are not forgiven). That care keeps two
names apart, and it is right for a test no threshold stands behind. The second look is
calibrated, so it may read more: a turn word that is no English word and no name of the
store, a slip or two from a common word the stored question has and the turn lacks, is read as
that word ("how many p1 tickts breached the sla last weeek" against "How many P1 tickets
breached the SLA last week?"). The slots, the alignment and the pair model then read the turn
as it was meant, and whatever they score is held to the budget's threshold like any other pair.

A word typed in capitals ("SLO", "AMI") is an acronym, not a slip, and a word of the store's
own questions is a name there (query_first.store_names); neither is respelt.

People often name a repository without its owner ("in helpdesk-sync" for "in lumen/helpdesk-sync"),
and the strict test reads the missing owner as a missing word. A turn that
names the stored question's repository alone, and no owner, is read with that owner, unless
another candidate the second look reads names the same repository under another owner (then
the turn does not say which it means). The lookup also asks the store which owners it gives
such a name (query_first.ambiguous_repositories), and the second look refuses a question about
a repository the store holds under two owners when the turn names neither. A repository whose
name is a common word ("core", "experiments") is not read this way: the word may mean what it
says.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache

from .spelling import is_common_word, misspells
from .words import words

#: A word as typed, letters only, not a part of an identifier ("event-bus", "acme/api").
_PLAIN_WORD = re.compile(r"(?<![\w./@#-])[^\W\d_]+(?![\w./@#-]|'\w)")
#: A repository with its owner, "lumen/helpdesk-sync": the owner starts with a letter, the
#: name ends in a letter or digit ("lumen/ml-train's" is lumen/ml-train).
_OWNED = re.compile(
    r"(?<![\w./@-])([A-Za-z][\w.-]*)/([A-Za-z0-9](?:[\w.-]*[A-Za-z0-9])?)(?![\w/@-])"
)


@lru_cache(maxsize=4_096)
def owned_repositories(text: str) -> tuple[tuple[str, str], ...]:
    """The repositories a text names with their owner, as (name, owner) in lower case, leaving
    out names that are common words ("orbit/core"). Cached: a turn's lookup reads each of its
    candidates' (query_first.ambiguous_repositories), and the second look reads the nearest ones'
    twice more, for shared_names and for the reading."""
    if "/" not in text:
        return ()  # most questions: no need for the expression
    return tuple(
        (name.lower(), owner.lower())
        for owner, name in _OWNED.findall(text)
        if not (name.isalpha() and is_common_word(name.lower()))
    )


def repository_owners(texts: Sequence[str]) -> dict[str, set[str]]:
    """Each repository name these texts give an owner, with the owners they give it."""
    owners: dict[str, set[str]] = {}
    for text in texts:
        for name, owner in owned_repositories(text):
            owners.setdefault(name, set()).add(owner)
    return owners


def shared_names(texts: Sequence[str]) -> frozenset[str]:
    """The repository names that these texts give two or more owners."""
    return frozenset(name for name, found in repository_owners(texts).items() if len(found) > 1)


@lru_cache(maxsize=4_096)
def respelled(
    asked: str,
    stored: str,
    names: frozenset[str] = frozenset(),
    shared_names: frozenset[str] = frozenset(),
) -> str:
    """`asked` read in `stored`'s words: each misspelt word replaced by the stored question's
    word it misspells, where exactly one of them fits, and each of its repositories named
    without an owner given the stored question's owner. `names` (folded keys) are the store's
    names, kept as typed; `shared_names` are repository names that the turn's other candidates
    give another owner, left as they are. Returns `asked` itself when nothing changes."""
    return _with_owners(_respelt(asked, stored, names), stored, shared_names)


def repositories_named_alone(asked: str, stored: Sequence[str]) -> frozenset[str]:
    """The repository names that some of the `stored` texts give with an owner and `asked`
    names without one ("helpdesk-sync" against "lumen/helpdesk-sync")."""
    return frozenset(
        name
        for text in stored
        for name, _owner in owned_repositories(text)
        if _named_alone(asked, name) is not None
    )


def _named_alone(asked: str, name: str) -> re.Match[str] | None:
    """Where `asked` names the repository `name` without an owner, if it does."""
    if f"/{name}" in asked.lower():
        return None
    alone = re.compile(rf"(?<![\w./@-]){re.escape(name)}(?![\w/@-])", re.IGNORECASE)
    return alone.search(asked)


def _with_owners(asked: str, stored: str, shared_names: frozenset[str]) -> str:
    owned = owned_repositories(stored)
    if not owned:
        return asked
    lowered = asked.lower()
    for name, owner in owned:
        if name in shared_names or f"{owner}/" in lowered:
            continue
        found = _named_alone(asked, name)
        if found is not None:
            asked = f"{asked[: found.start()]}{owner}/{asked[found.start() :]}"
    return asked


def _respelt(asked: str, stored: str, names: frozenset[str]) -> str:
    stored_words = [w for w in words(stored) if w.kind != "id"]
    asked_words = words(asked)
    asked_surfaces = {w.surface for w in asked_words}
    stored_surfaces = {w.surface for w in stored_words}
    wanted = [
        surface
        for surface in dict.fromkeys(w.surface for w in stored_words)
        if surface not in asked_surfaces and surface.isalpha() and is_common_word(surface)
    ]
    if not wanted:
        return asked
    changes: dict[str, str] = {}
    for word in asked_words:
        typed = word.surface
        if (
            word.kind != "word"
            or not typed.isalpha()
            or typed in stored_surfaces
            or word.key in names
            or is_common_word(typed)
        ):
            continue
        fits = [surface for surface in wanted if misspells(typed, surface)]
        if len(fits) == 1:
            changes[typed] = fits[0]
    if not changes:
        return asked

    def respell(match: re.Match[str]) -> str:
        typed = match[0]
        if len(typed) >= 2 and typed.isupper():
            return typed  # an acronym
        return changes.get(typed.lower(), typed)

    return _PLAIN_WORD.sub(respell, asked)
