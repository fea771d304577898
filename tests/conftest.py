"""Shared fixtures: a real store in a SQLite file under tmp_path, and a way to put claims in it."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from staffstore.models import Claim, NewClaim
from staffstore.store import StaffStore

#: put(question, answer, **fields) stores a claim (owner "alice" unless given) and returns it.
PutClaim = Callable[..., Awaitable[Claim]]


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "s.db"


@pytest.fixture
async def store(db_path: Path) -> AsyncIterator[StaffStore]:
    async with StaffStore.open(db_path) as opened:
        yield opened


@pytest.fixture
def put(store: StaffStore) -> PutClaim:
    async def put(question: str, answer: str, **fields: Any) -> Claim:
        fields.setdefault("owner", "alice")
        return await store.ensure_claim(NewClaim(question=question, answer=answer, **fields))

    return put
