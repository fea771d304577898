"""A writer for the read-your-writes test, run in a process of its own (no tests here).

`python claim_writer.py DB ROUNDS`: each round stores one claim and one kept answer in DB,
prints the claim's id once both are committed, and waits for a line on stdin before the next.
"""

from __future__ import annotations

import asyncio
import sys
from datetime import UTC, datetime

from staffstore.models import NewClaim, Receipt
from staffstore.store import StaffStore
from staffstore.store.sync_store import KeptAnswer, TurnRecord

OWNER = "alice"
NAMESPACE = "reads"
MOMENT = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


def question(n: int) -> str:
    return f"what does probe {n} report about widget {n * 7}"


def request_hash(n: int) -> str:
    return f"request-{n}"


def receipt(n: int) -> Receipt:
    return Receipt(
        id=f"rcpt_writer_{n}", owner=OWNER, outcome="miss", reason="no_candidate", status="ok",
        inference_avoided=False, inference_attempted=True, latency_ms=1.0, started_at=MOMENT,
        finished_at=MOMENT, question=question(n), answer=f"paid {n}",
    )  # fmt: skip


def kept(n: int) -> KeptAnswer:
    return KeptAnswer(
        owner=OWNER, namespace=NAMESPACE, request_hash=request_hash(n),
        receipt_id=f"rcpt_writer_{n}", model="m/1", answer=f"paid {n}", created_at=MOMENT,
    )  # fmt: skip


async def main(db: str, rounds: int) -> None:
    async with StaffStore.open(db) as store:
        for n in range(rounds):
            claim = await store.ensure_claim(
                NewClaim(owner=OWNER, question=question(n), answer=f"r{n}")
            )
            await store.record_turns([TurnRecord(receipt(n), kept=kept(n))])
            print(claim.id, flush=True)
            if not sys.stdin.readline():
                return  # the test has gone


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], int(sys.argv[2])))  # a path or a postgresql:// URL
