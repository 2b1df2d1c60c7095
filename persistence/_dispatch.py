"""Which transaction function applies which write command (pure dispatch, no state).

What lives here: :func:`apply_command`, the one ``match`` from the write
commands of :mod:`persistence._messages` to the transaction functions of
:mod:`persistence._writes`, :mod:`persistence._upstream` and
:mod:`persistence._leases`. The persistence actor (:mod:`persistence._writer`)
calls it inside its group commit.
"""

from __future__ import annotations

from typing import Any

from persistence import _activity, _leases, _roles, _upstream, _writes
from persistence._messages import (
    Acknowledge,
    ClaimLink,
    ClaimWakes,
    Command,
    CommitScan,
    DeleteSession,
    HostWatchers,
    NoteActivity,
    NoteOwnText,
    RecordEvent,
    RegisterWatch,
    ReleaseLeases,
    ResetWatcher,
    SetRole,
    Unwatch,
    UpsertLink,
    UpsertSession,
)

__all__ = ["apply_command"]


def apply_command(conn: Any, command: Command, now: int, version: int, *,
                  host: str | None) -> Any:
    """Apply one write command on ``conn`` (inside an open write transaction).

    Args:
        conn: the write connection (APSW's, or the PostgreSQL adapter).
        command: the command (a :class:`~persistence._messages.Prune` is not
            one: the actor runs prunes on their own).
        now: the writer's clock, epoch ms.
        version: the command's commit-order stamp.
        host: this process's host id for leases (``None``: none).

    Returns:
        The command's outcome (see each transaction function).

    Raises:
        ValueError: an unknown command, or one the transaction refuses.
        DriverError, apsw.Error: the database failed.

    The writer's thread; blocks on the database.
    """
    match command:
        case RecordEvent():
            return _writes.record_event(conn, command, now, version, host=host)
        case RegisterWatch():
            return _writes.register_watch(conn, command, now, version)
        case Unwatch():
            return _writes.unwatch(conn, command)
        case SetRole():
            return _roles.set_role(conn, command, now)
        case Acknowledge():
            return _writes.acknowledge(conn, command, now, version, host=host)
        case UpsertSession():
            return _writes.upsert_session(conn, command, now)
        case ResetWatcher():
            _writes.reset_watcher(conn, command, now)
            return version
        case DeleteSession():
            return _writes.delete_session(conn, command, version)
        case UpsertLink():
            return _upstream.upsert_link(conn, command, now, version, host=host)
        case CommitScan():
            return _upstream.commit_scan(conn, command, now, version, host=host)
        case HostWatchers(host_id=host_id, watchers=watchers, expires_at=expires_at,
                          release=release):
            return _leases.set_hosts(conn, host_id, watchers, expires_at, release=release)
        case ClaimWakes(host_id=host_id, watchers=watchers, expires_at=expires_at):
            return _leases.claim_wakes(conn, host_id, now, expires_at, watchers)
        case ClaimLink(session_key=key, agent_id=agent, owner=owner,
                       expires_at=expires_at):
            return _leases.claim_link(conn, key, agent, owner, now, expires_at)
        case ReleaseLeases(host_id=host_id):
            return _leases.release_leases(conn, host_id)
        case NoteOwnText():
            return _upstream.note_own_text(conn, command, now)
        case NoteActivity():
            return _activity.note_activity(conn, command)
    raise ValueError(f"unknown command {type(command).__name__}")
