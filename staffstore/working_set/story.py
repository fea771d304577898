"""A session's story: what it is about and has decided, in a few hundred tokens, last wins.

One current story per session, replaced whole by each write, every version kept in the store
(story_tables.py). The client writes it (Python, `staffstore story set`, the proxy's
`staffstore.story` field), or staffstore writes one extractively from the session's messages:
their key sentences, the newest per subject (extract.py), so a revised decision replaces the
one it revised. It is derived context, never an answer: it goes into a miss's working set when
present, within the story's part of the budget, and never decides a hit.
"""

from __future__ import annotations

from datetime import datetime

from ..errors import InputError
from ..store import StaffStore
from ..store.rows import now_epoch
from ..store.story_tables import StoryRow
from .extract import frame, is_key, latest_by_subject, same_subject, sentences

#: The longest story, in characters (about 500 tokens at four characters a token).
MAX_STORY_CHARS = 2_000
STORY_HEADER = (
    "The session's story so far (what it is about and has decided; derived context, the "
    "latest version wins over older messages):"
)
#: How many of the session's latest messages an extractive story is read from.
EXTRACT_FROM = 400
#: An extractive story is first written once a session has more messages than its raw tail
#: holds (rungs.RungRules.raw_messages), then again every STORY_EVERY new messages.
RAW_FOR = 8
STORY_EVERY = 10
#: The newest messages an extractive story is read against (more than STORY_EVERY: whatever
#: came since it was written).
STALE_WINDOW = 2 * STORY_EVERY


async def write_story(
    store: StaffStore, owner: str, session: str, text: str, *, now: datetime | None = None
) -> StoryRow:
    """Replace the session's story with `text` (the client's), keeping the old one in its
    history; InputError when it is empty or over MAX_STORY_CHARS."""
    body = text.strip()
    if not body:
        raise InputError("a story must not be empty")
    if len(body) > MAX_STORY_CHARS:
        raise InputError(f"a story holds at most {MAX_STORY_CHARS} characters, not {len(body)}")
    session_id = await store.ensure_session(owner, session, now=now)
    return await store.put_story(session_id, body, "client", now_epoch(now))


async def extract_story(
    store: StaffStore, owner: str, session: str, *, now: datetime | None = None
) -> StoryRow | None:
    """Write the session's story from its messages (key sentences, newest per subject) and
    return it; None when the session has nothing key to say or the story would not change."""
    session_id = await store.ensure_session(owner, session, now=now)
    messages = await store.recent_messages(session_id, limit=EXTRACT_FROM)
    lines = latest_by_subject([(m.role, m.content) for m in messages], MAX_STORY_CHARS)
    body = "\n".join(f"- {line}" for line in lines)
    if not body:
        return None
    current = await store.story(session_id)
    if current is not None and current.body == body:
        return current
    return await store.put_story(session_id, body, "extractive", now_epoch(now))


async def refresh_story(
    store: StaffStore, owner: str, session: str, *, now: datetime | None = None
) -> StoryRow | None:
    """Rewrite the session's story extractively when it has faded messages to tell (more than
    RAW_FOR messages) and STORY_EVERY messages came since its last version; never over a
    story the client wrote, which stands until the client replaces it. Returns the new
    version, or None when none was written."""
    session_id = await store.ensure_session(owner, session, now=now)
    current, news = await store.story_and_news(session_id)
    if current is not None and current.source == "client":
        return None
    if news < (STORY_EVERY if current is not None else RAW_FOR + 1):
        return None
    row = await extract_story(store, owner, session, now=now)
    return row if row is not None and (current is None or row.version != current.version) else None


async def current_story(store: StaffStore, session_id: str) -> str:
    """The session's current story ("" when it has none).

    An extractive story is written every STORY_EVERY messages, so a value revised since may
    still stand in it: its lines that a message of the last STALE_WINDOW revised (another
    sentence on the same subject) are left out; the message itself is in the tail or a handle.
    A story the client wrote is its word and is sent as written."""
    row = await store.story(session_id)
    if row is None:
        return ""
    if row.source != "extractive":
        return row.body
    recent = await store.recent_messages(session_id, limit=STALE_WINDOW)
    newer = [(frame(s), s) for m in recent for s in sentences(m.content) if is_key(s)]
    kept = []
    for line in row.body.splitlines():
        said = line.removeprefix("- ")
        mine = frame(said)
        if not any(same_subject(mine, theirs) and said != s for theirs, s in newer):
            kept.append(line)
    return "\n".join(kept)


__all__ = [
    "MAX_STORY_CHARS",
    "STORY_EVERY",
    "STORY_HEADER",
    "current_story",
    "extract_story",
    "refresh_story",
    "write_story",
]
