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

from persistence.lazylog import lazy_export

TYPE_CHECKING = False  # typing is not loaded at run time: ssa hook's start-up (issue 33)
if TYPE_CHECKING:
    from typing import Any

    from persistence._activity import read_activities, read_activity
    from persistence._backend import (
        Backend,
        Presence,
        WakeSignal,
        is_postgres_url,
        is_url,
        open_backend,
        redact_url,
        url_has_password,
        url_problem,
        write_transaction,
    )
    from persistence._leases import clear_all_leases, link_lease
    from persistence._lock import PresenceLock
    from persistence._messages import (
        Acknowledge,
        AckOutcome,
        ActivityState,
        ClaimLink,
        ClaimWakes,
        Command,
        CommitScan,
        DeleteOutcome,
        DeleteSession,
        HostWatchers,
        LinkOutcome,
        NoteActivity,
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
        SetRole,
        SweepOutcome,
        Unwatch,
        UpsertLink,
        UpsertSession,
    )
    from persistence._pool import ReadPool
    from persistence._reads import (
        EntryRow,
        has_waking_notice,
        list_session_times,
        list_sessions,
        pending_cursors,
        read_changes,
        read_entry,
        read_version,
        read_versions,
        text_faults,
    )
    from persistence._reply import Reply
    from persistence._schema import (
        APPLICATION_ID,
        SCHEMA_VERSION,
        check_integrity,
        open_connection,
        prepare_path,
    )
    from persistence._secret import keyed_hash, read_secret
    from persistence._submit import collect, send_many, submit, submit_many
    from persistence._upstream import (
        list_links,
        list_watched_links,
        read_adoption_notes,
        read_link,
        read_own_texts,
    )
    from persistence._writer import PersistenceActor, Ping, after_acknowledgement, is_epoch_ms
    from persistence._writes import sweep_cursors
    from persistence.errors import DatabaseBusy, SchemaError, StorageError, StorageUnavailable
    from persistence.records import (
        SessionRow,
        SessionStateEvent,
        SessionStatus,
        StateChanges,
        TypedRead,
        UpstreamLink,
        WorkerActivity,
    )

_EXPORTS: dict[str, str] = {
    "APPLICATION_ID": "persistence._schema",
    "Command": "persistence._messages",
    "Presence": "persistence._backend",
    "Reply": "persistence._reply",
    "WakeSignal": "persistence._backend",
    "check_integrity": "persistence._schema",
    "clear_all_leases": "persistence._leases",
    "has_waking_notice": "persistence._reads",
    "is_epoch_ms": "persistence._writer",
    "after_acknowledgement": "persistence._writer",
    "is_url": "persistence._backend",
    "keyed_hash": "persistence._secret",
    "link_lease": "persistence._leases",
    "read_secret": "persistence._secret",
    "sweep_cursors": "persistence._writes",
    "url_has_password": "persistence._backend",
    "redact_url": "persistence._backend",
    "url_problem": "persistence._backend",
    "write_transaction": "persistence._transaction",
    "AckOutcome": "persistence._messages",
    "Acknowledge": "persistence._messages",
    "Backend": "persistence._backend",
    "ClaimLink": "persistence._messages",
    "ClaimWakes": "persistence._messages",
    "CommitScan": "persistence._messages",
    "DatabaseBusy": "persistence.errors",
    "DeleteOutcome": "persistence._messages",
    "DeleteSession": "persistence._messages",
    "EntryRow": "persistence._reads",
    "HostWatchers": "persistence._messages",
    "LinkOutcome": "persistence._messages",
    "NoteActivity": "persistence._messages",
    "ActivityState": "persistence._messages",
    "NoteOwnText": "persistence._messages",
    "read_activity": "persistence._activity",
    "read_activities": "persistence._activity",
    "WorkerActivity": "persistence.records",
    "NoticeDescriptor": "persistence._messages",
    "PersistenceActor": "persistence._writer",
    "Ping": "persistence._writer",
    "PresenceLock": "persistence._lock",
    "Prune": "persistence._messages",
    "ReadPool": "persistence._pool",
    "RecordEvent": "persistence._messages",
    "RecordOutcome": "persistence._messages",
    "RegisterOutcome": "persistence._messages",
    "RegisterWatch": "persistence._messages",
    "Unwatch": "persistence._messages",
    "SetRole": "persistence._messages",
    "ReleaseLeases": "persistence._messages",
    "ResetWatcher": "persistence._messages",
    "SCHEMA_VERSION": "persistence._schema",
    "ScanOutcome": "persistence._messages",
    "SchemaError": "persistence.errors",
    "SessionRow": "persistence.records",
    "SessionStateEvent": "persistence.records",
    "SessionStatus": "persistence.records",
    "StateChanges": "persistence.records",
    "TypedRead": "persistence.records",
    "StorageError": "persistence.errors",
    "StorageUnavailable": "persistence.errors",
    "SweepOutcome": "persistence._messages",
    "UpsertLink": "persistence._messages",
    "UpsertSession": "persistence._messages",
    "UpstreamLink": "persistence.records",
    "collect": "persistence._submit",
    "is_postgres_url": "persistence._backend",
    "list_session_times": "persistence._reads",
    "list_sessions": "persistence._reads",
    "list_links": "persistence._upstream",
    "list_watched_links": "persistence._upstream",
    "open_backend": "persistence._backend",
    "open_connection": "persistence._schema",
    "pending_cursors": "persistence._reads",
    "prepare_path": "persistence._schema",
    "read_changes": "persistence._reads",
    "read_entry": "persistence._reads",
    "read_link": "persistence._upstream",
    "read_adoption_notes": "persistence._upstream",
    "read_own_texts": "persistence._upstream",
    "read_version": "persistence._reads",
    "read_versions": "persistence._reads",
    "text_faults": "persistence._reads",
    "send_many": "persistence._submit",
    "submit": "persistence._submit",
    "submit_many": "persistence._submit",
}
"""Where each public name lives: imported on first use (PEP 562), so a light
command such as ``ssa hook`` pays only for the modules it touches."""


def __getattr__(name: str) -> Any:
    """Import ``name`` from its module on first use (any thread; blocks on the import).

    Raises:
        AttributeError: ``name`` is not a public name of this package.
    """
    return lazy_export(__name__, _EXPORTS, globals(), name)


def __dir__() -> list[str]:
    """The public names (``__all__``) and the module's own attributes."""
    return sorted(set(globals()) | set(__all__))

__all__ = [
    "APPLICATION_ID",
    "SCHEMA_VERSION",
    "AckOutcome",
    "Acknowledge",
    "ActivityState",
    "Backend",
    "ClaimLink",
    "ClaimWakes",
    "Command",
    "CommitScan",
    "DatabaseBusy",
    "DeleteOutcome",
    "DeleteSession",
    "EntryRow",
    "HostWatchers",
    "LinkOutcome",
    "NoteActivity",
    "NoteOwnText",
    "NoticeDescriptor",
    "PersistenceActor",
    "Ping",
    "Presence",
    "PresenceLock",
    "Prune",
    "ReadPool",
    "RecordEvent",
    "RecordOutcome",
    "RegisterOutcome",
    "RegisterWatch",
    "ReleaseLeases",
    "Reply",
    "ResetWatcher",
    "ScanOutcome",
    "SchemaError",
    "SessionRow",
    "SessionStateEvent",
    "SessionStatus",
    "SetRole",
    "StateChanges",
    "StorageError",
    "StorageUnavailable",
    "SweepOutcome",
    "TypedRead",
    "Unwatch",
    "UpsertLink",
    "UpsertSession",
    "UpstreamLink",
    "WakeSignal",
    "WorkerActivity",
    "after_acknowledgement",
    "check_integrity",
    "clear_all_leases",
    "collect",
    "has_waking_notice",
    "is_epoch_ms",
    "is_postgres_url",
    "is_url",
    "keyed_hash",
    "link_lease",
    "list_links",
    "list_session_times",
    "list_sessions",
    "list_watched_links",
    "open_backend",
    "open_connection",
    "pending_cursors",
    "prepare_path",
    "read_activities",
    "read_activity",
    "read_adoption_notes",
    "read_changes",
    "read_entry",
    "read_link",
    "read_own_texts",
    "read_secret",
    "read_version",
    "read_versions",
    "redact_url",
    "send_many",
    "submit",
    "submit_many",
    "sweep_cursors",
    "text_faults",
    "url_has_password",
    "url_problem",
    "write_transaction",
]

