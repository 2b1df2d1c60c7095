"""The durable signal log: schema, transactions and the persistence actor.

Everything that touches SQLite lives here. Writes go through one
:class:`PersistenceActor` (group commit); reads use a :class:`ReadPool`.
The transaction functions are plain functions over an APSW connection so
they can be tested and benchmarked without threads.
"""

from __future__ import annotations

import logging

from persistence._messages import (
    Acknowledge,
    AckOutcome,
    DeleteOutcome,
    DeleteSession,
    NoticeDescriptor,
    Prune,
    RecordEvent,
    RecordOutcome,
    RegisterOutcome,
    RegisterWatch,
    ResetWatcher,
    Sweep,
    SweepOutcome,
    UpsertSession,
)
from persistence._pool import ReadPool
from persistence._reads import (
    EntryRow,
    list_sessions,
    read_changes,
    read_entry,
    read_version,
    read_versions,
)
from persistence._schema import SCHEMA_VERSION, open_connection, prepare_path
from persistence._writer import PersistenceActor, Ping, submit
from persistence.errors import SchemaError, StorageError, StorageUnavailable
from persistence.records import SessionRow, SessionStateEvent, SessionStatus, StateChanges

__all__ = [
    "SCHEMA_VERSION",
    "AckOutcome",
    "Acknowledge",
    "DeleteOutcome",
    "DeleteSession",
    "EntryRow",
    "NoticeDescriptor",
    "PersistenceActor",
    "Ping",
    "Prune",
    "ReadPool",
    "RecordEvent",
    "RecordOutcome",
    "RegisterOutcome",
    "RegisterWatch",
    "ResetWatcher",
    "SchemaError",
    "SessionRow",
    "SessionStateEvent",
    "SessionStatus",
    "StateChanges",
    "StorageError",
    "StorageUnavailable",
    "Sweep",
    "SweepOutcome",
    "UpsertSession",
    "list_sessions",
    "open_connection",
    "prepare_path",
    "read_changes",
    "read_entry",
    "read_version",
    "read_versions",
    "submit",
]

logging.getLogger(__name__).addHandler(logging.NullHandler())
