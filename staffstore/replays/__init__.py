"""Deterministic offline replays: scripted turns through the real gate, mouth and store.

Each replay plays hand-written turns with gold labels through ensure_mouth against a
StaffStore on a temporary SQLite file, with a local deterministic model in place of the
network, and writes what was asked (`<name>-spec.json`) and what happened (`<name>-ledger.json`).
Owns the replays, the pair evaluations (pairs.py) and the report and charts drawn from their
ledgers, and the live chart drawn from a store's ledger (live_chart.py); their data is read
from the top-level replays/ folder (data.py). May import the library (store, gate, text,
working_set, mouth, models, errors); never proxy or cli.
"""

from .runner import REPLAYS, ReplayFn, run_all, run_replay

__all__ = ["REPLAYS", "ReplayFn", "run_all", "run_replay"]
