"""Warm-up: a session opened again (after a restart, or by another replica) reads as a
continuation, not as amnesia.

Nothing of a session lives only in memory: its raw messages, its story and its vault are in the
store, so the next miss's working set is built from them whoever builds it. What warm-up adds is
doing the slow part before that miss (an extractive story written for a session that has faded
messages and no current story), and saying what the next miss will carry (the story, the raw
tail, the handles).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from ..models import Message
from ..store import StaffStore
from .build import DEFAULT_TAIL
from .extract import settled_by
from .rungs import Handle, handles
from .story import current_story, refresh_story


@dataclass(frozen=True)
class WarmUp:
    """What a session brings back: its story ("" when none), raw tail and faded handles."""

    story: str
    tail: list[Message]
    handles: list[Handle]


async def warm_up_session(
    store: StaffStore,
    owner: str,
    session: str,
    *,
    tail: int = DEFAULT_TAIL,
    now: datetime | None = None,
) -> WarmUp:
    """Bring a session back: refresh its extractive story, and return what the next miss's
    working set will carry of it."""
    session_id = await store.ensure_session(owner, session, now=now)
    await refresh_story(store, owner, session, now=now)
    recent = await store.recent_messages(session_id, limit=tail)
    settled = settled_by([m.content for m in recent])
    faded = await handles(store, session_id, after_tail=len(recent), settled=settled)
    return WarmUp(await current_story(store, session_id), recent, faded)


__all__ = ["WarmUp", "warm_up_session"]
