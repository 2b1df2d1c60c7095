"""The signal log's transactions as plain functions over one connection (public).

These are what the persistence actor runs inside its group commit; they are
public so that benchmarks and tests can time and check them without threads.
Each takes a connection (APSW's, or the PostgreSQL adapter of the same shape)
inside an open write transaction, runs on the caller's thread and blocks on
the database. See each function's own docstring for arguments and errors.
"""

from __future__ import annotations

from persistence._prune import DAY_MS, PRUNE_BATCH, prune
from persistence._writes import (
    acknowledge,
    record_event,
    register_watch,
    sweep_cursors,
    upsert_session,
)

__all__ = [
    "DAY_MS",
    "PRUNE_BATCH",
    "acknowledge",
    "prune",
    "record_event",
    "register_watch",
    "sweep_cursors",
    "upsert_session",
]
