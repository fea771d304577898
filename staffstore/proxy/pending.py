"""Exact repeats paid once, across every replica sharing the store: a lease on a call in flight.

A request whose answer the proxy would keep, and that the store cannot answer yet, claims its
call before paying for it (SyncStore.claim_call, addressed as its kept answer will be: owner,
namespace, request hash). The winner pays upstream as any miss does, and lets go once its turn
is committed, kept answer and all, or once its call has failed (Proxy._record). Every identical
request that loses the claim, in this process or in another replica, waits instead of paying:
it polls the store until the kept answer is there and serves it as an exact repeat (a hit, with
a receipt that names no call), or until the lease is gone or has run out without one (the call
failed, its answer was not one to keep, its replica died), and then claims the call itself.

A lease lasts the upstream timeout and a margin, so a replica that dies holding one holds up
its waiters that long at most. A call that outlasts its lease (retries after a Retry-After, a
stream longer than the timeout) lets the next waiter pay again: a second payment, never a
wrong or a lost answer. Requests that would keep nothing (no-store, several choices) and
requests that skip the store (no-cache) never take part.
"""

from __future__ import annotations

import asyncio
from contextlib import suppress
from dataclasses import dataclass
from typing import Literal

from ..errors import StoreBusyError, StoreError
from ..gate.relative_time import same_period
from ..models import utcnow
from ..store import StaffStore
from ..store.sync_store import KeptAnswer, SyncStore
from .wire import ChatRequest

#: Seconds a lease outlives the upstream timeout: time to read, record and keep the answer.
LEASE_MARGIN = 10.0
#: How long a claim or a release waits for another process's write lock (SQLite's): a store
#: that busy costs the request its lease, not a wait that every query queues behind.
LEASE_LOCK_WAIT = 0.05
#: A waiting request looks for the answer after POLL_FIRST seconds, then less often, up to
#: every POLL_MAX: soon enough for a fast model, few reads while a slow one answers.
POLL_FIRST = 0.025
POLL_MAX = 0.1
POLL_GROWTH = 1.5

#: Where a request stands on its call: it holds the lease and pays ("holding"); another
#: request holds it, so it waits ("waiting"); or the store was too busy to take a claim, and
#: it pays without a lease, as every request did before leases ("unleased").
Standing = Literal["holding", "waiting", "unleased"]


@dataclass(frozen=True)
class CallLease:
    """A request's claim on paying for its call: the kept answer's address, who claims it
    (the request's receipt id: unique across replicas), and for how long."""

    owner: str
    namespace: str
    request_hash: str
    holder: str
    ttl: float


def takes_part(chat: ChatRequest) -> bool:
    """Whether the answer to `chat` would be kept, so that an identical request can wait for it
    (whether it is, the answer decides: only a whole text answer is kept)."""
    controls = chat.controls
    n = chat.body.get("n")
    return not (controls.no_cache or controls.no_store) and (not isinstance(n, int) or n <= 1)


def kept_answer_for(store: SyncStore, owner: str, chat: ChatRequest) -> KeptAnswer | None:
    """The kept answer an exact repeat of `chat` is served (on a thread of the store's)."""
    controls = chat.controls
    kept = store.kept_answer(owner, controls.namespace, chat.request_hash, max_age=controls.max_age)
    if kept is not None and not same_period(chat.turn or "", kept.created_at, utcnow()):
        return None  # "what failed today?" kept yesterday answers another day's question
    return kept


def claim(
    store: SyncStore, lease: CallLease, chat: ChatRequest, lock_timeout: float
) -> KeptAnswer | Standing:
    """Claim the call (on the writer's thread, StaffStore.run_sync; `lock_timeout` is the
    store's, restored after); return the kept answer if one turns up, else where the request
    stands.

    Won, the claim looks for the kept answer once more: a holder that finished between this
    request's lookup and its claim kept its answer before it let go, so that answer is there
    to be served rather than paid for again.
    """
    store.set_lock_timeout(min(LEASE_LOCK_WAIT, lock_timeout))
    try:
        won = store.claim_call(
            lease.owner, lease.namespace, lease.request_hash, lease.holder, ttl=lease.ttl
        )
        kept = kept_answer_for(store, lease.owner, chat) if won else None
        if kept is not None:
            with suppress(StoreBusyError):  # else the lease runs out by itself
                store.release_call(lease.owner, lease.namespace, lease.request_hash, lease.holder)
            return kept
    except StoreBusyError:
        return "unleased"
    finally:
        store.set_lock_timeout(lock_timeout)
    return "holding" if won else "waiting"


def look(store: SyncStore, lease: CallLease, chat: ChatRequest) -> KeptAnswer | Standing | None:
    """One look of a waiting request (it only reads: StaffStore.run_read): the kept answer if
    it is there; else "waiting" while another holds the call; else None, the call is free."""
    kept = kept_answer_for(store, lease.owner, chat)
    if kept is not None:
        return kept
    if store.call_holder(lease.owner, lease.namespace, lease.request_hash) is not None:
        return "waiting"
    return None


async def wait_for_answer(
    store: StaffStore, lease: CallLease, chat: ChatRequest
) -> KeptAnswer | Standing:
    """Wait while another request holds the call: its kept answer once it is there, or where
    this request stands once the call is free and it has claimed it ("holding" or
    "unleased")."""
    pause = POLL_FIRST
    while True:
        await asyncio.sleep(pause)
        pause = min(pause * POLL_GROWTH, POLL_MAX)
        looked = await store.run_read(lambda sync: look(sync, lease, chat))
        if looked is not None:
            found = looked
        else:  # free: claim it (the claim looks for the kept answer again), or lose it again
            found = await store.run_sync(lambda sync: claim(sync, lease, chat, store.lock_timeout))
        if found != "waiting":
            return found


async def release(store: StaffStore, lease: CallLease) -> None:
    """Let the call go, so its waiters look for its answer now. A store that will not take
    the release (locked, unreachable) only delays them: the lease runs out by itself."""
    with suppress(StoreError):
        await store.release_call(
            lease.owner, lease.namespace, lease.request_hash, lease.holder,
            lock_wait=min(LEASE_LOCK_WAIT, store.lock_timeout),
        )  # fmt: skip
