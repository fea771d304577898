"""The store: claims, receipts, sessions, kept answers and state, in one SQLite file (the
embedded default) or one PostgreSQL database shared by several replicas.

Owns StaffStore (async, async_store.py), SyncStore (its operations, written once for both
backends, sync_store.py), the interface each backend implements (database.py: SQLite's;
postgres.py and sqlite_engine.py: the connections), the claims' full-text lookups alike on both
(search.py, fts_tokens.py), what --db names (location.py), job records (jobs.py), the numbered
migrations, row conversion, the WAL checkpointer, claims import and promotion, deletes by age
or id (retention.py), and the tables and transactions of working state and agent state
(state_tables.py), of scoped state and workflow memory (memory_tables.py), of a session's
story and vault (story_tables.py, vault_tables.py); bringing a store's schema up to date
(schema.py) and copying a whole store between SQLite and PostgreSQL (copy.py).
May import models, errors, identity and text (the search key is text.matching's);
never the gate, working_set, mouth, upstream, proxy, cli or replays: they build on the store.
"""

from .async_store import StaffStore
from .sync_store import SyncStore

__all__ = ["StaffStore", "SyncStore"]
