"""The same replays on SQLite and on PostgreSQL make the same decisions and the same ledgers.

Every replay of `replay all`, in full, is played on PostgreSQL databases (a fresh migrated
database for each store the replay names), and its spec and ledger, per-turn decisions
included, must be byte for byte the committed ones in ledgers/, which SQLite wrote: `make run
STRICT=--strict` (CI) checks that SQLite still writes them byte for byte, so the two backends
are compared without playing each replay twice here. The store's own tests run on both
backends too (the modules marked `both_backends`).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from staffstore.replays.runner import REPLAYS, run_replay
from staffstore.store.location import StoreAddress
from staffstore.testing.postgres import ThrowawayPostgres

pytestmark = pytest.mark.postgres

#: The ledgers SQLite wrote, as committed (`make report` writes them).
COMMITTED = Path(__file__).resolve().parents[1] / "ledgers"


@pytest.fixture
def postgres_stores(
    postgres_server: ThrowawayPostgres, postgres_template: str
) -> Iterator[list[str]]:
    """The databases a replay made, dropped after the test."""
    made: list[str] = []
    yield made
    for name in made:
        postgres_server.drop_database(name)


@pytest.mark.parametrize("name", sorted(REPLAYS))
async def test_a_replay_decides_the_same_on_both_backends(
    name: str,
    tmp_path: Path,
    postgres_server: ThrowawayPostgres,
    postgres_template: str,
    postgres_stores: list[str],
) -> None:
    def on_postgres(store_name: str) -> StoreAddress:
        database = f"replay_{len(postgres_stores)}_{Path(store_name).stem}".replace("-", "_")
        postgres_stores.append(database)
        return postgres_server.create_database(database, template=postgres_template)

    await run_replay(name, tmp_path, store_for=on_postgres)
    assert postgres_stores, "the replay kept no store on PostgreSQL"
    for document in (f"{name}-spec.json", f"{name}-ledger.json"):
        played = (tmp_path / document).read_text(encoding="utf-8")
        assert played == (COMMITTED / document).read_text(encoding="utf-8"), document
