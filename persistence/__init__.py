"""The durable signal log: schema, transactions and the persistence actor.

Everything that touches the database lives here: SQLite through APSW (the
embedded default) or PostgreSQL through psycopg 3, behind one small backend
interface (:mod:`persistence._backend`). Writes go through one
:class:`PersistenceActor` (group commit); reads use a :class:`ReadPool`.
The transaction functions are plain functions over a connection (APSW's, or
PostgreSQL's adapter of the same shape) so they can be tested and
benchmarked without threads.
"""

from __future__ import annotations

import logging

from persistence._backend import Backend, is_postgres_url, open_backend
from persistence._lock import PresenceLock
from persistence._messages import (
    Acknowledge,
    AckOutcome,
    ClaimLink,
    ClaimWakes,
    CommitScan,
    DeleteOutcome,
    DeleteSession,
    HostWatchers,
    LinkOutcome,
    NoteOwnText,
    NoticeDescriptor,
    Prune,
    RecordEvent,
    RecordOutcome,
    RegisterOutcome,
    RegisterWatch,
    ReleaseLeases,
    ResetWatcher,
    ScanOutcome,
    SweepOutcome,
    UpsertLink,
    UpsertSession,
)
from persistence._pool import ReadPool
from persistence._reads import (
    EntryRow,
    list_sessions,
    pending_cursors,
    read_changes,
    read_entry,
    read_version,
    read_versions,
)
from persistence._schema import SCHEMA_VERSION, open_connection, prepare_path
from persistence._upstream import list_links, list_watched_links, read_link, read_own_hashes
from persistence._writer import (
    PersistenceActor,
    Ping,
    collect,
    send_many,
    submit,
    submit_many,
)
from persistence.errors import DatabaseBusy, SchemaError, StorageError, StorageUnavailable
from persistence.records import (
    SessionRow,
    SessionStateEvent,
    SessionStatus,
    StateChanges,
    UpstreamLink,
)

__all__ = [
    "SCHEMA_VERSION",
    "AckOutcome",
    "Acknowledge",
    "Backend",
    "ClaimLink",
    "ClaimWakes",
    "CommitScan",
    "DatabaseBusy",
    "DeleteOutcome",
    "DeleteSession",
    "EntryRow",
    "HostWatchers",
    "LinkOutcome",
    "NoteOwnText",
    "NoticeDescriptor",
    "PersistenceActor",
    "Ping",
    "PresenceLock",
    "Prune",
    "ReadPool",
    "RecordEvent",
    "RecordOutcome",
    "RegisterOutcome",
    "RegisterWatch",
    "ReleaseLeases",
    "ResetWatcher",
    "ScanOutcome",
    "SchemaError",
    "SessionRow",
    "SessionStateEvent",
    "SessionStatus",
    "StateChanges",
    "StorageError",
    "StorageUnavailable",
    "SweepOutcome",
    "UpsertLink",
    "UpsertSession",
    "UpstreamLink",
    "collect",
    "is_postgres_url",
    "list_links",
    "list_sessions",
    "list_watched_links",
    "open_backend",
    "open_connection",
    "pending_cursors",
    "prepare_path",
    "read_changes",
    "read_entry",
    "read_link",
    "read_own_hashes",
    "read_version",
    "read_versions",
    "send_many",
    "submit",
    "submit_many",
]

logging.getLogger(__name__).addHandler(logging.NullHandler())
